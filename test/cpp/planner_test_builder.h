// Hand-made planner IR for the planner's tests, built through the core's own
// GraphBuilder (the one the Python frontend uses): each helper adds one node
// of the kind its name says, with fresh memory unless it is a view. `g` is
// the graph so far, for the facts a test sets by hand (Node::realized, ...).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "graph_builder.h"
#include "reinplace_planner.h"
#include "test_geometry_helpers.h"

namespace fxinplace::core::testing {

class Builder {
 public:
  Builder() = default;
  Builder(const Builder&) = delete;  // `g` refers into this builder
  Builder& operator=(const Builder&) = delete;

  NodeId input(std::vector<Int> sizes) { return b_.input("", {fresh(contiguous(sizes))}); }
  // Another graph input in `other`'s storage, at `geom` (views of one tensor
  // passed separately, as torch.compile passes k = kv[0] and v = kv[1]).
  NodeId input_sharing(NodeId other, Geometry geom) {
    return b_.input("", {TensorRecord{storage_of(other), std::move(geom), 0}});
  }
  // a = clone(x) of a new input x: a buffer of the graph's own, for later ops
  // to write into (the clone itself has no in-place form).
  NodeId clone_of_input(std::vector<Int> sizes) { return op({input(sizes)}, sizes, /*has_inplace=*/false); }
  // A functional op writing fresh memory of `sizes`, reading `operands`; its
  // first operand is `self`, the write slot.
  NodeId op(std::vector<NodeId> operands, std::vector<Int> sizes, bool has_inplace = true,
            bool pointwise = true) {
    OpTraits t;
    t.self_is_tensor = true;
    t.has_inplace = has_inplace;
    t.pointwise = pointwise;
    NodeId self = operands.at(0);
    return b_.op("", t, self, std::move(operands), {fresh(contiguous(sizes))});
  }
  // A pointwise op of another result dtype (a comparison: booleans), reading
  // `operands`; its first operand is `self`.
  NodeId op_of_dtype(std::vector<NodeId> operands, std::vector<Int> sizes, int32_t dtype) {
    OpTraits t;
    t.self_is_tensor = true;
    t.has_inplace = true;
    t.pointwise = true;
    NodeId self = operands.at(0);
    return b_.op("", t, self, std::move(operands), {TensorRecord{g.new_storage(), contiguous(sizes), dtype}});
  }
  // _to_copy(c, dtype): fresh memory of c's shape in `dtype`; when it converts
  // back to the dtype of c's self, c may write self through it (WriteSlot::cast).
  NodeId cast(NodeId c, int32_t dtype, bool offer_to_c = true) {
    OpTraits t;
    t.self_is_tensor = true;
    NodeId n = b_.op("", t, c, {c}, {TensorRecord{g.new_storage(), geometry_of(c), dtype}});
    if (offer_to_c) b_.cast_slot(c, n);
    return n;
  }
  NodeId view(NodeId base, Geometry geom, LayoutUse use = LayoutUse::kLogical) {
    OpTraits t;
    t.self_is_tensor = true;
    t.view = ViewKind::kSingle;
    t.layout_use = use;
    return b_.op("", t, base, {base}, {TensorRecord{storage_of(base), std::move(geom), 0}});
  }
  NodeId select_scatter(NodeId base, NodeId src, Int dim, Int index) {
    OpTraits t;
    t.self_is_tensor = true;
    t.scatter = ScatterKind::kSelect;
    ScatterCall call;
    call.src = src;
    call.args = ScatterSpec{};
    call.args->ints = {dim, index};
    return b_.op("", t, base, {base, src}, {fresh(geometry_of(base))}, call);
  }
  // auto_functionalized_v2 over `bases` (each cloned unless listed in
  // `uncloned`), also reading `direct`; returns (node, getitem of each base's
  // new value). The op itself returns nothing.
  std::pair<NodeId, std::vector<NodeId>> auto_functionalized(std::vector<NodeId> bases,
                                                             std::vector<NodeId> direct = {},
                                                             std::vector<size_t> uncloned = {}) {
    std::vector<NodeId> operands = std::move(direct);
    GraphBuilder::Results results;
    std::vector<SlotRecord> slots;
    for (size_t k = 0; k < bases.size(); ++k) {
      bool in_place = std::find(uncloned.begin(), uncloned.end(), k) != uncloned.end();
      TensorRecord value = record_of(bases[k]);
      if (!in_place) value.storage = g.new_storage();
      results.push_back(value);
      auto index = static_cast<int32_t>(k);
      slots.push_back(SlotRecord{bases[k], index, index, in_place});
      operands.push_back(bases[k]);
    }
    NodeId node = b_.auto_functionalized("", std::move(operands), results, slots);
    return {node, getitems(node)};
  }
  // _foreach_op(self_list, *other_lists): result k (fresh, like self_list[k])
  // may be written into self_list[k]; returns (node, getitem of each result).
  std::pair<NodeId, std::vector<NodeId>> foreach_op(std::vector<NodeId> self_list,
                                                    std::vector<NodeId> others = {}) {
    std::vector<NodeId> operands = self_list;
    operands.insert(operands.end(), others.begin(), others.end());
    // `others` are further lists of self_list's length: operand j is at list position j % length.
    std::vector<int32_t> elements;
    for (size_t j = 0; j < operands.size(); ++j)
      elements.push_back(static_cast<int32_t>(j % self_list.size()));
    GraphBuilder::Results results;
    for (NodeId self : self_list) {
      TensorRecord value = record_of(self);
      value.storage = g.new_storage();
      results.push_back(value);
    }
    NodeId node = b_.foreach_op("", std::move(operands), results, self_list, false, std::move(elements));
    return {node, getitems(node)};
  }
  // A getitem of each of `node`'s results, in order.
  std::vector<NodeId> getitems(NodeId node) {
    std::vector<NodeId> items;
    size_t count = g.at(node).results.size();
    for (size_t k = 0; k < count; ++k)
      items.push_back(b_.getitem("", node, static_cast<int32_t>(k), {result_record(node, k)}));
    return items;
  }
  NodeId write_back(NodeId input, NodeId value) {
    return b_.write_back("", input, input, value, {input, value}, {record_of(input)});
  }
  // copy_(inputs[k], values[k]) for each k, as an optimizer step ends; returns the copies.
  std::vector<NodeId> write_back_each(const std::vector<NodeId>& inputs, const std::vector<NodeId>& values) {
    std::vector<NodeId> copies;
    for (size_t k = 0; k < inputs.size(); ++k) copies.push_back(write_back(inputs[k], values.at(k)));
    return copies;
  }
  // sym_size(t): reads t's metadata only.
  NodeId metadata_read(NodeId t) {
    OpTraits traits;
    traits.reads_memory = false;
    return b_.op("", traits, std::nullopt, {t}, {});
  }
  NodeId output(std::vector<NodeId> operands) { return b_.output("", std::move(operands)); }
  // A higher-order op or other callable: reads its operands, returns nothing the planner sees.
  NodeId opaque(std::vector<NodeId> operands) { return b_.other("", std::move(operands), {}); }
  // The memory walk's facts of node n (memory_plan.h): its byte count is
  // `bytes` (a known size); restridable: it may take a buffer of that byte
  // count laid out otherwise.
  void memory_facts(NodeId n, Int bytes, bool out_kernel, int32_t device = 0, bool restridable = false) {
    b_.memory_facts(n, device, bytes, out_kernel, bytes, restridable);
  }
  // A graph input AOTAutograd donates to the backward (a saved activation).
  void donated(NodeId input) { b_.donated_input(input); }
  void internal_output(NodeId n) { b_.internal_output(n); }
  Plan plan(PlanOptions options) { return b_.plan(options); }
  Plan plan() { return b_.plan(); }

