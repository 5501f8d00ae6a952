#include "reinplace_planner.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "union_find.h"

namespace fxinplace::core {

int Plan::num_inplace() const {
  return static_cast<int>(std::count_if(decisions.begin(), decisions.end(),
                                        [](const Decision& d) { return d.action == Action::kInplace; }));
}
int Plan::num_scatters_removed() const {
  return static_cast<int>(std::count_if(decisions.begin(), decisions.end(), [](const Decision& d) {
    return d.action == Action::kRemoveScatter;
  }));
}
int Plan::num_scatters_to_copy() const {
  return static_cast<int>(std::count_if(decisions.begin(), decisions.end(), [](const Decision& d) {
    return d.action == Action::kScatterToCopy;
  }));
}

namespace {

// Everything the planner knows about one alias class (a set of storages that
// share memory, now or after the rewrites decided so far).
struct AliasClass {
  bool is_input = false;
  // Latest node that reads the class and is neither a view of it nor a scatter.
  NodeId last_read = kNoNode;
  // Scatters that read the class, ascending; those before `pruned` are behind
  // the walk and never matter again.
  std::vector<NodeId> scatter_reads;
  size_t pruned = 0;
  // (geometry of a view's base, geometry of the view) for every view whose
  // memory is in the class: a scatter that inverts one of them is not a read.
  std::unordered_set<uint64_t> view_pairs;
};

uint64_t pair_key(GeomId base, GeomId view) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(base)) << 32) | static_cast<uint32_t>(view);
}

class Walk {
 public:
  Walk(const Graph& g, const std::vector<bool>& kept_scatters)
      : g_(g),
        kept_(kept_scatters),
        storages_(static_cast<size_t>(g.num_storages())),
        classes_(static_cast<size_t>(g.num_storages())),
        rep_(g.size()),
        decisions_(g.size()) {
    for (size_t i = 0; i < g.size(); ++i) rep_[i] = static_cast<NodeId>(i);
    summarise_uses();
    summarise_layout_uses();
  }

  void run() {
    for (NodeId i = 0; i < static_cast<NodeId>(g_.size()); ++i) decide(i);
  }
  const std::vector<Decision>& decisions() const { return decisions_; }

  // A removed scatter is only a no-op if, in the rewritten graph, its source
  // already is the very memory it would write: same class as its base and
  // exactly the geometry the inverted view has there. The stock pass assumes
  // this from geometry alone; we check it, and keep any scatter where it fails.
  std::vector<NodeId> unsound_removals() {
    std::vector<NodeId> bad;
    for (NodeId j = 0; j < static_cast<NodeId>(g_.size()); ++j) {
      const Node& sc = g_.at(j);
      if (decisions_[static_cast<size_t>(j)].action != Action::kRemoveScatter) continue;
      NodeId base_node = rep(sc.self);
      NodeId src_node = sc.scatter_src == kNoNode ? kNoNode : rep(sc.scatter_src);
      const TensorValue* base = value(base_node);
      const TensorValue* src = src_node == kNoNode ? nullptr : value(src_node);
      bool ok = base && src && root(base->storage) == root(src->storage);
      if (ok) {
        auto base_geom = effective_geom(base_node);
        auto src_geom = effective_geom(src_node);
        auto replay = base_geom ? inverted_view(sc, *base_geom) : std::nullopt;
        ok = replay && src_geom && replay->same_elements(*src_geom);
      }
      if (!ok) bad.push_back(j);
    }
    return bad;
  }

  // After the walk: the node a use of `n` reads in the rewritten graph.
  NodeId rep(NodeId n) const { return rep_[static_cast<size_t>(n)]; }

 private:
  AliasClass& cls(StorageId s) { return classes_[static_cast<size_t>(storages_.find(s))]; }
  StorageId root(StorageId s) { return storages_.find(s); }
  const TensorValue* value(NodeId n) const { return g_.single_result(n); }

