// Where moved memory lands, and who would notice: re-inplacing gives a
// result its buffer's layout, which views of it, results computed from it and
// graph outputs may show. Also where each node's memory really is once earlier
// rewrites moved it (effective_geom), for the overlap checks.
#include <algorithm>
#include <utility>

#include "planner_walk.h"

namespace fxinplace::core {

namespace {

// `offset` moved by as much as its parent moved from `from` to `to`.
std::optional<Extent> shift(const Extent& offset, const Extent& from, const Extent& to) {
  if (from == to) return offset;
  if (!offset.is_known() || !from.is_known() || !to.is_known()) return std::nullopt;
  auto distance = checked_add(offset.value(), -from.value());
  auto moved = distance && from.value() != INT64_MIN ? checked_add(to.value(), *distance) : std::nullopt;
  if (!moved) return std::nullopt;
  return Extent(*moved);
}

}  // namespace

// For each node: the strongest layout dependence among the tensors that view
// or address its memory, transitively; and those tensors, for the full walk.
void Walk::summarise_layout_uses() {
  layout_needs_.assign(g_.size(), LayoutUse::kLogical);
  layout_children_.assign(g_.size(), {});
  viewed_as_another_dtype_.assign(g_.size(), false);
  for (NodeId u = static_cast<NodeId>(g_.size()) - 1; u >= 0; --u) {
    const Node& user = g_.at(u);
    for (NodeId op : user.absolute_layout_reads) {
      // Never lands (derive_geom: the node does not alias it), so a move is visible.
      layout_children_[static_cast<size_t>(op)].push_back(u);
      layout_needs_[static_cast<size_t>(op)] = LayoutUse::kAbsolute;
    }
    if (user.layout_parent == kNoNode) continue;
    auto parent = static_cast<size_t>(user.layout_parent);
    layout_children_[parent].push_back(u);
    LayoutUse need = std::max(user.layout_use, layout_needs_[static_cast<size_t>(u)]);
    layout_needs_[parent] = std::max(layout_needs_[parent], need);
    // (A tensor view only: a read of the strides, sym_stride, is no dtype view.)
    bool another_dtype = value(u) && value(user.layout_parent) && reads_as_another_dtype(u);
    viewed_as_another_dtype_[parent] =
        viewed_as_another_dtype_[parent] || another_dtype || viewed_as_another_dtype_[static_cast<size_t>(u)];
  }
  summarise_computed_layouts();
  summarise_offset_reads();
}

// offset_read_[n]: as_strided (as_strided_scatter, an auto_functionalized_v2
// base viewed through as_strided) reads n's storage offset, through views of
// n and through scatters into n and copies of it, whose results keep self's
// geometry, storage offset included (ATen clones self with its strides and
// offset). A computed result starts at offset 0 whatever its
// inputs', so the chain stops there. Random pipelines seed 899:
//   d = floor_divide(x[1:], 2)         # fresh: offset 0; in place: x[1:]'s, 1
//   s = scatter(d, 0, i, ones)         # in place into d: s at offset 1 too
//   t = select_scatter(s, v, 0, 3)     # t: s's geometry, offset included
//   as_strided_scatter(t, w, [5], [3], 0)   # from t's storage start: 1 element off
// layout_differs compares strides only; this is the offset's own check.
void Walk::summarise_offset_reads() {
  offset_read_.assign(g_.size(), false);
  for (NodeId u = static_cast<NodeId>(g_.size()) - 1; u >= 0; --u) {
    const Node& user = g_.at(u);
    for (NodeId op : user.absolute_layout_reads) offset_read_[static_cast<size_t>(op)] = true;
    if (user.layout_use == LayoutUse::kAbsolute && user.layout_parent != kNoNode)
      offset_read_[static_cast<size_t>(user.layout_parent)] = true;
    if (!offset_read_[static_cast<size_t>(u)]) continue;
    if (user.layout_parent != kNoNode && aliases_parent(u))
      offset_read_[static_cast<size_t>(user.layout_parent)] = true;
    if (NodeId source = geometry_source(u); source != kNoNode)
      offset_read_[static_cast<size_t>(source)] = true;
  }
}

// Would `moved`'s value start at another storage offset in `home`'s memory?
// Unknown counts as yes.
bool Walk::offset_moves(NodeId moved, NodeId home) {
  auto to = effective_geom(home);
  return !to || !value(moved) || !(own_geom(moved).offset == to->offset);
}

// Re-inplacing gives a result `self`'s layout. Views of it are followed
// exactly by layout_change_is_visible; this covers everything else: a result
// computed from it (a pointwise op's output takes its input's layout) that is
// returned or reaches a layout-dependent view.
//
//   z = masked_scatter(y, m, s)   # functional: contiguous; in place: y's (transposed) layout
//   w = mul(z, 2)                 # w follows z's layout
//   v = view(w, [-1])             # fails on the transposed layout
//
// layout_reaches_[n]: n's layout may show through a computed result. One
// backward walk: consumers come after what they read. A scatter's output is
// laid out like its base, so reading a tensor as the scatter's source does
// not pass its layout on.
void Walk::summarise_computed_layouts() {
  layout_reaches_.assign(g_.size(), false);
  strides_reach_.assign(g_.size(), false);
  for (NodeId c = static_cast<NodeId>(g_.size()) - 1; c >= 0; --c) {
    const Node& consumer = g_.at(c);
    auto ci = static_cast<size_t>(c);
    bool consumer_shows =
        consumer.kind == NodeKind::kOutput || layout_reaches_[ci] || layout_needs_[ci] != LayoutUse::kLogical;
    bool consumer_needs_strides = strides_reach_[ci] || viewed_as_another_dtype_[ci];
    for (NodeId op : consumer.operands) {
      auto oi = static_cast<size_t>(op);
      if (consumer.layout_parent == op) {
        // A view of `op` (or as_strided_scatter addressing it): its own layout
        // needs are followed exactly elsewhere; what is computed from it is not.
        layout_reaches_[oi] =
            layout_reaches_[oi] || layout_reaches_[ci] || consumer.kind == NodeKind::kOutput;
        strides_reach_[oi] = strides_reach_[oi] || strides_reach_[ci];
      } else if (consumer.scatter.kind != ScatterKind::kNone && consumer.scatter_src == op &&
                 consumer.self != op) {
        continue;
      } else {
        layout_reaches_[oi] = layout_reaches_[oi] || consumer_shows;
        strides_reach_[oi] = strides_reach_[oi] || consumer_needs_strides;
      }
    }
  }
}

// Does moving `moved`'s result into `home` give it another layout (strides of
// dims that may hold more than one element)? Unknown counts as yes.
bool Walk::layout_differs(NodeId moved, NodeId home) {
  auto to = effective_geom(home);
  if (!to) return true;
  return !own_geom(moved).same_layout(*to);
}

// Would anything tell that `moved`'s value was computed in `home`'s memory:
// its views, results computed from it, or a read of its storage offset? One
// check for every kind of write, an op's result or a `_foreach_*` element
// (random pipelines seed 11928: an element's offset was not checked):
//   fx = _foreach_add([z], [r])                  # z = zero(x1), x1 = t[:, 1:-1]
//   s = slice_scatter(fx[0], v, 1, 0, 8)        # keeps fx[0]'s offset: 0, or x1's
//   as_strided(s, [2], [1], 1)                   # in place: reads t, not s
//
// A stride-dependent view of a computed result sees even the strides of its
// size-1 dims, which some kernels copy as they find them (clone keeps a dense
// input's strides); layout_differs passes over those, so they are compared
// literally where such a view is reached (random pipelines seed 191751):
//   c = clone(select(unfold(...)))  # sizes (1, 1), strides (0, 0)
//   s = sub(c, -1)                   # functional: strides (1, 1); in place: (0, 0)
//   k = clone(s)                     # keeps s's strides
//   v = view(k, torch.int16)         # stride(-1) must be 1: raises in place
bool Walk::move_is_visible(NodeId moved, NodeId home) {
  auto m = static_cast<size_t>(moved);
  return layout_change_is_visible(moved, home) || (layout_reaches_[m] && layout_differs(moved, home)) ||
         (strides_reach_[m] && strides_differ(moved, home)) || (offset_read_[m] && offset_moves(moved, home));
}

// Does moving `moved`'s result into `home` give it other strides, size-1 dims
// included? Unknown counts as yes.
bool Walk::strides_differ(NodeId moved, NodeId home) {
  auto to = effective_geom(home);
  return !to || !value(moved) || own_geom(moved).strides != to->strides;
}

// Would anything notice that `moved`'s value now lives in `home`'s layout?
// Walks the tensors that view or address its memory, working out where each
// lands; visible as soon as one cannot land (a reshape the new layout cannot
// express, as_strided on moved memory, a view assumed stride-dependent).
bool Walk::layout_change_is_visible(NodeId moved, NodeId home) {
  if (layout_needs_[static_cast<size_t>(moved)] == LayoutUse::kLogical) return false;
  const TensorValue* from = value(moved);
  auto to = effective_geom(home);
  if (!from || !to) return true;
  const Geometry& old_geom = g_.geometries().at(from->geom);
  if (old_geom.sizes != to->sizes) return true;
  // Views are relocated element by element below, keeping their own strides in
  // size-1 dims; ATen's views take those from the parent, and a stride-dependent
  // view checks them as numbers:
  //   y = add(c, 2.0)           # c: sizes (1, 1), strides (2, 2); y: strides (1, 1)
  //   v = y[:, 0:1].view(torch.float16)   # in place (y in c's memory): stride(-1) is 2, raises
  // So a stride-dependent use below needs the strides literally unchanged.
  if (old_geom.strides != to->strides && layout_needs_[static_cast<size_t>(moved)] >= LayoutUse::kStrides) {
    return true;
  }
  // Nor can the recorded strides be trusted in a size-1 dim of a symbolic
  // trace: torch's symbolic clone() of an input of sizes (1,) and strides (s0,)
  // records strides (1,), eager's keeps (2,) when called with x[::2] (random
  // pipelines seed 6201):
  //   c = clone(x); y = mul(c, 2)    # y: (1,) in eager; in place (c's memory): (2,)
  //   v = y.view(torch.int32)        # stride(-1) must be 1: raises in place
  // A size-0 dim likewise (seed 120648: clone of x0.diagonal() for an x0 of
  // sizes (0, 1) records strides (1,), eager keeps the diagonal's (2,)).
  if (symbolic_ && layout_needs_[static_cast<size_t>(moved)] >= LayoutUse::kStrides &&
      std::any_of(to->sizes.begin(), to->sizes.end(), [](const Extent& e) { return e.is(0) || e.is(1); })) {
    return true;
  }
  struct Pending {
    NodeId node;
    Geometry old_parent, new_parent;
  };
  std::vector<Pending> pending;
  for (NodeId c : layout_children_[static_cast<size_t>(moved)]) pending.push_back({c, old_geom, *to});
  while (!pending.empty()) {
    Pending p = std::move(pending.back());
    pending.pop_back();
    if (p.old_parent == p.new_parent) continue;
    auto landed = derive_geom(p.node, p.old_parent, p.new_parent);
    if (!landed) return true;
    if (!value(p.node)) continue;  // a read of numbers: nothing views it
    const Geometry& own = g_.geometries().at(value(p.node)->geom);
    for (NodeId c : layout_children_[static_cast<size_t>(p.node)]) pending.push_back({c, own, *landed});
  }
  return false;
}

// Does `t` address all of its buffer, as a tensor of its own would? A result
// written into a part of a buffer and returned would be a view with a larger
// storage (and a _base) where the program returns a tensor of its own; the
// next compiled graph, taking it as an input, sees that storage:
//   u = unfold(mm, 0, 2, 2)   # rows 0-5 of mm's 7
//   y = abs(u)                # returned: its own 42 elements
//   abs_(u); return u         # a view of mm's 49 (AOTAutograd then replays
//                             # views of the next graph on mm: wrong shapes)
// Unknown (symbolic sizes) counts as no.
bool Walk::covers_its_buffer(NodeId t) {
  // Each view step keeps every element when it reshapes (view, _unsafe_view:
  // same numel by definition) or only reorders, adds or drops size-1 dims (the
  // sizes other than 1 are the same multiset: permute, transpose, unsqueeze,
  // alias); symbolic sizes compare by identity. Otherwise count the elements.
  auto big_sizes = [](const Geometry& g) {
    std::vector<Extent> v;
    for (const Extent& e : g.sizes)
      if (!e.is(1)) v.push_back(e);
    return v;
  };
  for (NodeId c = t; g_.at(c).view_of != kNoNode; c = g_.at(c).view_of) {
    NodeId p = g_.at(c).view_of;
    if (g_.at(c).layout_use == LayoutUse::kReshape) continue;
    if (!value(c) || !value(p)) return false;
    auto mine = big_sizes(own_geom(c));
    auto theirs = big_sizes(own_geom(p));
    if (mine.size() == theirs.size() && std::is_permutation(mine.begin(), mine.end(), theirs.begin()))
      continue;
    auto n = own_geom(c).numel();
    auto m = own_geom(p).numel();
    if (!n || !m || *n != *m || own_geom(c).offset != own_geom(p).offset) return false;
  }
  return true;
}

// Where view-like node `u` lands when its parent moves from `old_parent` to
// `new_parent` (same logical tensor, other layout); nullopt if it cannot.
std::optional<Geometry> Walk::derive_geom(NodeId u, const Geometry& old_parent, const Geometry& new_parent) {
  const Node& node = g_.at(u);
  const TensorValue* v = value(u);
  if (!v && !node.reads_memory) {
    // A read of numbers (sym_stride, sym_storage_offset): it sees the move
    // when what it reads changes. Nothing views it, so the parent stands in.
    bool same = node.layout_use == LayoutUse::kStrides ? old_parent.strides == new_parent.strides
                                                       : old_parent.offset == new_parent.offset;
    return same ? std::optional<Geometry>(new_parent) : std::nullopt;
  }
  if (!v || !aliases_parent(u)) return std::nullopt;  // as_strided_scatter into moved memory
  const Geometry& own = g_.geometries().at(v->geom);
  // A move of the storage offset alone (the same sizes and strides: a fresh
  // result written into v = kv[1], whose offset is a symbol of its own under
  // dynamic shapes) moves a view that starts where its parent starts to where
  // the parent now starts, its strides unchanged, whatever the extents' symbols:
  //   y = index_put(v, i, w)     # offset 0; in place: v's s12
  //   e = expand(y, ...)         # offset s12, strides as recorded
  const bool offset_only = old_parent.sizes == new_parent.sizes && old_parent.strides == new_parent.strides;
  if (offset_only && own.offset == old_parent.offset &&
      (node.layout_use == LayoutUse::kLogical || node.layout_use == LayoutUse::kReshape)) {
    Geometry g = own;
    g.offset = new_parent.offset;
    return g;
  }
  switch (node.layout_use) {
    case LayoutUse::kLogical:
      return relocate_view(own, old_parent, new_parent);
    case LayoutUse::kReshape: {
      auto strides = reshape_strides(new_parent, own.sizes);
      auto offset = shift(own.offset, old_parent.offset, new_parent.offset);
      if (!strides || !offset) return std::nullopt;
      Geometry g = own;
      g.strides = std::move(*strides);
      g.offset = *offset;
      return g;
    }
    case LayoutUse::kStrides: {
      // ATen checks these views' strides as numbers, size-1 dims included
      // (x.view(torch.float16) on a float32 x of sizes (1, 1) raises unless
      // stride(-1) == 1), so the parent's strides must stay literally the same.
      // A view that reads the memory as another dtype (view_as_complex,
      // view(dtype)) checks the storage offset too, and counts it in its own
      // elements (random pipelines seed 154723):
      //   e = exp(clamp(c[1:3]))   # fresh: offset 0; in place (c[1:3]'s memory): 1
      //   view_as_complex(e)       # "storage_offset divisible by 2": raises in place
      // so its parent stays at the same offset.
      Geometry same_place = old_parent;
      same_place.offset = new_parent.offset;
      auto offset = shift(own.offset, old_parent.offset, new_parent.offset);
      if (old_parent.strides != new_parent.strides || !same_place.same_elements(new_parent) || !offset) {
        return std::nullopt;
      }
      if (reads_as_another_dtype(u) && !(old_parent.offset == new_parent.offset)) return std::nullopt;
      Geometry g = own;
      g.offset = *offset;
      return g;
    }
    case LayoutUse::kAbsolute:
      break;
  }
  return std::nullopt;
}

// The geometry scatter `sc`'s view has when its base lies as `base`: what
// the frontend recorded for the scatter's own base (exact even for symbolic
// geometry), else a replay of the view (known geometries only).
std::optional<Geometry> Walk::inverted_view(const Node& sc, const Geometry& base) const {
  const auto& recorded = sc.scatter.view_on_recorded_base;
  if (recorded && value(sc.self) && own_geom(sc.self) == base) return *recorded;
  return replay_view(sc.scatter, base);
}

// Does view `u` read its parent's memory as another dtype (conj and
// negation bits aside)? Unknown counts as yes.
bool Walk::reads_as_another_dtype(NodeId u) const {
  NodeId p = g_.at(u).layout_parent;
  const TensorValue* mine = value(u);
  const TensorValue* theirs = p == kNoNode ? nullptr : value(p);
  if (!mine || !theirs || mine->dtype < 0 || theirs->dtype < 0) return true;
  constexpr int32_t kBits = kConjBit | kNegBit;
  return (mine->dtype & ~kBits) != (theirs->dtype & ~kBits);
}

// The tensor whose layout, storage offset included, `u`'s fresh result
// copies: a scatter's or the functional copy's self; for element k of
// _foreach_copy (its getitem), list element k (random pipelines seed 158191:
// an as_strided of _foreach_copy([p], [s])[0] reads p's storage offset, which
// index_put moved in place from 0 to its self's 2). kNoNode for any other node.
NodeId Walk::geometry_source(NodeId u) const {
  const Node& node = g_.at(u);
  if (node.kind == NodeKind::kGetItem && node.item_of != kNoNode) {
    const Node& multi = g_.at(node.item_of);
    if (multi.kind != NodeKind::kForeach || !multi.keeps_self_geometry) return kNoNode;
    for (const WriteSlot& slot : multi.slots)
      if (slot.item == node.item_index) return slot.target;
    return kNoNode;
  }
  if (!node.keeps_self_geometry || node.self == u) return kNoNode;
  return node.self;
}

// A view-like node shares its layout parent's storage; a consumer such as
// as_strided_scatter does not.
bool Walk::aliases_parent(NodeId u) const {
  NodeId p = g_.at(u).layout_parent;
  const TensorValue* mine = value(u);
  const TensorValue* theirs = p == kNoNode ? nullptr : value(p);
  return mine && theirs && mine->storage == theirs->storage;
}

// An operand in self's storage class is harmless when, where the tensors
// really live after the rewrites so far, it touches none of self's elements,
// or when the op is elementwise and it is exactly self's elements (each
// element is read before it is written). ATen itself rejects the latter at
// run time when both are dense and the strides differ, even on size-1 dims
// (it calls that a partial overlap), so those stay out of place; with
// symbolic geometry only identical layouts count.
bool Walk::operand_is_harmless(NodeId operand, NodeId self, bool elementwise) {
  // Geometries count elements of their own dtype, and the planner does not
  // know dtypes' widths: tensors of two dtypes cannot be compared at all. A
  // float view of a complex self's real parts (t.real, 0-d: offset 0, no dims)
  // has self's geometry but not its elements (random pipelines seed 3869);
  // its imaginary parts (offset 1 in floats) seem to miss self's offset 0 in
  // complex elements, yet are inside it (seed 172893).
  const int32_t bits = kConjBit | kNegBit;
  if ((value(operand)->dtype & ~bits) != (value(self)->dtype & ~bits)) return false;
  auto a = effective_geom(operand);
  auto b = effective_geom(self);
  if (!a || !b) return false;
  if (!a->may_overlap(*b)) return true;
  if (!elementwise) return false;
  // A symbolic trace's strides of size-1 dims need not be eager's (random
  // pipelines seed 162186: view(s[..., 1:3], [1, -1]) recorded with s's stride
  // s0 in dim 0, 2 in eager): equal as recorded, they may differ when run, and
  // ATen's overlap check compares them. Only the same tensor counts then.
  const bool size_one =
      std::any_of(a->sizes.begin(), a->sizes.end(), [](const Extent& e) { return e.is(1); });
  if (symbolic_ && size_one) return rep(operand) == rep(self);
  if (*a == *b) return true;
  if (!a->is_known() || !b->is_known()) return false;
  return a->same_elements(*b) && !(a->non_overlapping_and_dense() && b->non_overlapping_and_dense());
}

// Where a node's memory really is in the rewritten graph. A rewritten node
// (re-inplaced op, removed or copied scatter) now is its replacement's
// tensor; a view of a moved tensor lands as derive_geom says; a kept node
// whose fresh result is laid out as its self (a scatter, the functional copy:
// ATen clones self with its strides and offset) follows self's memory when
// self moved. nullopt when that cannot be worked out (the planner then stays
// cautious). Random pipelines seed 155342, a kept scatter between a move and
// an in-place write:
//   d = floor_divide(x, 2)            # in place: x's memory, storage offset 1
//   s = slice_scatter(d, v, 0, 0, 2)  # kept: fresh, but laid out as d: offset 1, not 0
//   p = index_put(s, i, w)            # in place into s: offset 1
//   as_strided(p, [2], [1], k)        # reads from p's storage start
std::optional<Geometry> Walk::effective_geom(NodeId n) {
  // Iterative (view chains can be long): climb to a node whose memory did not
  // move, then come back down, re-deriving each step's geometry.
  struct Step {
    NodeId node;
    NodeId laid_out_as;  // its geometry_source, or kNoNode where it views its layout parent
  };
  std::vector<Step> path;
  NodeId cur = n;
  while (true) {
    if (!value(cur)) return std::nullopt;
    NodeId up = rep(cur);
    NodeId laid_out_as = kNoNode;
    if (up == cur) {
      up = g_.at(cur).layout_parent;
      if (up == kNoNode || !aliases_parent(cur)) {
        laid_out_as = geometry_source(cur);
        if (laid_out_as == kNoNode) break;
        up = laid_out_as;
      }
    }
    path.push_back({cur, laid_out_as});
    cur = up;
  }
  Geometry g = own_geom(cur);
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    NodeId child = it->node;
    const Geometry& child_own = own_geom(child);
    if (rep(child) != child) {  // a rewritten node is its replacement's tensor
      if (g.sizes != child_own.sizes) return std::nullopt;
      continue;
    }
    const bool copies_layout = it->laid_out_as != kNoNode;
    const Geometry& before = own_geom(copies_layout ? it->laid_out_as : g_.at(child).layout_parent);
    if (g == before) {
      g = child_own;
      continue;
    }
    if (copies_layout) {
      // Self's own layout, unless it overlaps itself (the clone is then
      // contiguous), which is not followed.
      if (g.sizes != child_own.sizes || g.has_internal_overlap()) return std::nullopt;
      continue;
    }
    auto landed = derive_geom(child, before, g);
    if (!landed) return std::nullopt;
    g = std::move(*landed);
  }
  return g;
}

}  // namespace fxinplace::core
