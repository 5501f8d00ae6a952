// Write slots: the checks every rule's write into an existing buffer passes,
// and the rules that are about buffers rather than operators.
//
// auto_functionalized_v2 (a custom op that mutates its arguments, functionalized):
//
//   out = auto_functionalized_v2(op, _all_bases=[a, b], ...)   # clones a and b, runs op on the clones
//   a2, b2 = out[1], out[2]                                       # the bases' new values
//
// Base `a` need not be cloned when nothing reads `a`'s old contents after the
// node (nor the op itself through another argument): the op then writes `a`
// and users of `a2` read `a`. Per base, the same checks as `foo` -> `foo_`.
// auto_functionalized (v1), `out = auto_functionalized(op, x=a, y=b[0])`, clones
// its written arguments themselves: each is a slot the same way; a view
// (`b[0]`) is a write into its base, whose `select_scatter` of the new value
// after the node then goes (pending scatters).
//
// `_foreach_*` ops (optimizer steps): `_foreach_add(xs, ys)` -> `_foreach_add_(xs, ys)`,
// each element of `xs` a slot with the checks above; all of them or none.
//
// Graph inputs written back (the epilogue rule):
//
//   r = foo(x)            # x: a graph input
//   ...                   # nothing reads x
//   copy_(x, r)           # functionalization's write-back
//
// may compute `r` in x's memory: x's old contents are never read again (the
// write-back overwrites them anyway), and the copy_ then copies x onto itself
// and goes. Where the write-back copies another value, `r` must not be read
// after it. On for auto_functionalized_v2 bases; for ATen ops by PlanOptions.
#include <algorithm>
#include <unordered_map>
#include <utility>

#include "planner_walk.h"

