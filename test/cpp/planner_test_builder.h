// A builder of hand-made planner IR for the planner's tests: each helper adds
// one node of the kind its name says, with fresh memory unless it is a view.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "reinplace_planner.h"
#include "test_geometry_helpers.h"

namespace fxinplace::core::testing {

class Builder {
 public:
  NodeId input(std::vector<Int> sizes) {
    Node n;
    n.kind = NodeKind::kInput;
    n.results.push_back(value(g.new_storage(), contiguous(sizes)));
    return g.add(std::move(n));
  }
  // A functional op writing fresh memory of `sizes`, reading `operands`.
  NodeId op(std::vector<NodeId> operands, std::vector<Int> sizes, bool has_inplace = true,
            bool pointwise = true) {
    Node n;
    n.kind = NodeKind::kOp;
    n.has_inplace = has_inplace;
    n.pointwise = pointwise;
    n.self = operands.at(0);
    n.slots = {WriteSlot{operands.at(0), 0, 0, false}};
    n.operands = operands;
    n.results.push_back(value(g.new_storage(), contiguous(sizes)));
    return g.add(std::move(n));
  }
  NodeId view(NodeId base, Geometry geom) {
    Node n;
    n.kind = NodeKind::kOp;
    n.view = ViewKind::kSingle;
    n.self = base;
    n.view_of = base;
    n.layout_parent = base;
    n.operands = {base};
    n.results.push_back(value(g.at(base).results[0].storage, geom));
    return g.add(std::move(n));
  }
  NodeId select_scatter(NodeId base, NodeId src, Int dim, Int index) {
    Node n;
    n.kind = NodeKind::kOp;
    n.self = base;
    n.slots = {WriteSlot{base, 0, 0, false}};
    n.scatter_src = src;
    n.scatter.kind = ScatterKind::kSelect;
    n.scatter.ints = {dim, index};
    n.scatter.replayable = true;
    n.operands = {base, src};
    n.results.push_back(value(g.new_storage(), g.geometries().at(g.at(base).results[0].geom)));
    return g.add(std::move(n));
  }
  // auto_functionalized_v2 over `bases` (each cloned unless listed in
  // `uncloned`), also reading `direct`; returns (node, getitem of each base's
  // new value). The op itself returns nothing.
  // _foreach_op(self_list, *other_lists): result k (fresh, like self_list[k])
  // may be written into self_list[k]; returns (node, getitem of each result).
  std::pair<NodeId, std::vector<NodeId>> foreach_op(std::vector<NodeId> self_list,
                                                    std::vector<NodeId> others = {}) {
    Node n;
    n.kind = NodeKind::kForeach;
    n.operands = self_list;
    n.operands.insert(n.operands.end(), others.begin(), others.end());
    // `others` are further lists of self_list's length: operand j is at list position j % length.
    for (size_t j = 0; j < n.operands.size(); ++j)
      n.operand_elements.push_back(static_cast<int32_t>(j % self_list.size()));
    for (size_t k = 0; k < self_list.size(); ++k) {
      TensorValue fresh = g.at(self_list[k]).results[0];
      fresh.storage = g.new_storage();
      n.results.push_back(fresh);
      n.slots.push_back(WriteSlot{self_list[k], static_cast<int32_t>(k), static_cast<int32_t>(k), false});
    }
    NodeId node = g.add(std::move(n));
    return {node, getitems(node)};
  }

  std::pair<NodeId, std::vector<NodeId>> auto_functionalized(std::vector<NodeId> bases,
                                                             std::vector<NodeId> direct = {},
                                                             std::vector<size_t> uncloned = {}) {
    Node n;
    n.kind = NodeKind::kAutoFunctionalized;
    n.operands = direct;
    for (size_t k = 0; k < bases.size(); ++k) {
      bool in_place = std::find(uncloned.begin(), uncloned.end(), k) != uncloned.end();
      const TensorValue& base = g.at(bases[k]).results[0];
      TensorValue fresh = base;
      if (!in_place) fresh.storage = g.new_storage();
      n.results.push_back(fresh);
      n.slots.push_back(WriteSlot{bases[k], static_cast<int32_t>(k), static_cast<int32_t>(k), in_place});
      n.operands.push_back(bases[k]);
    }
    NodeId node = g.add(std::move(n));
    return {node, getitems(node)};
  }
  // A getitem of each of `node`'s results, in order.
  std::vector<NodeId> getitems(NodeId node) {
    std::vector<NodeId> items;
    for (size_t k = 0; k < g.at(node).results.size(); ++k) {
      Node item;
      item.kind = NodeKind::kGetItem;
      item.item_of = node;
      item.item_index = static_cast<int32_t>(k);
      item.operands = {node};
      item.results.push_back(g.at(node).results[k]);
      items.push_back(g.add(std::move(item)));
    }
    return items;
  }
  NodeId write_back(NodeId input, NodeId value) {
    Node n;
    n.kind = NodeKind::kWriteBack;
    n.self = input;
    n.written_input = input;
    n.written_value = value;
    n.operands = {input, value};
    n.results.push_back(g.at(input).results[0]);
    return g.add(std::move(n));
  }
  // sym_size(t): reads t's metadata only.
  NodeId metadata_read(NodeId t) {
    Node n;
    n.kind = NodeKind::kOp;
    n.reads_memory = false;
    n.operands = {t};
    return g.add(std::move(n));
  }
  Plan plan(PlanOptions options) { return plan_reinplace(g, options); }
  NodeId output(std::vector<NodeId> operands) {
    Node n;
    n.kind = NodeKind::kOutput;
    n.operands = operands;
    return g.add(std::move(n));
  }
  Plan plan() { return plan_reinplace(g); }

  Graph g;

 private:
  TensorValue value(StorageId s, const Geometry& geom) {
    TensorValue v;
    v.storage = s;
    v.geom = g.geom(geom);
    v.shape = g.shape(geom.sizes);
    v.dtype = 0;
    return v;
  }
};

inline const Decision& at(const Plan& p, NodeId n) { return p.decisions.at(static_cast<size_t>(n)); }

}  // namespace fxinplace::core::testing
