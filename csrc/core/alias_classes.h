// The planner's one alias model: storages grouped into classes that share
// memory (union-find), each class summarising who reads it and when. Classes
// only ever merge: when a rewrite makes one buffer hold another's value.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "graph_ir.h"
#include "union_find.h"

namespace fxinplace::core {

struct AliasClass {
  // Graph inputs and constants in the class (memory the caller owns).
  int32_t inputs = 0;
  // Those inputs' nodes (several when the caller passes views of one tensor).
  std::vector<NodeId> input_nodes;
  bool has_constant = false;
  // Of those inputs, AOTAutograd's donated backward inputs (saved activations
  // the backward may free; facts given under PlanOptions::plan_memory only).
  int32_t donated_inputs = 0;
  // Latest node that reads the class and is neither a view of it nor a scatter.
  NodeId last_read = kNoNode;
  // Scatters that read the class, ascending; those before `pruned` are behind
  // the walk and never matter again.
  std::vector<NodeId> scatter_reads;
  size_t pruned = 0;
  // (geometry of a view's base, geometry of the view) for every view whose
  // memory is in the class: a scatter that inverts one of them is not a read.
  std::unordered_set<uint64_t> view_pairs;
  // The storages in the class: the epilogue rule asks for the first read of
  // an input's class after a point (input classes are small).
  std::vector<StorageId> members;
  // A graph output returns memory of the class; `returned_empty`: one of them
  // has no elements (known from its sizes).
  bool returned = false;
  bool returned_empty = false;
  // An output returns memory of the class to the caller's code (through a
  // node not marked Node::internal_output).
  bool returned_to_caller = false;
  // Write-backs into the class (functionalization's copy_ into an input), ascending.
  std::vector<NodeId> write_backs;
  bool is_input() const { return inputs > 0 || has_constant; }
  // One donated input and nothing else the caller owns or reads back: its
  // memory is the graph's to overwrite once no one reads it again.
  bool is_donated_input() const {
    return inputs == 1 && donated_inputs == 1 && !has_constant && write_backs.empty();
  }
};

class AliasClasses {
 public:
  explicit AliasClasses(const Graph& g);

  StorageId root(StorageId s) { return storages_.find(s); }
  AliasClass& of(StorageId s) { return classes_[static_cast<size_t>(root(s))]; }
  void merge(StorageId a, StorageId b);
  // The first node in (after, until] that reads the class's memory and for
  // which `matches(node)` holds, or kNoNode. Each member's reads are scanned
  // only up to its first match (reads that do not match are rare).
  template <class Matches>
  NodeId first_read_where(StorageId s, NodeId after, NodeId until, Matches matches) {
    NodeId first = kNoNode;
    for (StorageId m : of(s).members) {
      const std::vector<NodeId>& reads = reads_[static_cast<size_t>(m)];
      for (auto it = std::upper_bound(reads.begin(), reads.end(), after);
           it != reads.end() && *it <= until && (first == kNoNode || *it < first); ++it)
        if (matches(*it)) first = *it;
    }
    return first;
  }
  // The first write-back into the class after `after`, or kNoNode.
  NodeId first_write_back_after(StorageId s, NodeId after);
  // The last node that reads storage `s` itself (not its class), or kNoNode.
  NodeId last_read_of(StorageId s) const {
    const std::vector<NodeId>& reads = reads_[static_cast<size_t>(s)];
    return reads.empty() ? kNoNode : reads.back();
  }

  static uint64_t pair_key(GeomId base, GeomId view) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(base)) << 32) | static_cast<uint32_t>(view);
  }

 private:
  void record_use(const Graph& g, NodeId user, StorageId s, bool copied);

  UnionFind storages_;
  std::vector<AliasClass> classes_;
  // Every read of each storage, ascending (for first_read_where).
  std::vector<std::vector<NodeId>> reads_;
};

}  // namespace fxinplace::core
