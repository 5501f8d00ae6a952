// The planner's one forward walk (internal to the core; see reinplace_planner.h).
// Split by concern over three files:
//   planner_walk.cpp    the walk, ops (foo -> foo_) and scatters, the verifier
//   planner_slots.cpp   write slots shared by every rule: buffers written into
//                       (auto_functionalized_v2 bases), graph inputs written
//                       back by the program (the epilogue rule), write-backs
//   planner_layout.cpp  where moved memory lands, and who would notice
//   planner_inductor.cpp  what a graph for Inductor may get (PlanOptions::inductor)
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "alias_classes.h"
#include "decision.h"
#include "graph_ir.h"
#include "reinplace_planner.h"

namespace fxinplace::core {

class Walk {
 public:
  Walk(const Graph& g, const PlanOptions& options, const std::vector<bool>& kept_scatters);

  void run();
  const std::vector<Decision>& decisions() const { return decisions_; }
  // Removed scatters that the verifier cannot prove to be no-ops.
  std::vector<NodeId> unsound_removals();
  // The alias model after the walk's decisions (for the memory walk).
  AliasClasses& classes() { return classes_; }

 private:
  // ---- planner_walk.cpp
  void decide(NodeId i);
  void decide_op(NodeId i);
  // The decision for writing node i's result into write slot k, or why not.
  Decision try_slot(NodeId i, size_t k);
  Decision refuse(Reason r, NodeId culprit = kNoNode) const;
  Decision check_op_metadata(const Node& node, const WriteSlot& slot, const TensorValue& self) const;
  std::optional<Decision> check_pending_scatters(NodeId i, StorageId s, std::vector<NodeId>& removable);
  bool inverts_a_view(NodeId j, StorageId s);
  bool scatter_base_overlaps(NodeId j) const;
  bool writes_within_input(NodeId i, const WriteSlot& slot);
  void remove_scatter(NodeId j);

  // ---- planner_slots.cpp
  // The checks every write into `target` at node `i` must pass, whatever the
  // rule: the buffer is free (not read later, not an input unless written
  // back), no other operand reads it while it is written. nullopt: all pass.
  std::optional<Decision> check_write(NodeId i, const WriteSlot& slot, NodeId holder, bool elementwise);
  std::optional<Decision> check_input_written_back(NodeId i, NodeId target, NodeId holder);
  NodeId first_write_back_into(NodeId i, NodeId target);
  bool reads_only_elsewhere(NodeId read, StorageId s, NodeId target);
  // Provably none of target's elements: disjoint by geometry, or (under
  // PlanOptions::shared_inputs_disjoint) within another graph input.
  bool elsewhere_than(NodeId n, NodeId target);
  bool within_another_input(NodeId n, NodeId target);
  std::optional<Decision> check_other_operands(NodeId i, const WriteSlot& slot, bool elementwise);
  // Each write slot of an auto_functionalized_v2 node (a base it need not
  // clone) or of a `_foreach_*` op (all_or_none: its in-place form writes
  // every element of the list).
  void decide_slots(NodeId i, bool all_or_none);
  // A slot decide_slots accepted: its holder, result storage and the pending
  // scatters its write makes no-ops.
  struct Accepted {
    size_t slot;
    NodeId holder;
    StorageId storage;
    std::vector<NodeId> scatters;
  };
  void refuse_returned_together(const std::vector<Accepted>& accepted, std::vector<size_t>& group,
                                std::vector<std::pair<size_t, NodeId>>& refused);
  std::vector<std::pair<size_t, NodeId>> refuse_unordered_shared_buffers(NodeId i,
                                                                         std::vector<Accepted>& accepted);
  std::optional<NodeId> unordered_shared_writes(NodeId i, const std::vector<Accepted>& accepted,
                                                const std::vector<size_t>& group, std::vector<NodeId>& extra);
  void decide_write_back(NodeId i);
  // The value moves into the slot's buffer: users of `holder` read `target`.
  void accept(const WriteSlot& slot, NodeId holder, StorageId result_storage);
  // The node holding slot `slot`'s value (the node itself, or its getitem).
  NodeId holder_of(NodeId i, const WriteSlot& slot) const;

