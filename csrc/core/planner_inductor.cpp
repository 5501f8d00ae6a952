// The Inductor policy (PlanOptions::inductor): which rewrites a graph that
// goes on to Inductor's lowering may get. Inductor's contract after
// AOTAutograd is a functional graph, the `copy_` epilogue, and only the
// mutations its own re-inplacing makes; its scheduler fuses the ops it
// generates and reuses their buffers, so an FX-level `foo_` would only block
// fusion (or have no lowering at all: rsqrt_, tanh_, addmm_). What it does
// want written in place, each still passing every soundness check of the walk:
//
//   y = index_put(x, idx, v)       -> index_put_(x, idx, v)       (indexed writes)
//   y = all_reduce(x, "sum", g)    -> all_reduce_(x, "sum", g)    (collectives)
//   y = slice_scatter(x, s, 0, 2)  -> slice(x, 0, 2).copy_(s)     (when worth it, below)
//   ys = _foreach_add(xs, 1); copy_(xs[k], ys[k])  -> _foreach_add_(xs, 1)
//   auto_functionalized(_v2) bases not cloned, and ops Inductor runs as
//   library kernels (no fusion lost by writing in place).
#include "planner_walk.h"

namespace fxinplace::core {

void Walk::summarise_for_inductor() {
  if (!options_.inductor) return;
  scatter_parent_.assign(g_.size(), kNoNode);
  written_back_as_.assign(g_.size(), kNoNode);
  for (NodeId j = 0; j < static_cast<NodeId>(g_.size()); ++j) {
    const Node& n = g_.at(j);
    if (n.kind == NodeKind::kWriteBack && n.written_value != kNoNode && n.self == n.written_input)
      written_back_as_[static_cast<size_t>(n.written_value)] = n.written_input;
    // scatter(B, scatter(view(B), src)): the inner scatter is part of the
    // outer one's write (Inductor canonicalises the pair into one scatter).
    if (n.kind != NodeKind::kOp || n.scatter.kind == ScatterKind::kNone || n.scatter_src == kNoNode) continue;
    const Node& inner = g_.at(n.scatter_src);
    if (inner.kind == NodeKind::kOp && inner.scatter.kind != ScatterKind::kNone && inner.self != kNoNode &&
        g_.at(inner.self).view_of == n.self)
      scatter_parent_[static_cast<size_t>(n.scatter_src)] = j;
  }
}

bool inductor_may_write(const Node& op) {
  return op.indexed_write || op.collective || op.compiler_extern || op.scatter.kind != ScatterKind::kNone;
}

// A scatter whose source already lives in place in its base (an earlier write
// went there: an auto_functionalized base, a view written through) copies it
// onto itself: removed, as the walk removes the scatters it finds while
// checking a write. The verifier proves it again (unsound_removals).
//   a = exp(x); af = auto_functionalized(op, a=a[0], b=a[1])   # both rows in place
//   s0 = select_scatter(a, af[1], 0, 0); s1 = select_scatter(s0, af[2], 0, 1)
// s0 goes while the walk checks the write of row 1, which makes s1 read `a`
// itself; s1 goes here. (Kept functional, it would copy all of `a`.)
bool Walk::scatter_is_in_place_already(NodeId i) {
  const Node& sc = g_.at(i);
  if (kept_[static_cast<size_t>(i)] || sc.self == kNoNode || sc.scatter_src == kNoNode) return false;
  NodeId base = rep(sc.self);
  NodeId src = rep(sc.scatter_src);
  const TensorValue* b = value(base);
  const TensorValue* s = value(src);
  if (!b || !s || b->dtype != s->dtype || classes_.root(b->storage) != classes_.root(s->storage))
    return false;
  auto base_geom = effective_geom(base);
  auto src_geom = effective_geom(src);
  auto replay = base_geom ? inverted_view(sc, *base_geom) : std::nullopt;
  return replay && src_geom && replay->same_elements(*src_geom);
}

std::optional<Decision> Walk::inductor_refuses_op(NodeId i) const {
  if (!options_.inductor) return std::nullopt;
  const Node& node = g_.at(i);
  if (!inductor_may_write(node)) return refuse(Reason::kCompilerFuses);
  if (node.scatter.kind == ScatterKind::kNone) return std::nullopt;
  if (!scatter_worth_writing(i)) return refuse(Reason::kScatterKeptForFusion);
  return std::nullopt;
}

// Inductor's own rule: a scatter written in place realizes its base and its
// result in memory, which blocks fusing it with their producers and users.
// Worth it only when that happens anyway: the view is as_strided or diagonal
// (Inductor lowers those scatters as mutations whatever the form), both base
// and result are realized, or the result is written back into the base, a
// graph input (the copy_ epilogue keeps both in memory). A chain of nested
// scatters is judged by its outermost one.
bool Walk::scatter_worth_writing(NodeId i) const {
  NodeId outer = i;
  bool always_mutating = false;
  for (NodeId s = i; s != kNoNode; s = scatter_parent_[static_cast<size_t>(s)]) {
    ScatterKind kind = g_.at(s).scatter.kind;
    always_mutating = always_mutating || kind == ScatterKind::kAsStrided || kind == ScatterKind::kDiagonal;
    outer = s;
  }
  if (always_mutating) return true;
  const Node& o = g_.at(outer);
  if (o.self == kNoNode) return false;
  if (g_.at(o.self).realized && o.realized) return true;
  NodeKind base_kind = g_.at(o.self).kind;
  return (base_kind == NodeKind::kInput || base_kind == NodeKind::kConstant) &&
         written_back_as_[static_cast<size_t>(outer)] == o.self;
}

// Inductor fuses a chain of `_foreach_*` ops into one kernel per element; in
// place, each op of the chain would be a kernel of its own. So, as Inductor's
// own pass: only an op whose result the epilogue copies straight back into
// the list element it came from (the optimizer's last update of its state).
// A list collective (all_reduce_coalesced) is no fusible math: any slot.
std::optional<Decision> Walk::inductor_refuses_foreach_slot(NodeId i, const WriteSlot& slot,
                                                            NodeId holder) const {
  if (!options_.inductor || g_.at(i).collective) return std::nullopt;
  if (holder != kNoNode && written_back_as_[static_cast<size_t>(holder)] == slot.target) return std::nullopt;
  return refuse(Reason::kForeachIntoIntermediate);
}

}  // namespace fxinplace::core
