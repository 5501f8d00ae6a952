// A compact, torch-free picture of a functional FX graph: just what alias and
// liveness reasoning needs. Nodes are numbered in graph order; each tensor a
// node produces is a `TensorValue` naming its storage and geometry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "geometry.h"

namespace fxinplace::core {

using NodeId = int32_t;
using StorageId = int32_t;
constexpr NodeId kNoNode = -1;

enum class NodeKind : uint8_t {
  kInput,     // placeholder: memory the caller owns
  kConstant,  // get_attr: module parameters and buffers, read-only to us
  kOp,        // call_function on an ATen-style operator overload
  kGetItem,   // operator.getitem on a multi-output node
  kOther,     // any other call (e.g. Python arithmetic on sizes)
  kOutput,
};

enum class ViewKind : uint8_t { kNone, kSingle, kMulti };

enum class LayoutUse : uint8_t {
  kLogical,   // select, slice, permute, ...: any strides, same elements
  kReshape,   // view, _unsafe_view: same elements if the new layout allows the reshape
  kStrides,   // view_as_real, view.dtype, ...: assumed to depend on the strides
  kAbsolute,  // as_strided, as_strided_scatter: address storage offsets directly
};

struct TensorValue {
  StorageId storage = -1;
  GeomId geom = kNoGeom;
  int32_t shape = -1;  // interned sizes: equal ids mean equal shapes
  int32_t dtype = -1;
};

struct Node {
  NodeKind kind = NodeKind::kOther;
  std::string name;  // for explanations only
  // Operator facts (kOp only).
  ViewKind view = ViewKind::kNone;
  bool self_is_tensor = false;  // first schema argument has type `Tensor`
  bool has_inplace = false;     // an `<name>_` overload with a matching schema exists
  bool pointwise = false;       // tagged pointwise: out[i] depends on in[i] only
  bool is_resize = false;
  // How much a view (or as_strided_scatter, for its base) depends on its
  // input's memory layout rather than its logical elements. Re-inplacing
  // moves a result into `self`'s layout, which such users would notice.
  LayoutUse layout_use = LayoutUse::kLogical;
  // The tensor whose memory this node's result views (views, getitems of
  // multi-output views, _unsafe_view) or addresses (as_strided_scatter).
  NodeId layout_parent = kNoNode;
  ScatterSpec scatter;  // kind != kNone for a view-inverting *_scatter op
  NodeId self = kNoNode;
  NodeId scatter_src = kNoNode;
  NodeId view_of = kNoNode;          // base of a view (for getitem: base of the multi-view)
  std::vector<NodeId> operands;      // every node the args and kwargs name, in order
  std::vector<TensorValue> results;  // tensor leaves of the node's value
};

class Graph {
 public:
  NodeId add(Node node);
  // Registers the storage ids used by inputs and constants; every other storage
  // is fresh memory the graph allocated itself.
  StorageId new_storage() { return num_storages_++; }
  GeomId geom(const Geometry& g) { return geoms_.intern(g); }
  int32_t shape(const std::vector<Extent>& sizes);

  size_t size() const { return nodes_.size(); }
  const Node& at(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  Node& at(NodeId id) { return nodes_[static_cast<size_t>(id)]; }
  int32_t num_storages() const { return num_storages_; }
  const GeometryTable& geometries() const { return geoms_; }
  // One tensor result, or nullptr when the node has none or several.
  const TensorValue* single_result(NodeId id) const;

 private:
  std::vector<Node> nodes_;
  GeometryTable geoms_;
  GeometryTable shapes_;
  int32_t num_storages_ = 0;
};

}  // namespace fxinplace::core
