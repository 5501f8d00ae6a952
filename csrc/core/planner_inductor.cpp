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
//
// Inductor executes its own contract, not FX's one node after another, so a
// rewrite sound as FX can still be wrong as Inductor runs it. Six hazards are
// refused (inductor_refuses_write, scatter_is_in_place_already):
//
// 1. A write through a dtype view. Inductor lowers `copy_` between dtypes as
//    a value conversion, and has no indexer for writes through a DtypeView:
//      y = view.dtype(buf_f32, int32); s = diagonal_scatter(y, src_i32)
//      -> diagonal(y).copy_(src_i32)      # Inductor stores float(7) = 0x40e00000, not 7
//    so no write whose target's dtype differs from its storage's.
//
// 2. A fused read of the buffer being written. Inductor generates one loop
//    for a write and computes the value written inside it, loading the
//    producers' operands there. The functional graph writes only fresh
//    buffers (and graph inputs, whose reads by name Inductor realizes before
//    mutating them); in place, a producer may read the written buffer:
//      x1 = index_put(x, idx, v)           index_put_(x, idx, v)      # x1 is x now
//      a = add(x1, flip(x1, [0]))    ->    a = add(x, flip(x, [0]))
//      copy_(x, a)                         copy_(x, a)   # one loop: x[k] = x[k] + x[n-1-k]
//    The loop stores x[k] before it loads x[n-1-k] for k >= n/2. So a write
//    is refused when a value Inductor may compute inside the loop of a write
//    into the same buffer (the write itself, or a later write-back copy_ into
//    it) reads the buffer at other elements than the iteration writes: any
//    read for an indexed write; for an elementwise one, any read but a
//    pointwise chain from the destination's own elements.
//      _foreach_add([x], [flip(x)]); copy_(x, ys[0])  -> _foreach_add_([x], [flip(x)])  # same hazard
//
// 3. A scatter removed as a no-op (its source already lives in its base)
//    makes its result the base's memory: refused when a later write-back into
//    the base would reach a read of the result, or the result is returned
//    while the base is a graph input (an output aliasing an input):
//      y = diagonal_scatter(x, diagonal(x)); copy_(x, full_like(x, 2)); return y
//    keeps the scatter (removed, y would read 2s and alias x).
//
// 4. A returned view with no elements of a buffer written in place. Inductor
//    returns such a view of a buffer it sees mutated as a fresh empty tensor
//    (its zero-size view has no indexer to reinterpret the buffer with),
//    where the functional graph returns a view of a fresh full-size buffer:
//      y = index_put(x2, idx, v); return (slice(y, 0, 0, 0),)
//      -> index_put_(x2, idx, v); return (slice(x2, 0, 0, 0),)   # storage: 0 bytes
//    A later graph that reads the storage around the view (as_strided with
//    an offset, as eager allows) then raises. Refused when the result's
//    memory is returned through such a view.
//
// 5. A write through a view Inductor runs as a library kernel. Inductor
//    generates no code for complex tensors: it runs every op on them,
//    views included, as a library kernel, and a view so run is a new tensor
//    to its scheduler, which does not order a write through it as a write of
//    the base:
//      b = as_strided_scatter(x, ...)        # complex64
//      y = index_put(squeeze(b[1:]), i, v)   -> index_put_(squeeze(b[1:]), i, v)
//      copy_(x, scatter(b, y))               -> copy_(x, b)   # scheduled before index_put_
//    So no write through a view Inductor runs opaquely (nor a scatter's
//    write through the view it replays, when the scatter is so run).
//
// 6. An auto_functionalized base that is a view of code Inductor has not put
//    in a buffer. Inductor lowers such a view (a reshape of fused code) as a
//    lazy view of that code. Cloned, the base's later users read a fresh
//    buffer; written in place, they read the lazy view itself, and a dtype
//    view of it followed by as_strided (which the next auto_functionalized's
//    decomposition applies) has no lowering:
//      t = reshape(bitwise_or(a, b), [1])
//      af = auto_functionalized_v2(write_, _all_bases=[t])     # t in place
//      af2 = auto_functionalized_v2(negate_, _all_bases=[view.dtype(af[1], f64)])
//      -> as_strided(view.dtype(t, f64), ...)   # "unrealized as_strided"
//    So a base that is a view, whose memory (before or after the op) is read
//    through a dtype view, is written in place only when the root of its
//    view chain is realized (Inductor's is_node_realized: an input, a library
//    kernel's result, ...): then the view is a plain reinterpretation.
#include <algorithm>

