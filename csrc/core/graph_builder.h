// Assembles the planner's IR one node per call, in graph order: the one place
// that knows how a call of each kind becomes a `Node` (which operand is a
// view's base, which write slots an op offers, how a multi-output view's items
// view its input). The Python frontend reaches it through `_C.planner.GraphBuilder`
// (csrc/python/graph_builder.cpp, which only converts arguments); the C++
// tests build their graphs through it too.
//
// Errors: a reference to a node not yet added throws std::out_of_range ("no
// such node"); any other malformed call throws std::invalid_argument. Both
// name the problem; pybind11 turns them into IndexError and ValueError.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph_ir.h"
#include "reinplace_planner.h"

namespace fxinplace::core {

// One tensor a node produces. Storage ids are small non-negative ints the
// caller hands out in any order; the graph learns each when first named.
struct TensorRecord {
  StorageId storage = 0;
  Geometry geom;
  int32_t dtype = 0;
};

// sizes and strides of equal rank, or std::invalid_argument.
Geometry make_geometry(std::vector<Extent> sizes, std::vector<Extent> strides, Extent offset,
                       std::optional<std::vector<int32_t>> proven_dense_order = std::nullopt);

// What the planner asks of an operator overload (a frontend reads these from
// its schema; csrc/torch/op_facts.h for ATen).
struct OpTraits {
  ViewKind view = ViewKind::kNone;
  LayoutUse layout_use = LayoutUse::kLogical;
  ScatterKind scatter = ScatterKind::kNone;
  bool self_is_tensor = false;  // the first argument is exactly one tensor
  bool mutates = false;         // some argument is written
  bool has_inplace = false;
  bool pointwise = false;
  bool is_resize = false;
  bool indexed_write = false;
  bool collective = false;
  bool reads_memory = true;
  bool keeps_self_geometry = false;
};

// A `*_scatter` call: `args` when every view argument is known (ints, sizes,
// strides as in ScatterSpec), `view` when the frontend worked out the view's
// geometry on the recorded base.
struct ScatterCall {
  NodeId src = kNoNode;
  std::optional<ScatterSpec> args;
  std::optional<Geometry> view;
};

// One write slot of an auto_functionalized node: (target, index of its new
// value in results, its position in the node's value, already not cloned).
struct SlotRecord {
  NodeId target = kNoNode;
  int32_t result = 0;
  int32_t item = 0;
  bool in_place = false;
};

class GraphBuilder {
 public:
  using Results = std::vector<TensorRecord>;

  NodeId input(std::string name, const Results& results);
  NodeId constant(std::string name, const Results& results);
  // Any other call: reads its operands, returns fresh tensors.
  NodeId other(std::string name, std::vector<NodeId> operands, const Results& results);
  NodeId output(std::string name, std::vector<NodeId> operands);
  // An operator call. A non-view op whose first argument is one tensor offers
  // `self` as its first write slot, then each of `destinations` (another
  // operand its result may go into: SWAPPED or OUT), in order.
  NodeId op(std::string name, const OpTraits& traits, std::optional<NodeId> self,
            std::vector<NodeId> operands, const Results& results, const ScatterCall& scatter = {},
            const std::vector<std::pair<NodeId, Destination>>& destinations = {});
  // Node `cast` is `_to_copy(op, dtype=<op's self's dtype>)`, the only user of
  // op's result: op (with an in-place form) also offers `self` through the
  // cast (WriteSlot::cast), after its other slots.
  void cast_slot(NodeId op, NodeId cast);
  NodeId getitem(std::string name, NodeId source, int32_t index, const Results& results);
  // auto_functionalized_v2 (or v1); absolute_layout_reads: bases it views by
  // storage offset and strides (as_strided encodings).
  NodeId auto_functionalized(std::string name, std::vector<NodeId> operands, const Results& results,
                             const std::vector<SlotRecord>& slots,
                             std::vector<NodeId> absolute_layout_reads = {});
  // A _foreach_* op: result k may be written into self_list[k];
  // operand_elements: each operand's list position, -1 when every element
  // reads it (empty: unknown); keeps_self_geometry: result k is laid out as
  // self_list[k], storage offset included (_foreach_copy).
  NodeId foreach_op(std::string name, std::vector<NodeId> operands, const Results& results,
                    const std::vector<NodeId>& self_list, bool collective = false,
                    std::vector<int32_t> operand_elements = {}, bool keeps_self_geometry = false);
  // A write-back into a graph input: copy_(written, value), or resize_ /
  // as_strided_ of the input (no value).
  NodeId write_back(std::string name, NodeId written_input, NodeId written, std::optional<NodeId> value,
                    std::vector<NodeId> operands, const Results& results);
  // What the compiler does with node `id` (read under PlanOptions::inductor
  // only). Facts accumulate: a node may be described more than once.
  void compiler_facts(NodeId id, bool realized, bool extern_kernel, bool inplace_form,
                      bool lacks_inplace_lowering, bool opaque);
  // Memory facts of a node with one tensor result (read under
  // PlanOptions::plan_memory only): its device code, its result's bytes, and
  // whether the op has an out= kernel of its own on that device.
  void memory_facts(NodeId id, int32_t device, Int result_bytes, bool out_kernel, Extent byte_size = 0,
                    bool restridable = false);
  // Input `id` is a donated buffer: its memory may be reused once it is dead.
  void donated_input(NodeId id);
  // Node `id` is returned only as an internal output (Node::internal_output):
  // by AOTAutograd as a saved activation or gradient, to the compiled program
  // rather than the caller's code.
  void internal_output(NodeId id);
  // The graph was traced with symbolic shapes (see Graph::traced_symbolically).
  void traced_symbolically() { g_.set_traced_symbolically(true); }

  Plan plan(const PlanOptions& options = {}) const { return plan_reinplace(g_, options); }
  // The graph as text with the plan's decisions as `expect` lines (graph_text.h).
  std::string dump(const PlanOptions& options = {}) const;

  const Graph& graph() const { return g_; }
  // For tests that set a fact no call states (Node::realized, ...).
  Graph& graph() { return g_; }

 private:
  const Node& at(NodeId id) const;
  Node leaf(NodeKind kind, std::string name, const Results& results);
  NodeId slotted(NodeKind kind, std::string name, std::vector<NodeId> operands, const Results& results,
                 const std::vector<SlotRecord>& slots);

  Graph g_;
};

}  // namespace fxinplace::core