namespace fxinplace::core {

std::optional<Decision> Walk::check_write(NodeId i, const WriteSlot& slot, NodeId holder, bool elementwise) {
  const Node& node = g_.at(i);
  NodeId target = rep(slot.target);
  const TensorValue* tv = value(target);
  if (!tv) return refuse(Reason::kNotCandidate);
  AliasClass& c = classes_.of(tv->storage);
  bool written_back = false;
  // A donated backward input (a saved activation the backward frees) is
  // written like an intermediate once dead: `y = pow(saved, 2)` with `saved`
  // read for the last time here becomes `pow_(saved, 2)`.
  bool donated = c.is_donated_input();
  if (c.is_input() && !donated) {
    bool may_reuse = node.kind == NodeKind::kAutoFunctionalized || options_.reuse_written_back_inputs;
    if (c.has_constant || !may_reuse) return refuse(Reason::kSelfIsInput);
    if (auto refused = check_input_written_back(i, target, holder)) return refused;
    if (!writes_within_input(i, slot)) return refuse(Reason::kWritesOutsideInput);
    written_back = true;
  }
  if (const TensorValue* held = holder == kNoNode ? nullptr : value(holder);
      donated && held && classes_.of(held->storage).returned)
    return refuse(Reason::kReturnedFromDonatedInput);
  if (auto refused = check_other_operands(i, slot, elementwise)) return refused;
  // The value `holder` holds (an op's result, a custom op's new base, a
  // `_foreach_*` element) would live in target's memory: returned from a graph
  // torch.compile's runtime takes, it must not become a view of part of a buffer.
  if (const TensorValue* held = holder == kNoNode ? nullptr : value(holder);
      options_.outputs_taken_by_torch_compile && held && classes_.of(held->storage).returned &&
      !covers_its_buffer(target))
    return refuse(Reason::kReturnedAsPartialView);
  // An input written back is read, after the write-back, as the value copied
  // into it; check_input_written_back covered everything before.
  if (!written_back && c.last_read > i) return refuse(Reason::kUsedLater, c.last_read);
  return std::nullopt;
}

std::optional<Decision> Walk::check_input_written_back(NodeId i, NodeId target, NodeId holder) {
  if (g_.at(target).kind != NodeKind::kInput) return refuse(Reason::kSelfIsInput);
  StorageId s = value(target)->storage;
  // Other inputs in the same storage are other memory when no element of
  // theirs is one of target's: a cache laid out as views of one tensor
  // (k = kv[0], v = kv[1], each written back) is two caches.
  for (NodeId other : classes_.of(s).input_nodes)
    if (other != target && !elsewhere_than(other, target)) return refuse(Reason::kInputShared);
  NodeId back = first_write_back_into(i, target);
  if (back == kNoNode) return refuse(Reason::kInputNotWrittenBack);
  const Node& write_back = g_.at(back);
  // A resize_ / as_strided_ write-back first: the input changes shape before
  // the copy_, which the result would have to follow. Not taken.
  if (write_back.self != target || write_back.written_value == kNoNode)
    return refuse(Reason::kUsedLater, back);
  bool copies_the_result = write_back.written_value == holder;
  // Nothing may read the input's memory before the write-back; the
  // write-back itself reads it only when it copies another value that lives
  // there (a value this write would clobber). Reads of the storage's other
  // elements (another input's, disjoint from target) see nothing change.
  NodeId until = copies_the_result ? back - 1 : back;
  NodeId read =
      classes_.first_read_where(s, i, until, [&](NodeId r) { return !reads_only_elsewhere(r, s, target); });
  if (read != kNoNode) return refuse(Reason::kUsedLater, read);
  const TensorValue* result = holder == kNoNode ? nullptr : value(holder);
  if (!result) return std::nullopt;
  AliasClass& result_class = classes_.of(result->storage);
  // A write-back of another view of the result reads the result's memory, now
  // the input's, in another order: a copy onto itself, which ATen refuses as
  // a partial overlap and which would read elements it has already written
  // (random pipelines seed 111356, an input transposed in place):
  //   y = select_scatter(x, v, 1, 2)     # in place: y is x's memory
  //   copy_(x, transpose(y, 0, 1))       # x.copy_(x.t())
  // Left functional, y is a buffer of its own and the copy reads only it.
  if (!copies_the_result) {
    const TensorValue* copied = value(write_back.written_value);
    if (copied && classes_.root(copied->storage) == classes_.root(result->storage) &&
        !own_geom(write_back.written_value).same_elements(own_geom(holder)))
      return refuse(Reason::kWriteBackReordersResult, back);
  }
  // Reads after a write-back that copies the result itself (which then goes)
  // still see the result; but returning it would now return the input's
  // memory, an output aliasing an input the functional graph did not have.
  if (copies_the_result && !result_class.returned) return std::nullopt;
  if (result_class.last_read > back) return refuse(Reason::kResultReadAfterWriteBack, result_class.last_read);
  return std::nullopt;
}

// The first write-back after node i that writes `target`'s memory (nullopt
// handled by the caller as kNoNode). Write-backs into other inputs of the
// same storage, disjoint from target, are passed over.
NodeId Walk::first_write_back_into(NodeId i, NodeId target) {
  StorageId s = value(target)->storage;
  for (NodeId back = classes_.first_write_back_after(s, i); back != kNoNode;
       back = classes_.first_write_back_after(s, back)) {
    NodeId into = g_.at(back).written_input;
    if (into == target || into == kNoNode || g_.at(into).kind != NodeKind::kInput ||
        !elsewhere_than(into, target))
      return back;
  }
  return kNoNode;
}

// Does node `read` read only memory of storage class `s` that is not
// target's elements?
bool Walk::reads_only_elsewhere(NodeId read, StorageId s, NodeId target) {
  StorageId root = classes_.root(s);
  for (NodeId op : g_.at(read).operands) {
    NodeId other = rep(op);
    for (const TensorValue& v : g_.at(other).results)
      if (classes_.root(v.storage) == root && !elsewhere_than(other, target)) return false;
  }
  return true;
}

bool Walk::elsewhere_than(NodeId n, NodeId target) {
  return operand_is_harmless(n, target, false) || within_another_input(n, target);
}

// Follows `n` (through the rewrites so far) up its views to the graph input
// whose memory it lies in; views stay within their base's elements, but
// as_strided, which addresses the storage, may leave them.
bool Walk::within_another_input(NodeId n, NodeId target) {
  if (!options_.shared_inputs_disjoint) return false;
  NodeId cur = rep(n);
  while (g_.at(cur).kind != NodeKind::kInput) {
    const Node& node = g_.at(cur);
    if (node.view_of == kNoNode || node.layout_use == LayoutUse::kAbsolute) return false;
    cur = rep(node.view_of);
  }
  return cur != rep(target);
}

// The write-back copy_(x, v) restores exactly x's elements. A write into x's
// storage elsewhere (as_strided reaching into the gaps of a strided input) is
// one the functional graph never makes:
//   x = base[::2]                            # elements 0, 2, 4 of the storage
//   y = as_strided_scatter(x, s, [2], [1], 0)    ->  as_strided(x, [2], [1], 0).copy_(s)
//   copy_(x, y)                                  # storage element 1 written
// Views other than as_strided stay within their base's elements.
bool Walk::writes_within_input(NodeId i, const WriteSlot& slot) {
  const Node& node = g_.at(i);
  NodeId target = rep(slot.target);
  bool absolute = node.scatter.kind == ScatterKind::kAsStrided;
  NodeId input = target;
  for (NodeId c = target; c != kNoNode; c = g_.at(c).view_of) {
    absolute = absolute || g_.at(c).layout_use == LayoutUse::kAbsolute;
    input = c;
  }
  if (!absolute) return true;
  if (g_.at(input).kind != NodeKind::kInput || !value(input) || !value(target)) return false;
  auto target_geom = effective_geom(target);
  if (!target_geom) return false;
  std::optional<Geometry> written = target_geom;
  if (node.scatter.kind == ScatterKind::kAsStrided) written = inverted_view(node, *target_geom);
  const Geometry& whole = own_geom(input);
  if (!written || value(input)->dtype != value(target)->dtype) return false;
  if (written->same_elements(whole)) return true;
  // Within a dense input's span, every element is the input's.
  auto span = [](const Geometry& g) -> std::optional<std::pair<Int, Int>> {
    if (!g.is_known() || !g.offset.is_known()) return std::nullopt;
    Int lo = g.offset.value(), hi = g.offset.value();
    for (size_t d = 0; d < g.sizes.size(); ++d) {
      if (g.sizes[d].value() == 0) return std::make_pair(Int(0), Int(-1));
      Int reach = (g.sizes[d].value() - 1) * g.strides[d].value();
      (reach < 0 ? lo : hi) += reach;
    }
    return std::make_pair(lo, hi);
  };
  auto w = span(*written);
  auto x = span(whole);
  if (!w || !x || !whole.non_overlapping_and_dense()) return false;
  return w->second < w->first || (x->first <= w->first && w->second <= x->second);
}

// The node's other operands while it writes the slot: one occurrence of each
// slot's own target is the buffer itself (for auto_functionalized_v2, a base
// still cloned is read through its clone, taken before anything is written);
// everything else must not touch the buffer's elements (elementwise ops may
// read exactly them); nor may a buffer another slot of the node writes.
std::optional<Decision> Walk::check_other_operands(NodeId i, const WriteSlot& slot, bool elementwise) {
  const Node& node = g_.at(i);
  NodeId me = rep(slot.target);
  StorageId my_class = classes_.root(value(me)->storage);
  // An ATen op's slots are alternatives (self, or a dead operand): only the
  // one tried is written; every other operand is an ordinary read.
  const bool alternatives = node.kind == NodeKind::kOp;
  std::vector<NodeId> slot_targets;
  if (alternatives) slot_targets.push_back(slot.target);
  for (const WriteSlot& s : node.slots)
    if (!alternatives) slot_targets.push_back(s.target);
  const Decision& so_far = decisions_[static_cast<size_t>(i)];
  for (size_t k = 0; k < node.slots.size() && !alternatives; ++k) {
    const WriteSlot& other = node.slots[k];
    if (&other == &slot) continue;
    bool writes = other.already_in_place || (k < so_far.slots.size() && so_far.slots[k].in_place);
    NodeId theirs = rep(other.target);
    const TensorValue* v = value(theirs);
    if (writes && v && classes_.root(v->storage) == my_class && !operand_is_harmless(theirs, me, false))
      return refuse(Reason::kOperandAliasesSelf, other.target);
  }
  for (NodeId op : node.operands) {
    auto found = std::find(slot_targets.begin(), slot_targets.end(), op);
    if (found != slot_targets.end()) {
      slot_targets.erase(found);
      continue;
    }
    NodeId other = rep(op);
    if (other == me) return refuse(Reason::kSelfRepeated, op);
    for (const TensorValue& v : g_.at(other).results) {
      if (classes_.root(v.storage) != my_class) continue;
      if (operand_is_harmless(other, me, elementwise)) continue;
      return refuse(Reason::kOperandAliasesSelf, op);
    }
  }
  return std::nullopt;
}

NodeId Walk::holder_of(NodeId i, const WriteSlot& slot) const {
  NodeKind kind = g_.at(i).kind;
  if (kind != NodeKind::kAutoFunctionalized && kind != NodeKind::kForeach) return i;
  for (const auto& [index, getitem] : items_[static_cast<size_t>(i)])
    if (index == slot.item) return getitem;
  return kNoNode;  // the new value is never used
}

void Walk::accept(const WriteSlot& slot, NodeId holder, StorageId result_storage) {
  NodeId target = rep(slot.target);
  if (holder != kNoNode) {
    rep_[static_cast<size_t>(holder)] = target;
    // A second getitem of the same item (FX does not dedupe them) reads it too.
    if (holder != slot.target && g_.at(holder).kind == NodeKind::kGetItem) {
      for (const auto& [index, getitem] : items_[static_cast<size_t>(g_.at(holder).item_of)])
        if (index == slot.item) rep_[static_cast<size_t>(getitem)] = target;
    }
  }
  if (result_storage >= 0) classes_.merge(value(target)->storage, result_storage);
}

// Slots of one node writing disjoint parts of one buffer (a `_foreach_*_`
// over two views of one tensor) were each checked against the buffer's reads
// as the node left it, but their writes all land at the node, while the
// functional graph shows each to later readers only when its own scatter puts
// it back:
//
//   fz = _foreach_zero([diagonal(b), as_strided(b, ...)])   _foreach_zero_([diagonal(b), as_strided(b, ...)])
//   d = diagonal_scatter(b, fz[0])            ->   d = b          # removed
//   u = unfold_backward(d, ...)                    u = unfold_backward(b, ...)  # sees fz[1] too
//   as_strided_scatter(u, fz[1], ...)              as_strided(u, ...).copy_(as_strided(b, ...))
//
// So where two accepted slots share a buffer, each must be put back by a
// removed scatter of its own new value, and those scatters must form one chain
// (each scattering into the previous one's result, which nothing else reads):
// every later reader then sees all the writes, as in the functional graph.
// Otherwise only the first slot of the buffer stays in place: returns the
// others (indices into `accepted`) with the scatter that breaks the chain.
std::vector<std::pair<size_t, NodeId>> Walk::refuse_unordered_shared_buffers(
    NodeId i, std::vector<Accepted>& accepted) {
  const Node& node = g_.at(i);
  // The accepted slots by the buffer they write, in slot order.
  std::vector<std::vector<size_t>> groups;
  std::unordered_map<StorageId, size_t> group_of;
  for (size_t a = 0; a < accepted.size(); ++a) {
    StorageId root = classes_.root(value(rep(node.slots[accepted[a].slot].target))->storage);
    auto [it, fresh] = group_of.try_emplace(root, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(a);
  }
  std::vector<std::pair<size_t, NodeId>> refused;  // (index into accepted, culprit)
  for (std::vector<size_t>& group : groups) {
    if (group.size() < 2) continue;
    refuse_returned_together(accepted, group, refused);
    if (group.size() < 2) continue;
    std::vector<NodeId> extra;
    if (auto culprit = unordered_shared_writes(i, accepted, group, extra)) {
      for (size_t m = 1; m < group.size(); ++m) refused.emplace_back(group[m], *culprit);
      continue;
    }
    std::vector<NodeId>& first = accepted[group[0]].scatters;
    first.insert(first.end(), extra.begin(), extra.end());
  }
  return refused;
}

// Two returned values in parts of one buffer would be two outputs sharing a
// storage, where the program returns tensors of their own (random pipelines
// seed 155184):
//   fx = _foreach_add([t[0], t[1]], 2)    _foreach_add_([t[0], t[1]], 2)
//   return fx[0], fx[1]              ->   return t[0], t[1]    # one storage
// Only the first returned slot of the buffer stays in place; the others
// leave `group` for `refused`, the output as culprit.
void Walk::refuse_returned_together(const std::vector<Accepted>& accepted, std::vector<size_t>& group,
                                    std::vector<std::pair<size_t, NodeId>>& refused) {
  NodeId output = g_.size() == 0 ? kNoNode : static_cast<NodeId>(g_.size()) - 1;
  if (output != kNoNode && g_.at(output).kind != NodeKind::kOutput) output = kNoNode;
  bool one_returned = false;
  std::vector<size_t> kept;
  for (size_t a : group) {
    const TensorValue* held = accepted[a].holder == kNoNode ? nullptr : value(accepted[a].holder);
    const bool returned = held && classes_.of(held->storage).returned;
    if (returned && one_returned) {
      refused.emplace_back(a, output);
      continue;
    }
    one_returned = one_returned || returned;
    kept.push_back(a);
  }
  group = std::move(kept);
}

// The chain `refuse_unordered_shared_buffers` needs, built from the group's
// pending scatters and followed through the scatters that read each one's
// result (those become removable only once it joins the buffer's class):
// nullopt where it holds (`extra`: the scatters to remove besides the slots'
// own), else the scatter that breaks it.
std::optional<NodeId> Walk::unordered_shared_writes(NodeId i, const std::vector<Accepted>& accepted,
                                                    const std::vector<size_t>& group,
                                                    std::vector<NodeId>& extra) {
  std::vector<NodeId> chain;
  for (size_t b : group) chain.insert(chain.end(), accepted[b].scatters.begin(), accepted[b].scatters.end());
  std::sort(chain.begin(), chain.end());
  chain.erase(std::unique(chain.begin(), chain.end()), chain.end());
  if (chain.empty()) return std::nullopt;  // a dead buffer: nothing reads the writes
  const StorageId buffer = value(rep(g_.at(i).slots[accepted[group[0]].slot].target))->storage;
  for (size_t m = 0; m < chain.size(); ++m) {
    const TensorValue* made = value(chain[m]);
    if (!made) return chain[m];
    const AliasClass& c = classes_.of(made->storage);
    if (m + 1 < chain.size() && c.last_read != kNoNode) return chain[m + 1];
    std::vector<NodeId> readers(c.scatter_reads.begin() + static_cast<std::ptrdiff_t>(c.pruned),
                                c.scatter_reads.end());
    readers.erase(std::remove_if(readers.begin(), readers.end(), [&](NodeId j) { return j <= chain[m]; }),
                  readers.end());
    if (readers.empty()) continue;
    const NodeId next = readers.front();
    if (readers.size() > 1 || c.last_read != kNoNode) return next;  // the result is read besides the chain
    if (m + 1 < chain.size()) {
      if (chain[m + 1] != next) return next;
      continue;
    }
    if (scatter_base_overlaps(next) || !inverts_a_view(next, buffer)) return next;
    chain.push_back(next);
    extra.push_back(next);
  }
  for (size_t b : group) {
    const NodeId holder = accepted[b].holder;
    bool own = holder != kNoNode && std::any_of(chain.begin(), chain.end(), [&](NodeId j) {
                 return g_.at(j).scatter_src != kNoNode && rep(g_.at(j).scatter_src) == rep(holder);
               });
    if (!own) return chain.front();
  }
  return std::nullopt;
}

void Walk::decide_slots(NodeId i, bool all_or_none) {
  const Node& node = g_.at(i);
  Decision& out = decisions_[static_cast<size_t>(i)];
  out.slots.assign(node.slots.size(), SlotDecision{});
  const SlotDecision* first_refusal = nullptr;
  bool any_new = false;
  std::vector<Accepted> accepted;
  for (size_t k = 0; k < node.slots.size(); ++k) {
    const WriteSlot& slot = node.slots[k];
    SlotDecision& d = out.slots[k];
    if (slot.already_in_place) {
      d = {true, Reason::kDone, kNoNode};
      continue;
    }
    auto refuse_slot = [&](const Decision& why) {
      d = {false, why.reason, why.culprit};
      if (!first_refusal) first_refusal = &d;
    };
    NodeId target = rep(slot.target);
    const TensorValue* tv = value(target);
    const TensorValue* result = g_.result(i, slot.result);
    if (!tv || !result) {
      refuse_slot(refuse(Reason::kNotCandidate));
      continue;
    }
    if (flips_values(tv->dtype)) {
      refuse_slot(refuse(Reason::kSelfFlipsValues));
      continue;
    }
    if (result->dtype != tv->dtype) {
      refuse_slot(refuse(Reason::kMetadataMismatch));
      continue;
    }
    if (result->shape != tv->shape) {
      refuse_slot(refuse(Reason::kShapeMismatch));
      continue;
    }
    if (g_.geometries().at(tv->geom).has_internal_overlap()) {
      refuse_slot(refuse(Reason::kSelfOverlaps));
      continue;
    }
    NodeId holder = holder_of(i, slot);
    if (node.kind == NodeKind::kForeach) {
      if (auto refused = inductor_refuses_foreach_slot(i, slot, holder)) {
        refuse_slot(*refused);
        continue;
      }
    }
    if (auto refused = check_write(i, slot, holder, /*elementwise=*/false)) {
      refuse_slot(*refused);
      continue;
    }
    std::vector<NodeId> removable;
    if (auto refused = check_pending_scatters(i, tv->storage, removable)) {
      refuse_slot(*refused);
      continue;
    }
    if (holder != kNoNode && move_is_visible(holder, target)) {
      refuse_slot(refuse(Reason::kLayoutSensitiveUse));
      continue;
    }
    if (auto refused = inductor_refuses_write(i, slot, holder, result->storage)) {
      refuse_slot(*refused);
      continue;
    }
    d = {true, Reason::kDone, kNoNode};
    any_new = true;
    accepted.push_back({k, holder, result->storage, std::move(removable)});
  }
  std::vector<bool> dropped(accepted.size(), false);
  for (const auto& [a, culprit] : refuse_unordered_shared_buffers(i, accepted)) {
    const Decision why = refuse(Reason::kUsedLater, culprit);
    SlotDecision& d = out.slots[accepted[a].slot];
    d = {false, why.reason, why.culprit};
    if (!first_refusal) first_refusal = &d;
    dropped[a] = true;
  }
  std::vector<Accepted> kept;
  for (size_t a = 0; a < accepted.size(); ++a)
    if (!dropped[a]) kept.push_back(std::move(accepted[a]));
  accepted = std::move(kept);
  if (all_or_none && first_refusal) {
    out.action = Action::kKeep;
    out.reason = first_refusal->reason;
    out.culprit = first_refusal->culprit;
    // No slot is written: the ones that passed share the node's refusal.
    for (SlotDecision& d : out.slots)
      if (d.in_place) d = {false, out.reason, out.culprit};
    return;
  }
  // Merged only now: every base was checked against what reads it after the
  // node, not against the other bases' new values (which check_other_operands
  // proved live in memory disjoint from it).
  for (const Accepted& a : accepted) accept(node.slots[a.slot], a.holder, a.storage);
  for (const Accepted& a : accepted)
    for (NodeId j : a.scatters)
      if (decisions_[static_cast<size_t>(j)].action != Action::kRemoveScatter) remove_scatter(j);
  // No base left to clone: the node can become a direct call of the op.
  out.action = !first_refusal ? Action::kInplace : any_new ? Action::kPartialInplace : Action::kKeep;
  out.reason = first_refusal ? first_refusal->reason : Reason::kDone;
  out.culprit = first_refusal ? first_refusal->culprit : kNoNode;
}

// copy_(input, value) where `value` now lives exactly in `input`'s memory
// (the epilogue rule, or an auto_functionalized_v2 base mutated in place):
// the copy would copy it onto itself.
void Walk::decide_write_back(NodeId i) {
  const Node& node = g_.at(i);
  if (node.written_value == kNoNode || node.self != node.written_input) return;
  NodeId dst = rep(node.self);
  NodeId src = rep(node.written_value);
  bool same = src == dst;
  if (!same) {
    const TensorValue* a = value(src);
    const TensorValue* b = value(dst);
    if (a && b && a->dtype == b->dtype && classes_.root(a->storage) == classes_.root(b->storage)) {
      auto ga = effective_geom(src);
      auto gb = effective_geom(dst);
      same = ga && gb && ga->same_elements(*gb);
    }
  }
  if (!same) return;
  Decision& out = decisions_[static_cast<size_t>(i)];
  out.action = Action::kRemoveCopy;
  out.reason = Reason::kDone;
  out.replacement = node.self;
}

}  // namespace fxinplace::core
