#include "alias_classes.h"

#include <algorithm>
#include <iterator>

namespace fxinplace::core {

AliasClasses::AliasClasses(const Graph& g)
    : storages_(static_cast<size_t>(g.num_storages())),
      classes_(static_cast<size_t>(g.num_storages())),
      reads_(static_cast<size_t>(g.num_storages())) {
  for (StorageId s = 0; s < g.num_storages(); ++s) classes_[static_cast<size_t>(s)].members.push_back(s);
  // last_user[op] == j: op already counted for user j (an op passed twice
  // reads its memory once).
  std::vector<NodeId> last_user(g.size(), kNoNode);
  for (NodeId j = 0; j < static_cast<NodeId>(g.size()); ++j) {
    const Node& user = g.at(j);
    if (user.kind == NodeKind::kInput || user.kind == NodeKind::kConstant)
      for (const TensorValue& v : user.results) {
        AliasClass& c = classes_[static_cast<size_t>(v.storage)];
        if (user.kind == NodeKind::kInput) {
          ++c.inputs;
          c.input_nodes.push_back(j);
          if (user.donated) ++c.donated_inputs;
        } else
          c.has_constant = true;
      }
    if (user.kind == NodeKind::kOutput)
      for (NodeId op : user.operands)
        for (const TensorValue& v : g.at(op).results) {
          if (v.storage < 0) continue;
          AliasClass& c = classes_[static_cast<size_t>(v.storage)];
          if (v.geom != kNoGeom && g.geometries().at(v.geom).numel() == Int{0}) c.returned_empty = true;
          if (!g.at(op).internal_output) c.returned_to_caller = true;
        }
    if (user.kind == NodeKind::kWriteBack && user.written_input != kNoNode)
      for (const TensorValue& v : g.at(user.written_input).results)
        classes_[static_cast<size_t>(v.storage)].write_backs.push_back(j);
    if (user.view_of != kNoNode) {
      const TensorValue* base = g.single_result(user.view_of);
      if (base && user.results.size() == 1)
        classes_[static_cast<size_t>(user.results[0].storage)].view_pairs.insert(
            pair_key(base->geom, user.results[0].geom));
    }
    if (!user.reads_memory) continue;
    for (NodeId op : user.operands) {
      if (last_user[static_cast<size_t>(op)] == j) continue;
      last_user[static_cast<size_t>(op)] = j;
      bool copied = user.kind == NodeKind::kWriteBack && op == user.written_value;
      for (const TensorValue& v : g.at(op).results) record_use(g, j, v.storage, copied);
    }
  }
}

// A node whose result lives in the storage it reads (a view, a getitem of a
// multi-output view, a write-back's input) does not read the memory; it only
// names it. But a write-back reads the value it copies, even one in its
// input's own memory (random pipelines seed 121864: an in-place squeeze_ that
// changed nothing is written back as copy_(x, squeeze(x)), which reads x's
// original value at the end; unrecorded, mul(x, 2) went into x's memory).
void AliasClasses::record_use(const Graph& g, NodeId j, StorageId s, bool copied) {
  const Node& user = g.at(j);
  bool names_only = !copied && user.kind != NodeKind::kOutput && user.kind != NodeKind::kOther &&
                    user.kind != NodeKind::kAutoFunctionalized &&
                    std::any_of(user.results.begin(), user.results.end(),
                                [s](const TensorValue& v) { return v.storage == s; });
  if (names_only) return;
  AliasClass& c = classes_[static_cast<size_t>(s)];
  std::vector<NodeId>& reads = reads_[static_cast<size_t>(s)];
  if (reads.empty() || reads.back() != j) reads.push_back(j);
  if (user.kind == NodeKind::kOutput) c.returned = true;
  if (user.kind == NodeKind::kOp && user.scatter.kind != ScatterKind::kNone) {
    if (c.scatter_reads.empty() || c.scatter_reads.back() != j) c.scatter_reads.push_back(j);
  } else {
    c.last_read = std::max(c.last_read, j);
  }
}

void AliasClasses::merge(StorageId a, StorageId b) {
  auto [win, lose] = storages_.unite(a, b);
  if (win == lose) return;
  AliasClass& w = classes_[static_cast<size_t>(win)];
  AliasClass& l = classes_[static_cast<size_t>(lose)];
  w.inputs += l.inputs;
  w.input_nodes.insert(w.input_nodes.end(), l.input_nodes.begin(), l.input_nodes.end());
  l.input_nodes.clear();
  w.donated_inputs += l.donated_inputs;
  w.has_constant = w.has_constant || l.has_constant;
  w.returned = w.returned || l.returned;
  w.returned_empty = w.returned_empty || l.returned_empty;
  w.returned_to_caller = w.returned_to_caller || l.returned_to_caller;
  w.last_read = std::max(w.last_read, l.last_read);
  std::vector<NodeId> merged;
  merged.reserve(w.scatter_reads.size() - w.pruned + l.scatter_reads.size() - l.pruned);
  std::merge(w.scatter_reads.begin() + static_cast<std::ptrdiff_t>(w.pruned), w.scatter_reads.end(),
             l.scatter_reads.begin() + static_cast<std::ptrdiff_t>(l.pruned), l.scatter_reads.end(),
             std::back_inserter(merged));
  merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
  w.scatter_reads = std::move(merged);
  w.pruned = 0;
  l.scatter_reads.clear();
  if (w.view_pairs.size() < l.view_pairs.size()) std::swap(w.view_pairs, l.view_pairs);
  w.view_pairs.insert(l.view_pairs.begin(), l.view_pairs.end());
  l.view_pairs.clear();
  if (w.members.size() < l.members.size()) std::swap(w.members, l.members);
  w.members.insert(w.members.end(), l.members.begin(), l.members.end());
  l.members.clear();
  if (!l.write_backs.empty()) {
    std::vector<NodeId> backs;
    std::merge(w.write_backs.begin(), w.write_backs.end(), l.write_backs.begin(), l.write_backs.end(),
               std::back_inserter(backs));
    w.write_backs = std::move(backs);
    l.write_backs.clear();
  }
}

NodeId AliasClasses::first_write_back_after(StorageId s, NodeId after) {
  const std::vector<NodeId>& backs = of(s).write_backs;
  auto it = std::upper_bound(backs.begin(), backs.end(), after);
  return it == backs.end() ? kNoNode : *it;
}

}  // namespace fxinplace::core
