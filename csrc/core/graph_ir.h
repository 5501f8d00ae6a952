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
  kOther,     // any other call (Python arithmetic on sizes, higher-order ops): reads its operands
  // auto_functionalized_v2: clones each base in its slots, runs a mutable op
  // on the clones, returns (*op outputs, *new bases). A base it need not clone
  // is a write slot (see WriteSlot). auto_functionalized (v1) likewise, with
  // the op's written tensor arguments (views included) in place of bases.
  kAutoFunctionalized,
  // A `_foreach_*` op with a `_foreach_*_` form: one write slot per element of
  // its first list (result k into self[k]); the in-place form writes every
  // element, so the planner takes all the slots or none.
  kForeach,
  // Functionalization's write-back into a graph input: copy_(input, value),
  // or resize_ / as_strided_ of the input ahead of that copy_.
  kWriteBack,
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
  // A code per dtype (equal codes, equal dtypes), with the bits of a view
  // that changes values as it reads them: conj() and _neg_view.
  int32_t dtype = -1;
};

constexpr int32_t kConjBit = 1 << 16;
constexpr int32_t kNegBit = 1 << 17;
// A conj() or _neg_view view: a result written into it would read back
// conjugated or negated, and hand its users the bit (view(dtype) and
// view_as_real raise on it, _foreach_*_ refuses it): never a write target.
inline bool flips_values(int32_t dtype) { return dtype >= 0 && (dtype & (kConjBit | kNegBit)) != 0; }

// How an ATen op's result gets into a slot's target.
//   kSelf:    foo(a, b)          -> foo_(a, b)          (the target is `self`)
//   kSwapped: foo(a, b)          -> foo_(b, a)          (commutative foo, the target is `b`)
//   kOut:     foo(a, b)          -> foo.out(a, b, out=target)  (elementwise foo, any operand)
enum class Destination : uint8_t { kSelf, kSwapped, kOut };

// A buffer a node may write one of its results into instead of allocating it:
// `self` for an op with a `foo_` overload (or a scatter), each base of an
// auto_functionalized_v2 node (each written tensor argument of a v1 node), each
// element of a `_foreach_*` op's first list.
// The planner decides each slot on its own (a `_foreach_*` op: all or none).
struct WriteSlot {
  NodeId target = kNoNode;  // the tensor that would be written
  int32_t result = 0;       // index into the node's results of the value that would live there
  // The position of that value in the node's (tuple) value, as getitem names
  // it; differs from `result` when the tuple holds non-tensors (None).
  int32_t item = 0;
  // The node already writes `target` (an auto_functionalized_v2 base that is
  // not cloned, as another pass left it): decided, and a write to reckon with.
  bool already_in_place = false;
  // ATen ops: slot 0 is `self` (kSelf); further slots are other operands the
  // result may go into (PlanOptions::dead_operand_destinations), in order.
  Destination via = Destination::kSelf;
  // A kSelf slot past slot 0: the `_to_copy` that converts the op's result to
  // self's dtype, its only user. The in-place form stores its result converted
  // to self's dtype, which is that cast's value, so the cast goes:
  //   c = ge(a, b)                        ge_(a, b)
  //   y = _to_copy(c, dtype=a.dtype)  ->  # removed; users of y read a
  // (what functionalization records for `a.ge_(b)`; seed 000). The value that
  // lives in `target` is the cast's: its users read the target.
  NodeId cast = kNoNode;
};