#include "planner_walk.h"

namespace fxinplace::core {

void Walk::summarise_for_inductor() {
  if (!options_.inductor) return;
  scatter_parent_.assign(g_.size(), kNoNode);
  written_back_as_.assign(g_.size(), kNoNode);
  storage_dtype_.assign(static_cast<size_t>(g_.num_storages()), -1);
  seen_aligned_.assign(g_.size(), 0);
  seen_any_.assign(g_.size(), 0);
  dtype_viewed_.clear();
  for (NodeId j = 0; j < static_cast<NodeId>(g_.size()); ++j) {
    const Node& n = g_.at(j);
    for (const TensorValue& v : n.results) {
      if (v.storage < 0) continue;
      int32_t& dtype = storage_dtype_[static_cast<size_t>(v.storage)];
      if (dtype < 0) dtype = v.dtype;
      if (dtype != v.dtype) dtype_viewed_.push_back(v.storage);
    }
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
  if (scatter_base_overlaps(i)) return false;
  NodeId base = rep(sc.self);
  NodeId src = rep(sc.scatter_src);
  const TensorValue* b = value(base);
  const TensorValue* s = value(src);
  if (!b || !s || b->dtype != s->dtype || classes_.root(b->storage) != classes_.root(s->storage))
    return false;
  auto base_geom = effective_geom(base);
  auto src_geom = effective_geom(src);
  auto replay = base_geom ? inverted_view(sc, *base_geom) : std::nullopt;
  if (!replay || !src_geom || !replay->same_elements(*src_geom)) return false;
  // Removed, the result is the base's memory (hazard 3 above).
  const TensorValue* r = value(i);
  if (!r) return false;
  AliasClass& result_class = classes_.of(r->storage);
  AliasClass& base_class = classes_.of(b->storage);
  if (base_class.is_input() && result_class.returned) return false;
  NodeId last_read = result_class.last_read;
  if (!result_class.scatter_reads.empty()) last_read = std::max(last_read, result_class.scatter_reads.back());
  for (NodeId back : base_class.write_backs)
    if (back > i && g_.at(back).written_value != i && last_read >= back) return false;
  return !later_write_backs_read_elsewhere(i, {classes_.root(b->storage), classes_.root(r->storage)}, i,
                                           base);
}

std::optional<Decision> Walk::inductor_refuses_op(NodeId i) const {
  if (!options_.inductor) return std::nullopt;
  const Node& node = g_.at(i);
  if (!inductor_may_write(node)) return refuse(Reason::kCompilerFuses);
  if (node.compiler_lacks_inplace) return refuse(Reason::kNoCompilerInplaceLowering);
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
  if (g_.at(i).compiler_lacks_inplace) return refuse(Reason::kNoCompilerInplaceLowering);
  if (holder != kNoNode && written_back_as_[static_cast<size_t>(holder)] == slot.target) return std::nullopt;
  return refuse(Reason::kForeachIntoIntermediate);
}

std::optional<Decision> Walk::inductor_refuses_write(NodeId i, const WriteSlot& slot, NodeId holder,
                                                     StorageId result_storage) {
  if (!options_.inductor) return std::nullopt;
  const Node& node = g_.at(i);
  NodeId target = rep(slot.target);
  const TensorValue* tv = value(target);
  if (!tv) return std::nullopt;
  if (tv->dtype != storage_dtype_[static_cast<size_t>(tv->storage)])
    return refuse(Reason::kInductorDtypeView);
  // Hazard 5: a write through a view Inductor runs as a library kernel: the
  // target's own view chain, or the view a scatter is written through.
  for (NodeId c = target; c != kNoNode; c = g_.at(c).view_of)
    if (g_.at(c).compiler_opaque && g_.at(c).view_of != kNoNode) return refuse(Reason::kInductorOpaqueView);
  if (node.kind == NodeKind::kOp && node.scatter.kind != ScatterKind::kNone && node.compiler_opaque)
    return refuse(Reason::kInductorOpaqueView);
  // Hazard 6: an auto_functionalized base viewing code not realized, whose
  // memory is read through a dtype view.
  if (node.kind == NodeKind::kAutoFunctionalized && g_.at(target).view_of != kNoNode) {
    NodeId root = target;
    while (g_.at(root).view_of != kNoNode) root = g_.at(root).view_of;
    if (!g_.at(root).realized && read_as_other_dtype({tv->storage, result_storage}))
      return refuse(Reason::kInductorLazyViewBase);
  }
  // Hazard 4: a returned view with no elements of the buffer written.
  if (result_storage >= 0 && classes_.of(result_storage).returned_empty)
    return refuse(Reason::kInductorEmptyOutputView);
  // Hazard 2 in the write's own loop: ops Inductor generates code for (not
  // library kernels, collectives or custom ops, whose operands are buffers).
  FusedWrite own;
  own.buffer = {classes_.root(tv->storage)};
  std::vector<std::pair<NodeId, bool>> values;
  if (node.kind == NodeKind::kForeach && !node.collective) {
    // Element k of the op writes slot k's target; what the other elements
    // compute runs in the same kernel, so their reads of it are never aligned.
    own.elementwise = true;
    own.dest = effective_geom(target);
    own.shape = tv->shape;
    auto k = static_cast<int32_t>(&slot - node.slots.data());
    std::vector<NodeId> targets;
    for (const WriteSlot& s : node.slots) targets.push_back(s.target);
    for (size_t p = 0; p < node.operands.size(); ++p) {
      NodeId op = node.operands[p];
      auto found = std::find(targets.begin(), targets.end(), op);
      if (found != targets.end()) {
        targets.erase(found);
        continue;
      }
      int32_t element = node.operand_elements.empty() ? -2 : node.operand_elements[p];
      values.emplace_back(op, element == k || element == -1);
    }
  } else if (node.kind == NodeKind::kOp && !node.compiler_extern && !node.collective) {
    if (node.scatter.kind != ScatterKind::kNone && node.scatter_src != kNoNode) {
      auto base = effective_geom(target);
      const TensorValue* src = value(node.scatter_src);
      own.elementwise = true;
      own.dest = base ? inverted_view(node, *base) : std::nullopt;
      own.shape = src ? src->shape : -1;
      values.emplace_back(node.scatter_src, true);
    } else if (node.indexed_write) {
      bool skipped_self = false;
      for (NodeId op : node.operands) {
        if (op == slot.target && !skipped_self)
          skipped_self = true;
        else
          values.emplace_back(op, false);
      }
    }
  }
  if (!values.empty() && fused_loop_reads_elsewhere(own, values)) return refuse(Reason::kInductorFusedRead);
  // Hazard 2 in the loops of later write-backs into the buffer, which now
  // also holds the result.
  std::vector<StorageId> buffer = own.buffer;
  if (result_storage >= 0) buffer.push_back(classes_.root(result_storage));
  if (later_write_backs_read_elsewhere(i, buffer, holder, target)) return refuse(Reason::kInductorFusedRead);
  return std::nullopt;
}

bool Walk::read_as_other_dtype(const std::vector<StorageId>& storages) {
  for (StorageId viewed : dtype_viewed_)
    for (StorageId s : storages)
      if (s >= 0 && classes_.root(viewed) == classes_.root(s)) return true;
  return false;
}

bool Walk::later_write_backs_read_elsewhere(NodeId i, const std::vector<StorageId>& buffer, NodeId holder,
                                            NodeId written) {
  for (StorageId root : buffer) {
    for (NodeId back : classes_.of(root).write_backs) {
      const Node& wb = g_.at(back);
      if (back <= i || wb.written_value == kNoNode || wb.written_input == kNoNode) continue;
      // A write-back of the value itself copies it onto itself and goes.
      if (holder != kNoNode && (wb.written_value == holder || rep(wb.written_value) == holder)) continue;
      // A loop writing another input of the storage, none of whose elements
      // the write at i touches (k = kv[0] written, v = kv[1] written back),
      // reads the write's memory, if at all, without writing it.
      if (wb.written_input != written && g_.at(wb.written_input).kind == NodeKind::kInput &&
          elsewhere_than(wb.written_input, written))
        continue;
      const TensorValue* in = value(wb.written_input);
      if (!in) return true;
      FusedWrite w;
      w.buffer = buffer;
      w.elementwise = true;
      w.dest = effective_geom(wb.written_input);
      w.shape = in->shape;
      if (fused_loop_reads_elsewhere(w, {{wb.written_value, true}})) return true;
    }
  }
  return false;
}

// Walks back from the written values through the nodes Inductor may compute
// inside the write's loop (ops it generates code for, still functional),
// looking for a read of `w.buffer`. A read is harmless only when iteration k
// of the loop reads exactly the element it writes: a chain of same-shape
// pointwise ops from the write down to a read with the destination's own
// elements at the same positions. Anything else (a flip, a transpose, a view,
// a reduction, a broadcast, an indexed write's values) is a hazard.
bool Walk::fused_loop_reads_elsewhere(const FusedWrite& w,
                                      const std::vector<std::pair<NodeId, bool>>& values) {
  if (++stamp_ == 0) {  // wrapped: forget every mark
    std::fill(seen_aligned_.begin(), seen_aligned_.end(), 0);
    std::fill(seen_any_.begin(), seen_any_.end(), 0);
    stamp_ = 1;
  }
  // Past this many reads examined, the answer is the cautious one.
  size_t budget = size_t{1} << 16;
  std::vector<std::pair<NodeId, bool>> pending;  // (node computed in the loop, reached elementwise)
  auto in_buffer = [&](NodeId n) {
    for (const TensorValue& v : g_.at(n).results)
      if (std::find(w.buffer.begin(), w.buffer.end(), classes_.root(v.storage)) != w.buffer.end())
        return true;
    return false;
  };
  // `operand`, read by a consumer that is reached elementwise (`aligned`),
  // pointwise itself and of shape `shape`: true on a hazard.
  auto examine = [&](NodeId operand, bool aligned, bool pointwise, int32_t shape) {
    if (budget-- == 0) return true;
    NodeId o = rep(operand);
    const TensorValue* v = value(o);
    bool same_index = aligned && pointwise && v && v->shape == shape;
    if (in_buffer(o)) {
      if (!same_index || !w.dest) return true;
      auto geom = effective_geom(o);
      return !geom || !geom->same_elements(*w.dest);
    }
    const Node& n = g_.at(o);
    bool kept = decisions_[static_cast<size_t>(o)].action == Action::kKeep;
    bool in_loop = (n.kind == NodeKind::kOp && !n.compiler_extern && !n.collective && kept) ||
                   n.kind == NodeKind::kGetItem;
    if (!in_loop || seen_any_[static_cast<size_t>(o)] == stamp_) return false;
    std::vector<uint32_t>& seen = same_index ? seen_aligned_ : seen_any_;
    if (seen[static_cast<size_t>(o)] == stamp_) return false;
    seen[static_cast<size_t>(o)] = stamp_;
    pending.emplace_back(o, same_index);
    return false;
  };
  for (const auto& [v, aligned] : values)
    if (examine(v, w.elementwise && aligned, true, w.shape)) return true;
  while (!pending.empty()) {
    auto [n, aligned] = pending.back();
    pending.pop_back();
    const Node& node = g_.at(n);
    if (!node.reads_memory) continue;
    const TensorValue* nv = value(n);
    int32_t shape = nv ? nv->shape : -1;
    if (node.kind == NodeKind::kGetItem && node.item_of != kNoNode) {
      // Item k of a functional `_foreach_*` op: its element k, computed
      // pointwise from the operands at k (Inductor inlines it when the op's
      // users are foreach ops themselves).
      const Node& f = g_.at(node.item_of);
      if (f.kind == NodeKind::kForeach && !f.collective &&
          decisions_[static_cast<size_t>(node.item_of)].action == Action::kKeep) {
        for (size_t p = 0; p < f.operands.size(); ++p) {
          int32_t element = f.operand_elements.empty() ? node.item_index : f.operand_elements[p];
          bool mine = element == node.item_index || element == -1;
          if (mine && examine(f.operands[p], aligned && !f.operand_elements.empty(), true, shape))
            return true;
        }
        continue;
      }
    }
    bool pointwise = node.kind == NodeKind::kOp && node.view == ViewKind::kNone && node.pointwise;
    for (NodeId op : node.operands)
      if (examine(op, aligned, pointwise, shape)) return true;
  }
  return false;
}

}  // namespace fxinplace::core
