// The memory walk (memory_plan.h): which dead buffer each allocating op may
// write its result into, in one forward walk with a free list and a peak model.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>
#include <tuple>

#include "memory_plan.h"

namespace fxinplace::core {
namespace {

// Live bytes per node, with range add and range max: the peak model. A reuse
// holds the donor's buffer from its death to the op that takes it, adding its
// bytes over that window (the op itself then allocates nothing).
class LiveBytes {
 public:
  explicit LiveBytes(const std::vector<Int>& per_node)
      : n_(per_node.size()), max_(4 * std::max<size_t>(n_, 1), 0), add_(4 * std::max<size_t>(n_, 1), 0) {
    if (n_ > 0) build(1, 0, n_ - 1, per_node);
  }
  // Max over nodes [lo, hi]; 0 for an empty range.
  Int max(size_t lo, size_t hi) const { return lo > hi || n_ == 0 ? 0 : query(1, 0, n_ - 1, lo, hi); }
  void add(size_t lo, size_t hi, Int bytes) {
    if (lo <= hi && n_ > 0) update(1, 0, n_ - 1, lo, hi, bytes);
  }

 private:
  void build(size_t k, size_t l, size_t r, const std::vector<Int>& v) {
    if (l == r) {
      max_[k] = v[l];
      return;
    }
    size_t m = (l + r) / 2;
    build(2 * k, l, m, v);
    build(2 * k + 1, m + 1, r, v);
    max_[k] = std::max(max_[2 * k], max_[2 * k + 1]);
  }
  Int query(size_t k, size_t l, size_t r, size_t lo, size_t hi) const {
    if (lo <= l && r <= hi) return max_[k];
    size_t m = (l + r) / 2;
    Int best = INT64_MIN;
    if (lo <= m) best = std::max(best, query(2 * k, l, m, lo, hi));
    if (hi > m) best = std::max(best, query(2 * k + 1, m + 1, r, lo, hi));
    return best + add_[k];
  }
  void update(size_t k, size_t l, size_t r, size_t lo, size_t hi, Int bytes) {
    if (lo <= l && r <= hi) {
      max_[k] += bytes;
      add_[k] += bytes;
      return;
    }
    size_t m = (l + r) / 2;
    if (lo <= m) update(2 * k, l, m, lo, hi, bytes);
    if (hi > m) update(2 * k + 1, m + 1, r, lo, hi, bytes);
    max_[k] = std::max(max_[2 * k], max_[2 * k + 1]) + add_[k];
  }

  size_t n_;
  std::vector<Int> max_;  // max of the subtree, its own pending add included
  std::vector<Int> add_;  // added to the whole subtree
};

class MemoryWalk {
 public:
  MemoryWalk(const Graph& g, AliasClasses& classes, const std::vector<Decision>& decisions)
      : g_(g),
        classes_(classes),
        decisions_(decisions),
        producer_(static_cast<size_t>(g.num_storages()), kNoNode),
        whole_(static_cast<size_t>(g.num_storages()), kNoNode),
        opaque_(static_cast<size_t>(g.num_storages()), false),
        by_root_(static_cast<size_t>(g.num_storages())),
        dies_after_(g.size()) {}

  MemoryPlan run() {
    MemoryPlan plan;
    plan.decisions.resize(g_.size());
    record_storages();
    summarise_classes();
    LiveBytes live(initial_live_bytes());
    Int peak = live.max(0, g_.size() == 0 ? 0 : g_.size() - 1);
    plan.modelled_peak = peak;
    for (NodeId i = 0; i < static_cast<NodeId>(g_.size()); ++i) {
      MemoryDecision& d = plan.decisions[static_cast<size_t>(i)];
      decide(i, d, live, peak);
      if (d.reason == MemoryReason::kReused) plan.bytes_reused += d.bytes;
      for (StorageId root : dies_after_[static_cast<size_t>(i)]) free(root, i);
    }
    return plan;
  }

 private:
  // What the walk knows of one alias class, kept under its current root.
  struct ClassState {
    bool escapes = false;  // an input, constant, output or opaque node owns it: never dies
    // Escapes other than as an internal output (Node::internal_output): the
    // caller's code or an opaque node sees its tensors, which must then be
    // the buffer's own, never a view of another's.
    bool seen_outside = false;
    NodeId start = kNoNode;
    NodeId death = kNoNode;  // its last reader (or its allocation, if never read)
    NodeId donor = kNoNode;  // the node whose tensor covers the buffer (passed as out=)
    Int bytes = 0;
    bool is_free = false;
    // The buffer is a donated input's memory: no result that leaves the
    // graph may take it (an output would live in an input's memory).
    bool donated_input = false;
  };
  using Key = std::tuple<GeomId, int32_t, int32_t>;  // (geometry, dtype, device)
  // (whether the byte count is known, its value or symbol, dtype, device)
  using SizeKey = std::tuple<bool, Int, int32_t, int32_t>;