  void summarise_uses() {
    // last_user[op] == j: op already counted for user j (an op passed twice
    // reads its memory once).
    std::vector<NodeId> last_user(g_.size(), kNoNode);
    for (NodeId j = 0; j < static_cast<NodeId>(g_.size()); ++j) {
      const Node& user = g_.at(j);
      if (user.kind == NodeKind::kInput || user.kind == NodeKind::kConstant)
        for (const TensorValue& v : user.results) classes_[static_cast<size_t>(v.storage)].is_input = true;
      if (user.view_of != kNoNode) {
        const TensorValue* base = value(user.view_of);
        if (base && user.results.size() == 1)
          classes_[static_cast<size_t>(user.results[0].storage)].view_pairs.insert(
              pair_key(base->geom, user.results[0].geom));
      }
      for (NodeId op : user.operands) {
        if (last_user[static_cast<size_t>(op)] == j) continue;
        last_user[static_cast<size_t>(op)] = j;
        for (const TensorValue& v : g_.at(op).results) record_use(j, v.storage);
      }
    }
  }

  // A node whose result lives in the storage it reads (a view, a getitem of a
  // multi-output view) does not read the memory; it only names it.
  void record_use(NodeId j, StorageId s) {
    const Node& user = g_.at(j);
    bool aliasing_user = (user.kind == NodeKind::kOp || user.kind == NodeKind::kGetItem) &&
                         std::any_of(user.results.begin(), user.results.end(),
                                     [s](const TensorValue& v) { return v.storage == s; });
    if (aliasing_user) return;
    AliasClass& c = classes_[static_cast<size_t>(s)];
    if (user.kind == NodeKind::kOp && user.scatter.kind != ScatterKind::kNone) {
      if (c.scatter_reads.empty() || c.scatter_reads.back() != j) c.scatter_reads.push_back(j);
    } else {
      c.last_read = std::max(c.last_read, j);
    }
  }

  // For each node: the strongest layout dependence among the tensors that view
  // or address its memory, transitively; and those tensors, for the full walk.
  void summarise_layout_uses() {
    layout_needs_.assign(g_.size(), LayoutUse::kLogical);
    layout_children_.assign(g_.size(), {});
    for (NodeId u = static_cast<NodeId>(g_.size()) - 1; u >= 0; --u) {
      const Node& user = g_.at(u);
      if (user.layout_parent == kNoNode) continue;
      auto parent = static_cast<size_t>(user.layout_parent);
      layout_children_[parent].push_back(u);
      LayoutUse need = std::max(user.layout_use, layout_needs_[static_cast<size_t>(u)]);
      layout_needs_[parent] = std::max(layout_needs_[parent], need);
    }
    summarise_computed_layouts();
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
  void summarise_computed_layouts() {
    layout_reaches_.assign(g_.size(), false);
    for (NodeId c = static_cast<NodeId>(g_.size()) - 1; c >= 0; --c) {
      const Node& consumer = g_.at(c);
      auto ci = static_cast<size_t>(c);
      bool consumer_shows = consumer.kind == NodeKind::kOutput || layout_reaches_[ci] ||
                            layout_needs_[ci] != LayoutUse::kLogical;
      for (NodeId op : consumer.operands) {
        auto oi = static_cast<size_t>(op);
        if (consumer.layout_parent == op) {
          // A view of `op` (or as_strided_scatter addressing it): its own layout
          // needs are followed exactly elsewhere; what is computed from it is not.
          layout_reaches_[oi] =
              layout_reaches_[oi] || layout_reaches_[ci] || consumer.kind == NodeKind::kOutput;
        } else if (consumer.scatter.kind != ScatterKind::kNone && consumer.scatter_src == op &&
                   consumer.self != op) {
          continue;
        } else {
          layout_reaches_[oi] = layout_reaches_[oi] || consumer_shows;
        }
      }
    }
  }

  // Does moving `moved`'s result into `home` give it another layout (strides of
  // dims that may hold more than one element)? Unknown counts as yes.
  bool layout_differs(NodeId moved, NodeId home) {
    auto to = effective_geom(home);
    if (!to) return true;
    return !own_geom(moved).same_layout(*to);
  }

  // Would anything notice that `moved`'s value now lives in `home`'s layout?
  // Walks the tensors that view or address its memory, working out where each
  // lands; visible as soon as one cannot land (a reshape the new layout cannot
  // express, as_strided on moved memory, a view assumed stride-dependent).
  bool layout_change_is_visible(NodeId moved, NodeId home) {
    if (layout_needs_[static_cast<size_t>(moved)] == LayoutUse::kLogical) return false;
    const TensorValue* from = value(moved);
    auto to = effective_geom(home);
    if (!from || !to) return true;
    const Geometry& old_geom = g_.geometries().at(from->geom);
    if (old_geom.sizes != to->sizes) return true;
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
      const Geometry& own = g_.geometries().at(value(p.node)->geom);
      for (NodeId c : layout_children_[static_cast<size_t>(p.node)]) pending.push_back({c, own, *landed});
    }
    return false;
  }