  // ---- planner_layout.cpp
  void summarise_layout_uses();
  void summarise_computed_layouts();
  void summarise_offset_reads();
  bool offset_moves(NodeId moved, NodeId home);
  bool layout_change_is_visible(NodeId moved, NodeId home);
  bool covers_its_buffer(NodeId t);
  bool layout_differs(NodeId moved, NodeId home);
  bool strides_differ(NodeId moved, NodeId home);
  bool move_is_visible(NodeId moved, NodeId home);
  std::optional<Geometry> derive_geom(NodeId u, const Geometry& old_parent, const Geometry& new_parent);
  bool aliases_parent(NodeId u) const;
  bool reads_as_another_dtype(NodeId u) const;
  NodeId geometry_source(NodeId u) const;
  std::optional<Geometry> effective_geom(NodeId n);
  std::optional<Geometry> inverted_view(const Node& sc, const Geometry& base) const;
  bool operand_is_harmless(NodeId operand, NodeId target, bool elementwise);

  // ---- planner_inductor.cpp
  void summarise_for_inductor();
  std::optional<Decision> inductor_refuses_op(NodeId i) const;
  std::optional<Decision> inductor_refuses_foreach_slot(NodeId i, const WriteSlot& slot, NodeId holder) const;
  bool scatter_worth_writing(NodeId i) const;
  bool scatter_is_in_place_already(NodeId i);
  // The checks of Inductor's own contract on a write the walk has otherwise
  // accepted: node i writes slot's target, the value `holder` names (its
  // storage `result_storage`, which then lives in the target's memory).
  std::optional<Decision> inductor_refuses_write(NodeId i, const WriteSlot& slot, NodeId holder,
                                                 StorageId result_storage);
  // A loop Inductor generates for one write, and the values it computes inside it.
  struct FusedWrite {
    std::vector<StorageId> buffer;  // alias classes (roots) the loop writes
    std::optional<Geometry> dest;   // the elements iteration k writes, for an elementwise write
    int32_t shape = -1;             // dest's shape
    bool elementwise = false;       // iteration k writes element k of dest (else: indexed)
  };
  // values: (node, whether iteration k of the loop computes its element k).
  bool fused_loop_reads_elsewhere(const FusedWrite& w, const std::vector<std::pair<NodeId, bool>>& values);
  // `written`: the node whose memory the write at i writes.
  bool later_write_backs_read_elsewhere(NodeId i, const std::vector<StorageId>& buffer, NodeId holder,
                                        NodeId written);
  // Some view reads one of `storages` (or a storage merged with it) as another dtype.
  bool read_as_other_dtype(const std::vector<StorageId>& storages);

  // ---- shared state
  NodeId rep(NodeId n) const { return rep_[static_cast<size_t>(n)]; }
  const TensorValue* value(NodeId n) const { return g_.single_result(n); }
  const Geometry& own_geom(NodeId n) const { return g_.geometries().at(value(n)->geom); }

  const Graph& g_;
  const PlanOptions& options_;
  const std::vector<bool>& kept_;
  AliasClasses classes_;
  std::vector<NodeId> rep_;  // after the walk: the node a use of each node reads
  std::vector<Decision> decisions_;
  // getitem nodes of each multi-result node, as (item index, getitem node).
  std::vector<std::vector<std::pair<int32_t, NodeId>>> items_;
  std::vector<LayoutUse> layout_needs_;
  // A symbolic trace records strides of size-1 dims that eager need not have
  // (see layout_change_is_visible).
  bool symbolic_ = false;
  std::vector<std::vector<NodeId>> layout_children_;
  std::vector<bool> layout_reaches_;
  // A view of n (transitively) reads it as another dtype, which checks its
  // strides literally, size-1 dims included.
  std::vector<bool> viewed_as_another_dtype_;
  // A result computed from n is viewed as another dtype: strides of n's
  // size-1 dims may show through it (see move_is_visible).
  std::vector<bool> strides_reach_;
  std::vector<bool> offset_read_;
  // PlanOptions::inductor: the scatter whose source each scatter is, when it
  // writes back into a view of that scatter's base (a nested pair), and the
  // graph input a write-back copy_ copies each value into.
  std::vector<NodeId> scatter_parent_;
  std::vector<NodeId> written_back_as_;
  // The dtype each storage was allocated with (its first tensor's): a view of
  // another dtype is a dtype view.
  std::vector<int32_t> storage_dtype_;
  // The storages some view reads as another dtype than their own (hazard 6).
  std::vector<StorageId> dtype_viewed_;
  // fused_loop_reads_elsewhere's visited marks (two per node: reached with an
  // elementwise path, reached at all), reset by bumping the stamp.
  std::vector<uint32_t> seen_aligned_, seen_any_;
  uint32_t stamp_ = 0;
};

}  // namespace fxinplace::core
