// The walk, and the rules for ATen ops: `foo(self, ...)` -> `foo_(self, ...)`
// and `x_scatter(base, src, ...)` -> `view(base, ...).copy_(src)`, and the
// removal of scatters whose write already happened in place.
#include "planner_walk.h"

#include <algorithm>

namespace fxinplace::core {

Walk::Walk(const Graph& g, const PlanOptions& options, const std::vector<bool>& kept_scatters)
    : g_(g),
      options_(options),
      kept_(kept_scatters),
      classes_(g),
      rep_(g.size()),
      decisions_(g.size()),
      items_(g.size()) {
  for (size_t i = 0; i < g.size(); ++i) {
    rep_[i] = static_cast<NodeId>(i);
    const Node& n = g.at(static_cast<NodeId>(i));
    if (n.kind == NodeKind::kGetItem && n.item_of != kNoNode)
      items_[static_cast<size_t>(n.item_of)].emplace_back(n.item_index, static_cast<NodeId>(i));
  }
  symbolic_ = g.traced_symbolically();
  for (size_t k = 0; k < g.geometries().size() && !symbolic_; ++k)
    symbolic_ = !g.geometries().at(static_cast<GeomId>(k)).is_known();
  summarise_layout_uses();
  summarise_for_inductor();
}

void Walk::run() {
  for (NodeId i = 0; i < static_cast<NodeId>(g_.size()); ++i) decide(i);
}

Decision Walk::refuse(Reason r, NodeId culprit) const {
  Decision d;
  d.reason = r;
  d.culprit = culprit;
  return d;
}

void Walk::decide(NodeId i) {
  const Node& node = g_.at(i);
  // A scatter already removed on behalf of an earlier op stays removed, and
  // so does a cast an earlier op's in-place form made (WriteSlot::cast).
  Action earlier = decisions_[static_cast<size_t>(i)].action;
  if (earlier == Action::kRemoveScatter || earlier == Action::kRemoveCast) return;
  switch (node.kind) {
    case NodeKind::kAutoFunctionalized:
      decide_slots(i, /*all_or_none=*/false);
      return;
    case NodeKind::kForeach:
      decide_slots(i, /*all_or_none=*/true);
      return;
    case NodeKind::kWriteBack:
      decide_write_back(i);
      return;
    case NodeKind::kOp:
      if (node.view != ViewKind::kNone) {
        decisions_[static_cast<size_t>(i)] = refuse(Reason::kView);
        return;
      }
      if (node.slots.empty()) return;
      if (options_.inductor && node.scatter.kind != ScatterKind::kNone && scatter_is_in_place_already(i)) {
        remove_scatter(i);
        return;
      }
      if (auto refused = inductor_refuses_op(i)) {
        decisions_[static_cast<size_t>(i)] = *refused;
        return;
      }
      decide_op(i);
      return;
    default:
      return;
  }
}

// Metadata checks for swapping `foo` for `foo_`: the result must be exactly
// what `self` can hold. Through a cast (WriteSlot::cast) the value self
// holds is the cast's result.
Decision Walk::check_op_metadata(const Node& node, const WriteSlot& slot, const TensorValue& self) const {
  bool is_scatter = node.scatter.kind != ScatterKind::kNone;
  if (!is_scatter && !node.has_inplace && slot.via != Destination::kOut)
    return refuse(Reason::kNoInplaceVariant);
  if (flips_values(self.dtype)) return refuse(Reason::kSelfFlipsValues);
  if (node.is_resize) return Decision{};
  const TensorValue* result = node.results.size() == 1 ? &node.results[0] : nullptr;
  if (!result) return refuse(Reason::kResultNotSingleTensor);
  if (slot.cast != kNoNode) result = value(slot.cast);
  if (!result) return refuse(Reason::kResultNotSingleTensor);
  if (result->dtype != self.dtype) return refuse(Reason::kMetadataMismatch);
  if (result->shape != self.shape) return refuse(Reason::kShapeMismatch);
  // Under torch.compile's policies an empty result stays functional: in place
  // it saves nothing, and kernels lay empty results out as they please. Eager's
  // add of a (0, 2) input of strides (1, 1) returns strides (1, 0), its meta
  // kernel (1, 1); written into the input, a later mul's result had another
  // last stride than the functional one, and its view(dtype) raised (random
  // pipelines seed 189836). The stock policy keeps the stock pass's choice.
  if (options_.outputs_taken_by_torch_compile && g_.geometries().at(result->geom).numel() == Int{0})
    return refuse(Reason::kEmptyResult);
  const Geometry& self_geom = g_.geometries().at(self.geom);
  if (self_geom.has_internal_overlap()) return refuse(Reason::kSelfOverlaps);
  if (node.scatter.kind == ScatterKind::kAsStrided) {
    // as_strided_scatter may name a view whose indices share elements (an
    // unfold's windows, a stride 0). As `self.as_strided(...).copy_(src)` the
    // shared elements get whichever write lands last (and ATen rejects such a
    // copy_), so the scatter stays functional unless its view provably has
    // distinct elements. Slice, select and diagonal views of a self without
    // internal overlap never overlap themselves.
    auto view = inverted_view(node, self_geom);
    if (!view || view->has_internal_overlap()) return refuse(Reason::kSelfOverlaps);
    // Its view may address storage beyond self's own elements (self a slice
    // of a larger tensor): the functional op writes those into its clone of
    // the storage but returns only self's elements, so the write stops at
    // self. In place, it would reach the rest of the storage:
    //   s = as_strided_scatter(x[:, ::2], v, [2, 2], [1, 2], 4)  # returns elements 4, 6
    if (!view->elements_within(self_geom)) return refuse(Reason::kViewOutsideSelf);
  }
  return Decision{};
}

void Walk::decide_op(NodeId i) {
  const Node& node = g_.at(i);
  // Slot 0 is `self`; the others (dead operands as destinations) only when
  // asked, and only when `self` cannot be written: the stock pass's choice
  // comes first, and its refusal is what the node reports otherwise.
  size_t tries = options_.dead_operand_destinations ? node.slots.size() : 1;
  Decision first;
  for (size_t k = 0; k < tries; ++k) {
    Decision d = try_slot(i, k);
    if (d.action != Action::kKeep) {
      decisions_[static_cast<size_t>(i)] = d;
      return;
    }
    if (k == 0) first = d;
  }
  decisions_[static_cast<size_t>(i)] = first;
}

Decision Walk::try_slot(NodeId i, size_t k) {
  const Node& node = g_.at(i);
  const WriteSlot& slot = node.slots[k];
  NodeId target = rep(slot.target);
  const TensorValue* self = value(target);
  if (!self) return refuse(Reason::kNotCandidate);
  Decision local = check_op_metadata(node, slot, *self);
  if (local.reason != Reason::kNotCandidate) return local;
  // The node whose value comes to live in target, and its storage: the node's
  // result, or its cast's (which check_op_metadata found to be one tensor).
  NodeId holder = slot.cast == kNoNode ? i : slot.cast;
  StorageId held = slot.cast != kNoNode   ? value(slot.cast)->storage
                   : node.results.empty() ? StorageId{-1}
                                          : node.results[0].storage;
  if (auto refused = check_write(i, slot, holder, node.pointwise)) return *refused;
  std::vector<NodeId> removable;
  if (auto refused = check_pending_scatters(i, self->storage, removable)) return *refused;
  if (move_is_visible(holder, target)) return refuse(Reason::kLayoutSensitiveUse);
  if (auto refused = inductor_refuses_write(i, slot, i, held)) return *refused;
  Decision out;
  out.action = node.scatter.kind != ScatterKind::kNone ? Action::kScatterToCopy : Action::kInplace;
  out.reason = Reason::kDone;
  out.replacement = target;
  out.slot = static_cast<int32_t>(k);
  accept(slot, holder, held);
  if (slot.cast != kNoNode) {
    // The op's own (unconverted) result is never made: its memory is target's.
    classes_.merge(self->storage, node.results[0].storage);
    Decision& cast = decisions_[static_cast<size_t>(slot.cast)];
    cast.action = Action::kRemoveCast;
    cast.reason = Reason::kDone;
    cast.replacement = target;
  }
  for (NodeId j : removable) remove_scatter(j);
  return out;
}

// Scatters still ahead that read `s`'s class: each must write back exactly a
// view of the class (then it becomes a no-op once that view is written in
// place, and is removed), or the write is refused.
std::optional<Decision> Walk::check_pending_scatters(NodeId i, StorageId s, std::vector<NodeId>& removable) {
  AliasClass& c = classes_.of(s);
  while (c.pruned < c.scatter_reads.size() && c.scatter_reads[c.pruned] <= i) ++c.pruned;
  for (size_t k = c.pruned; k < c.scatter_reads.size(); ++k) {
    NodeId j = c.scatter_reads[k];
    bool merged_in = false;
    for (const TensorValue& v : g_.at(j).results)
      merged_in = merged_in || classes_.root(v.storage) == classes_.root(s);
    if (merged_in) continue;
    if (scatter_base_overlaps(j)) return refuse(Reason::kSelfOverlaps, j);
    if (!inverts_a_view(j, s)) {
      Reason why = kept_[static_cast<size_t>(j)] ? Reason::kScatterUnproven : Reason::kUsedLater;
      return refuse(why, j);
    }
    removable.push_back(j);
  }
  return std::nullopt;
}

// Does scatter `j` write back exactly a view some member of class `s` was
// taken as? Then, once that view was written in place, `j` is a no-op.
bool Walk::inverts_a_view(NodeId j, StorageId s) {
  const Node& sc = g_.at(j);
  if (kept_[static_cast<size_t>(j)] || sc.self == kNoNode) return false;
  if (layout_change_is_visible(j, rep(sc.self))) return false;
  if (offset_read_[static_cast<size_t>(j)] && offset_moves(j, rep(sc.self))) return false;
  const TensorValue* base = value(rep(sc.self));
  if (!base) return false;
  auto replay = inverted_view(sc, g_.geometries().at(base->geom));
  if (!replay) return false;
  // An as_strided view reaching beyond its base's elements: the scatter
  // carries back only the base's (see check_op_metadata), not a no-op.
  if (sc.scatter.kind == ScatterKind::kAsStrided && !replay->elements_within(g_.geometries().at(base->geom)))
    return false;
  GeomId view = g_.geometries().lookup(*replay);
  return view != kNoGeom && classes_.of(s).view_pairs.count(AliasClasses::pair_key(base->geom, view)) > 0;
}

// A scatter returns a fresh tensor, dense whatever its base's layout. Removed,
// it returns its base, and a base whose indices share elements (an expand)
// turns one write into many:
//   b = expand(clone(x), [3, 3])             b = expand(clone(x), [3, 3])
//   s = sign(select(b, 0, 0))          ->    sign_(select(b, 0, 0))   # every row
//   y = select_scatter(b, s, 0, 0)           y = b
// so a scatter into such a base is never removed.
bool Walk::scatter_base_overlaps(NodeId j) const {
  const Node& sc = g_.at(j);
  if (sc.self == kNoNode) return false;
  const TensorValue* base = value(rep(sc.self));
  return base && g_.geometries().at(base->geom).has_internal_overlap();
}

// The scatter's users read its base from now on, so its storage joins the
// base's class: every later read of the scatter's result (and every view of
// it) is a read of the base's memory.
void Walk::remove_scatter(NodeId j) {
  Decision& d = decisions_[static_cast<size_t>(j)];
  const Node& sc = g_.at(j);
  NodeId base = rep(sc.self);
  d.action = Action::kRemoveScatter;
  d.reason = Reason::kDone;
  d.replacement = base;
  rep_[static_cast<size_t>(j)] = base;
  const TensorValue* mine = value(j);
  const TensorValue* base_value = value(base);
  if (mine && base_value) classes_.merge(base_value->storage, mine->storage);
}

// A removed scatter is only a no-op if, in the rewritten graph, its source
// already is the very memory it would write: same class as its base and
// exactly the geometry the inverted view has there. The stock pass assumes
// this from geometry alone; we check it, and keep any scatter where it fails.
std::vector<NodeId> Walk::unsound_removals() {
  std::vector<NodeId> bad;
  for (NodeId j = 0; j < static_cast<NodeId>(g_.size()); ++j) {
    const Node& sc = g_.at(j);
    if (decisions_[static_cast<size_t>(j)].action != Action::kRemoveScatter) continue;
    NodeId base_node = rep(sc.self);
    NodeId src_node = sc.scatter_src == kNoNode ? kNoNode : rep(sc.scatter_src);
    const TensorValue* base = value(base_node);
    const TensorValue* src = src_node == kNoNode ? nullptr : value(src_node);
    bool ok = base && src && !scatter_base_overlaps(j) &&
              classes_.root(base->storage) == classes_.root(src->storage);
    if (ok) {
      auto base_geom = effective_geom(base_node);
      auto src_geom = effective_geom(src_node);
      auto replay = base_geom ? inverted_view(sc, *base_geom) : std::nullopt;
      ok = replay && src_geom && replay->same_elements(*src_geom) &&
           (sc.scatter.kind != ScatterKind::kAsStrided || replay->elements_within(*base_geom));
    }
    if (!ok) bad.push_back(j);
  }
  return bad;
}

}  // namespace fxinplace::core