  static size_t at(int32_t k) { return static_cast<size_t>(k); }

  // Which node produces each storage and which storages an opaque node
  // touches (reads are AliasClasses': views and write-backs only name memory).
  void record_storages() {
    std::vector<NodeId> counted(g_.size(), kNoNode);
    for (NodeId j = 0; j < static_cast<NodeId>(g_.size()); ++j) {
      const Node& n = g_.at(j);
      bool opaque = n.kind == NodeKind::kOther || n.kind == NodeKind::kAutoFunctionalized ||
                    n.kind == NodeKind::kForeach || n.kind == NodeKind::kWriteBack;
      for (const TensorValue& v : n.results) {
        if (v.storage < 0) continue;
        if (producer_[at(v.storage)] == kNoNode) producer_[at(v.storage)] = j;
        if (opaque) opaque_[at(v.storage)] = true;
      }
      // A multi-result op's tensors are named one by one by its getitems.
      if (n.results.size() == 1 && n.results[0].storage >= 0 && whole_[at(n.results[0].storage)] == kNoNode &&
          (n.kind == NodeKind::kOp || n.kind == NodeKind::kGetItem || n.kind == NodeKind::kInput))
        whole_[at(n.results[0].storage)] = j;
      for (NodeId op : n.operands) {
        if (counted[at(op)] == j) continue;
        counted[at(op)] = j;
        for (const TensorValue& v : g_.at(op).results) {
          if (v.storage >= 0 && opaque && n.reads_memory) opaque_[at(v.storage)] = true;
        }
      }
    }
  }

  // The node whose one tensor is the whole of the fresh buffer storage `s`
  // was allocated as (the op's result, or its getitem; a donated input), or
  // kNoNode: its tensor can be handed to a later op as out=.
  NodeId covering_node(StorageId s) const {
    NodeId j = whole_[at(s)];
    if (j == kNoNode || producer_[at(s)] == kNoNode) return kNoNode;
    const Node& n = g_.at(j);
    const Node* op = n.kind == NodeKind::kGetItem ? (n.item_of == kNoNode ? nullptr : &g_.at(n.item_of)) : &n;
    bool allocated_here = op != nullptr && op->kind == NodeKind::kOp && op->view == ViewKind::kNone &&
                          decisions_[at(producer_[at(s)])].action == Action::kKeep;
    if (!(allocated_here || (n.kind == NodeKind::kInput && n.donated)) ||
        producer_[at(s)] != (n.kind == NodeKind::kGetItem ? n.item_of : j) || n.result_bytes <= 0)
      return kNoNode;
    const Geometry& geom = g_.geometries().at(n.results[0].geom);
    bool whole = geom.offset.is(0) && geom.non_overlapping_and_dense() && !flips_values(n.results[0].dtype);
    return whole ? j : kNoNode;
  }

  bool has_a_size_one_dim(NodeId i) const {
    const Geometry& geom = g_.geometries().at(g_.at(i).results[0].geom);
    return std::any_of(geom.sizes.begin(), geom.sizes.end(), [](const Extent& s) { return s.is(1); });
  }

  // Node i's one tensor is dense from offset 0: it covers exactly its byte
  // count, so any buffer of as many bytes can hold it.
  bool covers_its_bytes(NodeId i) const {
    const Geometry& geom = g_.geometries().at(g_.at(i).results[0].geom);
    return geom.offset.is(0) && geom.non_overlapping_and_dense();
  }

  void summarise_classes() {
    for (StorageId s = 0; s < g_.num_storages(); ++s) {
      StorageId root = classes_.root(s);
      if (root != s) continue;
      const AliasClass& c = classes_.of(s);
      ClassState& st = by_root_[at(root)];
      // A donated input (AOTAutograd's saved activation no one else holds)
      // dies like an intermediate; any other input is the caller's, and two
      // inputs on one storage are never reused.
      st.seen_outside = c.has_constant || c.inputs > 1 || c.returned_to_caller || !c.write_backs.empty();
      // The buffer's allocation is its first producer: rewrites only ever
      // move later results into earlier memory.
      StorageId allocated = -1;
      for (StorageId m : c.members) {
        NodeId p = producer_[at(m)];
        st.seen_outside = st.seen_outside || opaque_[at(m)] || p == kNoNode ||
                          (g_.at(p).kind == NodeKind::kInput && !g_.at(p).donated);
        if (p != kNoNode && (st.start == kNoNode || p < st.start)) {
          st.start = p;
          allocated = m;
        }
        st.death = std::max({st.death, classes_.last_read_of(m), p});
      }
      st.escapes = st.seen_outside || c.returned;
      if (st.start == kNoNode) continue;
      if (whole_[at(allocated)] != kNoNode) st.bytes = g_.at(whole_[at(allocated)]).result_bytes;
      st.donor = covering_node(allocated);
      st.donated_input = c.inputs > 0;
      if (!st.escapes && st.donor != kNoNode) dies_after_[at(st.death)].push_back(root);
    }
  }