  // Where view-like node `u` lands when its parent moves from `old_parent` to
  // `new_parent` (same logical tensor, other layout); nullopt if it cannot.
  std::optional<Geometry> derive_geom(NodeId u, const Geometry& old_parent, const Geometry& new_parent) {
    const Node& node = g_.at(u);
    const TensorValue* v = value(u);
    if (!v || !aliases_parent(u)) return std::nullopt;  // as_strided_scatter into moved memory
    const Geometry& own = g_.geometries().at(v->geom);
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
        Geometry same_place = old_parent;
        same_place.offset = new_parent.offset;
        auto offset = shift(own.offset, old_parent.offset, new_parent.offset);
        if (!same_place.same_elements(new_parent) || !offset) return std::nullopt;
        Geometry g = own;
        g.offset = *offset;
        return g;
      }
      case LayoutUse::kAbsolute:
        break;
    }
    return std::nullopt;
  }

  // `offset` moved by as much as its parent moved from `from` to `to`.
  static std::optional<Extent> shift(const Extent& offset, const Extent& from, const Extent& to) {
    if (from == to) return offset;
    if (!offset.is_known() || !from.is_known() || !to.is_known()) return std::nullopt;
    auto distance = checked_add(offset.value(), -from.value());
    auto moved = distance && from.value() != INT64_MIN ? checked_add(to.value(), *distance) : std::nullopt;
    if (!moved) return std::nullopt;
    return Extent(*moved);
  }

  // The geometry scatter `sc`'s view has when its base lies as `base`: what
  // the frontend recorded for the scatter's own base (exact even for symbolic
  // geometry), else a replay of the view (known geometries only).
  std::optional<Geometry> inverted_view(const Node& sc, const Geometry& base) const {
    const auto& recorded = sc.scatter.view_on_recorded_base;
    if (recorded && value(sc.self) && own_geom(sc.self) == base) return *recorded;
    return replay_view(sc.scatter, base);
  }

  // A view-like node shares its layout parent's storage; a consumer such as
  // as_strided_scatter does not.
  bool aliases_parent(NodeId u) {
    NodeId p = g_.at(u).layout_parent;
    const TensorValue* mine = value(u);
    const TensorValue* theirs = p == kNoNode ? nullptr : value(p);
    return mine && theirs && mine->storage == theirs->storage;
  }

  void merge(StorageId a, StorageId b) {
    auto [win, lose] = storages_.unite(a, b);
    if (win == lose) return;
    AliasClass& w = classes_[static_cast<size_t>(win)];
    AliasClass& l = classes_[static_cast<size_t>(lose)];
    w.is_input = w.is_input || l.is_input;
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
  }

  // Does scatter `j` write back exactly a view some member of class `s` was
  // taken as? Then, once that view was written in place, `j` is a no-op.
  bool inverts_a_view(NodeId j, StorageId s) {
    const Node& sc = g_.at(j);
    if (kept_[static_cast<size_t>(j)] || sc.self == kNoNode) return false;
    if (layout_change_is_visible(j, rep(sc.self))) return false;
    const TensorValue* base = value(rep(sc.self));
    if (!base) return false;
    auto replay = inverted_view(sc, g_.geometries().at(base->geom));
    if (!replay) return false;
    GeomId view = g_.geometries().lookup(*replay);
    return view != kNoGeom && cls(s).view_pairs.count(pair_key(base->geom, view)) > 0;
  }

  Decision refuse(Reason r, NodeId culprit = kNoNode) {
    Decision d;
    d.reason = r;
    d.culprit = culprit;
    return d;
  }

  // Checks that hold before liveness: metadata, inputs, operand aliasing.
  Decision check_local(const Node& node, const TensorValue& self) {
    const TensorValue* result = nullptr;
    if (node.results.size() == 1) result = &node.results[0];
    bool is_scatter = node.scatter.kind != ScatterKind::kNone;
    if (!is_scatter && !node.has_inplace) return refuse(Reason::kNoInplaceVariant);
    if (!node.is_resize) {
      if (!result) return refuse(Reason::kResultNotSingleTensor);
      if (result->dtype != self.dtype) return refuse(Reason::kMetadataMismatch);
      if (result->shape != self.shape) return refuse(Reason::kShapeMismatch);
      if (g_.geometries().at(self.geom).has_internal_overlap()) return refuse(Reason::kSelfOverlaps);
    }
    if (cls(self.storage).is_input) return refuse(Reason::kSelfIsInput);
    NodeId me = rep(node.self);
    StorageId my_class = root(self.storage);
    bool skipped_self = false;
    for (NodeId op : node.operands) {
      NodeId other = rep(op);
      if (!skipped_self && op == node.self) {
        skipped_self = true;
        continue;
      }
      if (other == me) return refuse(Reason::kSelfRepeated, op);
      for (const TensorValue& v : g_.at(other).results) {
        if (root(v.storage) != my_class) continue;
        if (operand_is_harmless(other, me, node.pointwise)) continue;
        return refuse(Reason::kOperandAliasesSelf, op);
      }
    }
    return Decision{};
  }

  // An operand in self's storage class is harmless when, where the tensors
  // really live after the rewrites so far, it touches none of self's elements,
  // or when the op is elementwise and it is exactly self's elements (each
  // element is read before it is written). ATen itself rejects the latter at
  // run time when both are dense and the strides differ, even on size-1 dims
  // (it calls that a partial overlap), so those stay out of place; with
  // symbolic geometry only identical layouts count.
  bool operand_is_harmless(NodeId operand, NodeId self, bool elementwise) {
    auto a = effective_geom(operand);
    auto b = effective_geom(self);
    if (!a || !b) return false;
    if (!a->may_overlap(*b)) return true;
    if (!elementwise) return false;
    if (*a == *b) return true;
    if (!a->is_known() || !b->is_known()) return false;
    return a->same_elements(*b) && !(a->non_overlapping_and_dense() && b->non_overlapping_and_dense());
  }

  void decide(NodeId i) {
    const Node& node = g_.at(i);
    if (node.kind != NodeKind::kOp || !node.self_is_tensor || node.self == kNoNode) return;
    // A scatter already removed on behalf of an earlier op stays removed.
    if (decisions_[static_cast<size_t>(i)].action == Action::kRemoveScatter) return;
    if (node.view != ViewKind::kNone) {
      decisions_[static_cast<size_t>(i)] = refuse(Reason::kView);
      return;
    }
    NodeId self_node = rep(node.self);
    const TensorValue* self = value(self_node);
    if (!self) return;
    Decision d = check_local(node, *self);
    if (d.reason != Reason::kNotCandidate) {
      decisions_[static_cast<size_t>(i)] = d;
      return;
    }
    AliasClass& c = cls(self->storage);
    if (c.last_read > i) {
      decisions_[static_cast<size_t>(i)] = refuse(Reason::kUsedLater, c.last_read);
      return;
    }
    while (c.pruned < c.scatter_reads.size() && c.scatter_reads[c.pruned] <= i) ++c.pruned;
    std::vector<NodeId> removable;
    for (size_t k = c.pruned; k < c.scatter_reads.size(); ++k) {
      NodeId j = c.scatter_reads[k];
      bool merged_in = false;
      for (const TensorValue& v : g_.at(j).results)
        merged_in = merged_in || root(v.storage) == root(self->storage);
      if (merged_in) continue;
      if (!inverts_a_view(j, self->storage)) {
        Reason why = kept_[static_cast<size_t>(j)] ? Reason::kScatterUnproven : Reason::kUsedLater;
        decisions_[static_cast<size_t>(i)] = refuse(why, j);
        return;
      }
      removable.push_back(j);
    }
    if (layout_change_is_visible(i, self_node) ||
        (layout_reaches_[static_cast<size_t>(i)] && layout_differs(i, self_node))) {
      decisions_[static_cast<size_t>(i)] = refuse(Reason::kLayoutSensitiveUse);
      return;
    }
    Decision& out = decisions_[static_cast<size_t>(i)];
    // check_local refused ops that are neither scatters nor have a `foo_`.
    out.action = node.scatter.kind != ScatterKind::kNone ? Action::kScatterToCopy : Action::kInplace;
    out.reason = Reason::kDone;
    out.replacement = self_node;
    rep_[static_cast<size_t>(i)] = self_node;
    if (const TensorValue* mine = value(i)) merge(self->storage, mine->storage);
    for (NodeId j : removable) remove_scatter(j);
  }

  // The scatter's users read its base from now on, so its storage joins the
  // base's class: every later read of the scatter's result (and every view of
  // it) is a read of the base's memory.
  void remove_scatter(NodeId j) {
    Decision& d = decisions_[static_cast<size_t>(j)];
    const Node& sc = g_.at(j);
    NodeId base = rep(sc.self);
    d.action = Action::kRemoveScatter;
    d.reason = Reason::kDone;
    d.replacement = base;
    rep_[static_cast<size_t>(j)] = base;
    const TensorValue* mine = value(j);
    const TensorValue* base_value = value(base);
    if (mine && base_value) merge(base_value->storage, mine->storage);
  }

  // Where a node's memory really is in the rewritten graph. A rewritten node
  // (re-inplaced op, removed or copied scatter) now is its replacement's
  // tensor; a view of a moved tensor lands as derive_geom says. nullopt when
  // that cannot be worked out (the planner then stays cautious).
  std::optional<Geometry> effective_geom(NodeId n) {
    // Iterative (view chains can be long): climb to a node whose memory did not
    // move, then come back down, re-deriving each step's geometry.
    std::vector<NodeId> path;
    NodeId cur = n;
    while (true) {
      if (!value(cur)) return std::nullopt;
      NodeId up = rep(cur);
      if (up == cur) {
        up = g_.at(cur).layout_parent;
        if (up == kNoNode || !aliases_parent(cur)) break;
      }
      path.push_back(cur);
      cur = up;
    }
    Geometry g = own_geom(cur);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      NodeId child = *it;
      const Geometry& child_own = own_geom(child);
      if (rep(child) != child) {  // a rewritten node is its replacement's tensor
        if (g.sizes != child_own.sizes) return std::nullopt;
        continue;
      }
      const Geometry& before = own_geom(g_.at(child).layout_parent);
      if (g == before) {
        g = child_own;
        continue;
      }
      auto landed = derive_geom(child, before, g);
      if (!landed) return std::nullopt;
      g = std::move(*landed);
    }
    return g;
  }

  const Geometry& own_geom(NodeId n) const { return g_.geometries().at(value(n)->geom); }

  const Graph& g_;
  const std::vector<bool>& kept_;
  UnionFind storages_;
  std::vector<AliasClass> classes_;
  std::vector<NodeId> rep_;
  std::vector<Decision> decisions_;
  std::vector<LayoutUse> layout_needs_;
  std::vector<bool> layout_reaches_;
  std::vector<std::vector<NodeId>> layout_children_;
};

}  // namespace

Plan plan_reinplace(const Graph& graph) {
  std::vector<bool> kept(graph.size(), false);
  Plan plan;
  while (true) {
    ++plan.walks;
    Walk walk(graph, kept);
    walk.run();
    std::vector<NodeId> bad = walk.unsound_removals();
    if (bad.empty()) {
      plan.decisions = walk.decisions();
      return plan;
    }
    for (NodeId j : bad) kept[static_cast<size_t>(j)] = true;
  }
}

}  // namespace fxinplace::core
