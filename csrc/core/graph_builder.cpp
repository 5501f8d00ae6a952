#include "graph_builder.h"

#include <stdexcept>

#include "graph_text.h"

namespace fxinplace::core {

Geometry make_geometry(std::vector<Extent> sizes, std::vector<Extent> strides, Extent offset,
                       std::optional<std::vector<int32_t>> proven_dense_order) {
  if (sizes.size() != strides.size()) throw std::invalid_argument("sizes and strides differ in rank");
  Geometry g;
  g.sizes = std::move(sizes);
  g.strides = std::move(strides);
  g.offset = offset;
  g.proven_dense_order = std::move(proven_dense_order);
  return g;
}

NodeId GraphBuilder::input(std::string name, const Results& results) {
  return g_.add(leaf(NodeKind::kInput, std::move(name), results));
}

NodeId GraphBuilder::constant(std::string name, const Results& results) {
  return g_.add(leaf(NodeKind::kConstant, std::move(name), results));
}

NodeId GraphBuilder::other(std::string name, std::vector<NodeId> operands, const Results& results) {
  Node n = leaf(NodeKind::kOther, std::move(name), results);
  n.operands = std::move(operands);
  return g_.add(std::move(n));
}

NodeId GraphBuilder::output(std::string name, std::vector<NodeId> operands) {
  Node n = leaf(NodeKind::kOutput, std::move(name), {});
  n.operands = std::move(operands);
  return g_.add(std::move(n));
}

NodeId GraphBuilder::op(std::string name, const OpTraits& traits, std::optional<NodeId> self,
                        std::vector<NodeId> operands, const Results& results, const ScatterCall& scatter,
                        const std::vector<std::pair<NodeId, Destination>>& destinations) {
  Node n = leaf(NodeKind::kOp, std::move(name), results);
  n.view = traits.view;
  n.has_inplace = traits.has_inplace;
  n.pointwise = traits.pointwise;
  n.is_resize = traits.is_resize;
  n.indexed_write = traits.indexed_write;
  n.collective = traits.collective;
  n.reads_memory = traits.reads_memory;
  n.keeps_self_geometry = traits.keeps_self_geometry;
  n.layout_use = traits.layout_use;
  n.self = self ? *self : kNoNode;
  n.operands = std::move(operands);
  if (self) {
    if (traits.view == ViewKind::kSingle) n.view_of = *self;
    if (traits.view == ViewKind::kSingle || traits.layout_use != LayoutUse::kLogical) n.layout_parent = *self;
    // `self` passed twice (mul(a, a)) must be seen twice.
    if (traits.self_is_tensor && !traits.mutates && traits.view == ViewKind::kNone && !n.results.empty())
      n.slots.push_back(WriteSlot{*self, 0, 0, false});
  }
  // Other operands the result may go into: only after `self` (slot 0).
  for (const auto& [target, via] : destinations) {
    at(target);
    if (n.slots.empty()) break;  // no self to write first: none of the others either
    if (via == Destination::kSelf)
      throw std::invalid_argument("a destination other than self is SWAPPED or OUT");
    WriteSlot slot{target, 0, 0, false};
    slot.via = via;
    n.slots.push_back(slot);
  }
  n.scatter.kind = traits.scatter;
  if (traits.scatter != ScatterKind::kNone) {
    n.scatter_src = scatter.src;
    if (scatter.args) {
      n.scatter.ints = scatter.args->ints;
      n.scatter.sizes = scatter.args->sizes;
      n.scatter.strides = scatter.args->strides;
      n.scatter.replayable = true;
    }
    n.scatter.view_on_recorded_base = scatter.view;
  }
  return g_.add(std::move(n));
}

void GraphBuilder::cast_slot(NodeId op, NodeId cast) {
  at(op);
  const Node& c = at(cast);
  Node& n = g_.at(op);
  if (n.kind != NodeKind::kOp || n.slots.empty() || n.slots[0].via != Destination::kSelf || cast <= op ||
      c.kind != NodeKind::kOp || c.results.size() != 1)
    throw std::invalid_argument(
        "cast_slot: op must be an ATen op with self as its first slot, cast a later op");
  WriteSlot slot{n.slots[0].target, 0, 0, false};
  slot.cast = cast;
  n.slots.push_back(slot);
}

void GraphBuilder::compiler_facts(NodeId id, bool realized, bool extern_kernel, bool inplace_form,
                                  bool lacks_inplace_lowering, bool opaque) {
  at(id);  // bounds
  Node& n = g_.at(id);
  n.realized = n.realized || realized;
  n.compiler_extern = n.compiler_extern || extern_kernel;
  n.has_inplace = n.has_inplace || inplace_form;
  n.compiler_lacks_inplace = n.compiler_lacks_inplace || lacks_inplace_lowering;
  n.compiler_opaque = n.compiler_opaque || opaque;
}

void GraphBuilder::memory_facts(NodeId id, int32_t device, Int result_bytes, bool out_kernel,
                                Extent byte_size, bool restridable) {
  at(id);  // bounds
  if (g_.at(id).results.size() != 1)
    throw std::invalid_argument("memory facts of a node without one tensor result");
  if (result_bytes < 0) throw std::invalid_argument("negative result bytes");
  Node& n = g_.at(id);
  n.device = device;
  n.result_bytes = result_bytes;
  n.out_kernel = out_kernel;
  n.byte_size = byte_size;
  n.restridable = restridable;
}

void GraphBuilder::donated_input(NodeId id) {
  if (at(id).kind != NodeKind::kInput)
    throw std::invalid_argument("a donated buffer that is not a graph input");
  g_.at(id).donated = true;
}

void GraphBuilder::internal_output(NodeId id) {
  at(id);  // throws for a node not yet added
  g_.at(id).internal_output = true;
}

NodeId GraphBuilder::getitem(std::string name, NodeId source, int32_t index, const Results& results) {
  Node n = leaf(NodeKind::kGetItem, std::move(name), results);
  n.item_of = source;
  n.item_index = index;
  n.operands = {source};
  const Node& src = at(source);
  // An item of a multi-output view (split, unbind) views that view's input.
  if (src.kind == NodeKind::kOp && src.view == ViewKind::kMulti && src.self != kNoNode)
    n.view_of = n.layout_parent = src.self;
  return g_.add(std::move(n));
}

NodeId GraphBuilder::auto_functionalized(std::string name, std::vector<NodeId> operands,
                                         const Results& results, const std::vector<SlotRecord>& slots,
                                         std::vector<NodeId> absolute_layout_reads) {
  NodeId id = slotted(NodeKind::kAutoFunctionalized, std::move(name), std::move(operands), results, slots);
  for (NodeId op : absolute_layout_reads)
    if (op < 0 || op >= id) throw std::out_of_range("absolute_layout_reads: no such earlier node");
  g_.at(id).absolute_layout_reads = std::move(absolute_layout_reads);
  return id;
}

NodeId GraphBuilder::foreach_op(std::string name, std::vector<NodeId> operands, const Results& results,
                                const std::vector<NodeId>& self_list, bool collective,
                                std::vector<int32_t> operand_elements, bool keeps_self_geometry) {
  if (!operand_elements.empty() && operand_elements.size() != operands.size())
    throw std::invalid_argument("foreach: operand_elements must have one entry per operand");
  std::vector<SlotRecord> slots;
  for (size_t k = 0; k < self_list.size(); ++k) {
    auto item = static_cast<int32_t>(k);
    slots.push_back(SlotRecord{self_list[k], item, item, false});
  }
  NodeId id = slotted(NodeKind::kForeach, std::move(name), std::move(operands), results, slots);
  g_.at(id).collective = collective;
  g_.at(id).operand_elements = std::move(operand_elements);
  g_.at(id).keeps_self_geometry = keeps_self_geometry;
  return id;
}

NodeId GraphBuilder::write_back(std::string name, NodeId written_input, NodeId written,
                                std::optional<NodeId> value, std::vector<NodeId> operands,
                                const Results& results) {
  Node n = leaf(NodeKind::kWriteBack, std::move(name), results);
  n.written_input = written_input;
  n.self = written;
  n.written_value = value ? *value : kNoNode;
  n.operands = std::move(operands);
  return g_.add(std::move(n));
}

std::string GraphBuilder::dump(const PlanOptions& options) const {
  return graph_to_text(g_) + expectations_to_text(plan(options));
}

const Node& GraphBuilder::at(NodeId id) const {
  if (id < 0 || static_cast<size_t>(id) >= g_.size()) throw std::out_of_range("no such node");
  return g_.at(id);
}

NodeId GraphBuilder::slotted(NodeKind kind, std::string name, std::vector<NodeId> operands,
                             const Results& results, const std::vector<SlotRecord>& slots) {
  Node n = leaf(kind, std::move(name), results);
  n.operands = std::move(operands);
  for (const SlotRecord& s : slots) {
    at(s.target);
    n.slots.push_back(WriteSlot{s.target, s.result, s.item, s.in_place});
  }
  return g_.add(std::move(n));
}

Node GraphBuilder::leaf(NodeKind kind, std::string name, const Results& results) {
  Node n;
  n.kind = kind;
  n.name = std::move(name);
  n.results.reserve(results.size());
  for (const TensorRecord& r : results) {
    if (r.storage < 0) throw std::invalid_argument("storage ids are non-negative");
    while (g_.num_storages() <= r.storage) g_.new_storage();
    TensorValue v;
    v.storage = r.storage;
    v.shape = g_.shape(r.geom.sizes);
    v.geom = g_.geom(r.geom);
    v.dtype = r.dtype;
    n.results.push_back(v);
  }
  return n;
}

}  // namespace fxinplace::core