struct Node {
  NodeKind kind = NodeKind::kOther;
  std::string name;  // for explanations only
  // Operator facts (kOp only).
  ViewKind view = ViewKind::kNone;
  bool has_inplace = false;  // an `<name>_` overload with a matching schema exists
  bool pointwise = false;    // out[i] depends on in[i] only
  bool is_resize = false;
  // index_put / _unsafe_index_put: writes the rows an index names.
  bool indexed_write = false;
  // A functional collective (_c10d_functional.all_reduce, ...): the in-place
  // form hands its buffer to the communication library instead of a copy.
  bool collective = false;
  // What the compiler the graph goes to does with this node (only read under
  // PlanOptions::inductor; the Python side reads them from Inductor's tables).
  // compiler_extern: it calls a library kernel for the op (a fallback) rather
  // than generating and fusing its code, so an in-place form loses no fusion.
  // realized: the value lives in a buffer of its own anyway (a fallback's
  // result, a graph input or output, an input of an op that needs one).
  // compiler_lacks_inplace: the compiler generates code for the op but has no
  // lowering for its in-place form, which would run as a library kernel.
  // compiler_opaque: it runs the node as a library kernel because of its
  // tensors' types (complex: Inductor generates no code for them); a view so
  // run is a tensor of its own to Inductor's scheduler, which then does not
  // order a write through it as a write of its base.
  bool compiler_extern = false;
  bool realized = false;
  bool compiler_lacks_inplace = false;
  bool compiler_opaque = false;
  // False for ops that read only a tensor's metadata (sym_size, ...): they use
  // no memory, so they never keep a buffer alive.
  bool reads_memory = true;
  // Fresh memory laid out exactly as `self`, storage offset included (the
  // `*_scatter` ops, the functional copy): a move of self moves it too.
  bool keeps_self_geometry = false;
  // How much a view (or as_strided_scatter, for its base) depends on its
  // input's memory layout rather than its logical elements. Re-inplacing
  // moves a result into `self`'s layout, which such users would notice.
  LayoutUse layout_use = LayoutUse::kLogical;
  // The tensor whose memory this node's result views (views, getitems of
  // multi-output views, _unsafe_view) or addresses (as_strided_scatter).
  NodeId layout_parent = kNoNode;
  // Operands whose memory the node addresses by storage offset and strides,
  // not by logical element: an auto_functionalized_v2 base with an as_strided
  // view encoding (_x_size, _x_stride, _x_storage_offset, fixed when traced).
  // Moving such an operand into another layout would move the view's elements.
  std::vector<NodeId> absolute_layout_reads;
  ScatterSpec scatter;  // kind != kNone for a view-inverting *_scatter op
  NodeId self = kNoNode;
  NodeId scatter_src = kNoNode;
  NodeId view_of = kNoNode;  // base of a view (for getitem: base of the multi-view)
  // kGetItem: the node whose value this indexes, and the index.
  NodeId item_of = kNoNode;
  int32_t item_index = -1;
  // kWriteBack: the graph input written back (the placeholder itself; `self`
  // is the written tensor, which is a resize_/as_strided_ write-back of it
  // when the program changed its shape), and for copy_ the value copied in.
  NodeId written_input = kNoNode;
  NodeId written_value = kNoNode;
  std::vector<WriteSlot> slots;
  std::vector<NodeId> operands;  // every node the args and kwargs name, in order
  // kForeach: for each operand, the list position it is passed at (element k
  // of the op reads the operands at k), or -1 for one every element reads;
  // empty when unknown (every operand then counts for every element).
  std::vector<int32_t> operand_elements;
  std::vector<TensorValue> results;  // tensor leaves of the node's value
  // Memory facts of a node with one tensor result (read by the memory walk
  // only, memory_plan.h): a code per device (equal codes, one device), the
  // result's size in bytes (a hint for symbolic sizes: it feeds the peak
  // model only), and whether the op has an out= kernel of its own for that
  // device (not a generated one that computes and copies).
  int32_t device = -1;
  Int result_bytes = 0;
  bool out_kernel = false;
  // The result's byte count: known, or a symbol naming it (symbolic sizes:
  // equal only as the same expression, never by hint; the walk compares byte
  // counts of one dtype only), and whether the frontend can write its sizes
  // and strides in the graph (`as_strided(d, sizes, strides, 0)`), so that a
  // dense result may take a dead buffer of that byte count in another layout.
  Extent byte_size = 0;
  bool restridable = false;
  // kInput: a donated buffer (AOTAutograd's backward input that no forward
  // input, user output or other input shares): it may be reused once dead.
  bool donated = false;
  // Returned only where the compiled program keeps it to itself (a forward's
  // saved activation, a backward's gradient), never to the caller's code: it
  // may leave the graph as a view of another buffer (the memory walk's
  // restriding; AOTAutograd detaches saved views, autograd takes gradients
  // whatever their base). Read by the memory walk only.
  bool internal_output = false;
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
  // The result at `index`, or nullptr.
  const TensorValue* result(NodeId id, int32_t index) const;
  // The graph was traced with symbolic shapes (make_fx(tracing_mode="symbolic"),
  // a dynamic-shape compile), even where every extent it records is a number
  // (a guard fixed the symbol): its recorded strides of size-1 dims need not
  // be the ones eager computes (see Walk::layout_change_is_visible).
  void set_traced_symbolically(bool traced) { traced_symbolically_ = traced; }
  bool traced_symbolically() const { return traced_symbolically_; }

 private:
  std::vector<Node> nodes_;
  GeometryTable geoms_;
  GeometryTable shapes_;
  int32_t num_storages_ = 0;
  bool traced_symbolically_ = false;
};

}  // namespace fxinplace::core