 private:
  GraphBuilder b_;

 public:
  Graph& g = b_.graph();

 private:
  TensorRecord fresh(Geometry geom) { return TensorRecord{g.new_storage(), std::move(geom), 0}; }
  StorageId storage_of(NodeId n) const { return g.at(n).results.at(0).storage; }
  Geometry geometry_of(NodeId n) const { return g.geometries().at(g.at(n).results.at(0).geom); }
  TensorRecord result_record(NodeId n, size_t k) const {
    const TensorValue& v = g.at(n).results.at(k);
    return TensorRecord{v.storage, g.geometries().at(v.geom), v.dtype};
  }
  TensorRecord record_of(NodeId n) const { return result_record(n, 0); }
};

inline const Decision& at(const Plan& p, NodeId n) { return p.decisions.at(static_cast<size_t>(n)); }

// The options the tests plan under, named by what they turn on.
inline PlanOptions under_torch_compile() {
  PlanOptions o;
  o.outputs_taken_by_torch_compile = true;
  return o;
}
// The epilogue rule: ATen ops may write into inputs the graph writes back.
inline PlanOptions reusing_written_back_inputs(bool reuse = true) {
  PlanOptions o;
  o.reuse_written_back_inputs = reuse;
  return o;
}
inline PlanOptions destinations_on() {
  PlanOptions o;
  o.dead_operand_destinations = true;
  return o;
}
// Inductor's policy, with the epilogue rule as torch.compile runs it.
inline PlanOptions inductor() {
  PlanOptions o = reusing_written_back_inputs();
  o.inductor = true;
  return o;
}

// EXPECT_TRUE(refused(at(p, n), Reason::kUsedLater, culprit)): a refusal's
// reason and the node behind it, in one check that prints both (a Decision or
// a SlotDecision).
template <class D>
::testing::AssertionResult refused(const D& d, Reason reason, NodeId culprit) {
  if (d.reason == reason && d.culprit == culprit) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "refused for " << reason_name(d.reason) << " by node " << d.culprit
                                       << ", not for " << reason_name(reason) << " by node " << culprit;
}

// EXPECT_TRUE(refused_if(refuse, at(p, n), Reason::kX)), for a test run both
// ways: where `refuse`, the reason of the refusal, else the action taken.
inline ::testing::AssertionResult refused_if(bool refuse, const Decision& d, Reason why,
                                             Action otherwise = Action::kInplace) {
  if (refuse ? d.reason == why : d.action == otherwise) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << action_name(d.action) << " (" << reason_name(d.reason) << "), not "
                                       << (refuse ? reason_name(why) : action_name(otherwise));
}

// EXPECT_TRUE(rewritten(at(p, n), Action::kInplace, replacement)): the rewrite
// and the node its users read instead.
inline ::testing::AssertionResult rewritten(const Decision& d, Action action, NodeId replacement) {
  if (d.action == action && d.replacement == replacement) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << action_name(d.action) << " reading node " << d.replacement
                                       << ", not " << action_name(action) << " reading node " << replacement;
}

}  // namespace fxinplace::core::testing