  // Bytes live at each node, as an allocator sees the graph's own memory:
  // every buffer the graph allocates, from its allocation to its death (to
  // the end when it escapes), and every donated input, from the start to its
  // last use (the graph frees it: AOTAutograd clears a backward's saved
  // tensors before the call). Other inputs and constants are the caller's:
  // held all along or not, they are the same bytes at every node, so they
  // cannot move the peak a hold is compared with.
  std::vector<Int> initial_live_bytes() const {
    std::vector<Int> delta(g_.size() + 1, 0);
    for (StorageId s = 0; s < g_.num_storages(); ++s) {
      const ClassState& st = by_root_[at(s)];
      if (classes_.root(s) != s || st.start == kNoNode) continue;
      const AliasClass& c = classes_.of(s);
      if (c.is_input() && st.escapes) continue;
      Int bytes = st.bytes;
      NodeId end = st.escapes ? static_cast<NodeId>(g_.size()) - 1 : st.death;
      delta[at(st.start)] += bytes;
      delta[at(end) + 1] -= bytes;
    }
    std::vector<Int> live(g_.size(), 0);
    Int running = 0;
    for (size_t j = 0; j < g_.size(); ++j) live[j] = running += delta[j];
    return live;
  }

  Key key_of(NodeId j) const {
    const Node& n = g_.at(j);
    return {n.results[0].geom, n.results[0].dtype, n.device};
  }
  SizeKey size_key_of(NodeId j) const {
    const Node& n = g_.at(j);
    Int v = n.byte_size.is_known() ? n.byte_size.value() : n.byte_size.symbol();
    return {n.byte_size.is_known(), v, n.results[0].dtype, n.device};
  }

  void free(StorageId root, NodeId i) {
    if (classes_.root(root) != root) return;  // merged since: rescheduled under its new root
    ClassState& st = by_root_[at(root)];
    if (st.escapes || st.death != i || st.is_free || st.donor == kNoNode) return;
    st.is_free = true;
    free_[key_of(st.donor)].push_back(root);
    // A known byte count of 0 is no buffer at all.
    if (!g_.at(st.donor).byte_size.is(0)) free_by_size_[size_key_of(st.donor)].push_back(root);
  }

  // The most recently freed buffer still dead in `stack`, or -1 (entries of
  // buffers taken since, or merged under another root, are dropped here: a
  // buffer sits in two lists, by layout and by byte count). A result that
  // escapes passes over donated inputs' buffers.
  template <typename Map, typename K>
  StorageId most_recent_free(Map& lists, const K& key, bool escapes) {
    auto found = lists.find(key);
    if (found == lists.end()) return -1;
    std::vector<StorageId>& stack = found->second;
    auto stale = [&](StorageId s) { return classes_.root(s) != s || !by_root_[at(s)].is_free; };
    while (!stack.empty() && stale(stack.back())) stack.pop_back();
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
      if (!stale(*it) && !(escapes && by_root_[at(*it)].donated_input)) return *it;
    return -1;
  }

  void decide(NodeId i, MemoryDecision& d, LiveBytes& live, Int peak) {
    const Node& n = g_.at(i);
    if (n.kind != NodeKind::kOp || n.view != ViewKind::kNone) return;
    if (decisions_[at(i)].action != Action::kKeep) {
      d.reason = MemoryReason::kWrittenInPlace;
      return;
    }
    if (n.results.size() != 1) {
      d.reason = MemoryReason::kSeveralResults;
      return;
    }
    d.bytes = n.result_bytes;
    StorageId own = classes_.root(n.results[0].storage);
    if (!n.out_kernel || n.result_bytes <= 0 || producer_[at(n.results[0].storage)] != i ||
        classes_.of(own).is_input()) {
      d.reason = MemoryReason::kNoOutKernel;
      return;
    }
    // A buffer of the result's own layout first; else, for a result the
    // graph can lay anywhere, one of the same byte count. Not for a result
    // the caller's code sees: it would get a view of another tensor's memory
    // (`._base` set), which autograd treats as a view of a custom Function's
    // output when written in place. An internal output (a saved activation,
    // a gradient) may be such a view: AOTAutograd detaches saved views, and
    // autograd takes a gradient whatever its base.
    const ClassState& mine = by_root_[at(own)];
    const bool escapes = mine.escapes;
    const bool can_restride =
        n.restridable && !n.byte_size.is(0) && !mine.seen_outside && covers_its_bytes(i);
    // A size-1 dim's stride in the recorded metadata need not be the one the
    // kernels give at run time (aten.zero's meta kernel lays a (1,) result out
    // with stride 1; its CPU kernel keeps its input's stride 2), and an out=
    // op keeps its buffer's strides: clamp.out(x, out=zeroed) then had stride
    // 2, and view.dtype of it raised (random pipelines seed 140296). Such a
    // result takes even a buffer of its recorded layout laid out anew.
    const bool layout_as_recorded = !has_a_size_one_dim(i);
    // Holding a buffer from its death to this op must not raise the peak
    // (Inductor's rule): the op then allocates nothing, so only the window
    // between matters. The most recently freed buffer of a list has the
    // shortest window of its list; a buffer of the result's layout is tried
    // first, then (for a result laid anywhere) one of its byte count, which
    // may have died later than every buffer of the layout.
    bool raised_peak = false;
    auto holdable = [&](StorageId dead) {
      if (dead < 0) return false;
      const bool fits = !raises_peak(by_root_[at(dead)], i, live, peak);
      raised_peak = raised_peak || !fits;
      return fits;
    };
    StorageId dead = layout_as_recorded || can_restride ? most_recent_free(free_, key_of(i), escapes) : -1;
    bool restrided = !layout_as_recorded;
    if (!holdable(dead)) {
      dead = can_restride ? most_recent_free(free_by_size_, size_key_of(i), escapes) : -1;
      restrided = !layout_as_recorded || (dead >= 0 && key_of(by_root_[at(dead)].donor) != key_of(i));
      if (!holdable(dead)) {
        d.reason = raised_peak ? MemoryReason::kWouldRaisePeak : MemoryReason::kNoDeadBuffer;
        return;
      }
    }
    ClassState& donor = by_root_[at(dead)];
    auto lo = at(donor.death) + 1;
    auto hi = at(i) - 1;
    live.add(lo, hi, donor.bytes);
    d.reason = MemoryReason::kReused;
    d.donor = donor.donor;
    d.restrided = restrided;
    d.freed_after = donor.death;
    take(own, dead);
  }

  // Whether holding `donor`'s buffer from its death until `i` takes it would
  // raise the modelled peak.
  static bool raises_peak(const ClassState& donor, NodeId i, const LiveBytes& live, Int peak) {
    auto lo = at(donor.death) + 1;
    auto hi = at(i) - 1;
    return lo <= hi && live.max(lo, hi) + donor.bytes > peak;
  }

  // The op's result now lives in the dead class's buffer: one class, which
  // dies when the result does (and escapes if the result does).
  void take(StorageId own, StorageId dead) {
    ClassState mine = by_root_[at(own)];
    ClassState theirs = by_root_[at(dead)];
    classes_.merge(own, dead);
    StorageId root = classes_.root(own);
    ClassState& st = by_root_[at(root)];
    st.escapes = mine.escapes;
    st.seen_outside = mine.seen_outside;
    st.start = theirs.start;
    st.death = std::max(mine.death, theirs.death);
    st.donor = theirs.donor;
    st.bytes = theirs.bytes;
    st.donated_input = theirs.donated_input;
    st.is_free = false;
    if (!st.escapes) dies_after_[at(st.death)].push_back(root);
  }

  const Graph& g_;
  AliasClasses& classes_;
  const std::vector<Decision>& decisions_;
  std::vector<NodeId> producer_;
  std::vector<NodeId> whole_;  // the first node whose one tensor is exactly the storage
  std::vector<bool> opaque_;
  std::vector<ClassState> by_root_;
  std::vector<std::vector<StorageId>> dies_after_;
  // Dead buffers by (geometry, dtype, device), most recently freed last.
  std::map<Key, std::vector<StorageId>> free_;
  // The same buffers by (byte count, dtype, device).
  std::map<SizeKey, std::vector<StorageId>> free_by_size_;
};

}  // namespace

MemoryPlan plan_memory(const Graph& g, AliasClasses& classes, const std::vector<Decision>& decisions) {
  return MemoryWalk(g, classes, decisions).run();
}

}  // namespace fxinplace::core
