// Inputs of the function that share one storage (f(x, x[1:])), or one input
// with gaps between its elements (x[:, ::2]), joined lazily.
//
// Each such input starts as an alias group of its own whose value is the input
// itself, as torch.func.functionalize treats every input: the graph reads and
// writes the input tensors directly and names none of their geometry, so a
// symbolic trace stays general. Only when the sharing becomes visible are the
// inputs joined into one alias group over a flat base of their common storage,
// each input then the view of it at its eager place:
//
//   f(x0, x1) called as f(a, a[1:]):
//     x1.cumsum_(1); return x1         ->  c = cumsum(x1); copy_(x1, c); return c
//     x1.add_(1); return x0 * 2        ->  flat = as_strided(x0, [n], [1], 0)   # joined at
//                                          s = as_strided_scatter(flat, add(x1, 1), ...)  # x0's read
//                                          mul(as_strided(s, x0's geometry), 2), write-backs
//
// The sharing is visible when an op touches one input after another input of
// the set was written (the write must show through it), or addresses the
// storage (as_strided: what it reaches, and a write through it folds back
// into, is the whole storage, gaps included). Before that, at most one input
// of the set has been written, and its value is just that input's.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Storage.h>

#include <memory>
#include <vector>

namespace fxinplace::functionalize {

class AliasState;

class InputAliasSet : public std::enable_shared_from_this<InputAliasSet> {
 public:
  struct Member {
    std::weak_ptr<AliasState> alias;
    at::Tensor original;  // the input as it entered (unwrapped)
    at::Tensor layout;    // meta: the input's eager geometry in the shared storage
  };

  // Registers the functional tensors `wrapped` (each the base of an alias
  // group of its own, wrapping `originals[k]`) as one set; they take one
  // dataless storage, so storage identity is eager's.
  static void share(const std::vector<at::Tensor>& wrapped, const std::vector<at::Tensor>& originals);

  bool joined() const { return joined_.defined(); }
  // More than one input shares the storage (not just one input with gaps).
  bool shared() const { return members_.size() > 1; }
  // The flat base the members were joined over (unwrapped), once joined.
  const at::Tensor& flat_base() const { return joined_; }
  // Whether an op touching `touched` (a member's alias group) must see the
  // members joined first; `addresses_storage`: the op is as_strided-like.
  bool must_join(const AliasState* touched, bool addresses_storage) const;
  void join(bool reapply_views);
  // An as_strided-like op addressed the joined storage: a write through it may
  // land between the members' elements (x.as_strided((2,), (1,)).mul_(3) of
  // x = a[::2] writes a[1]), which no member's write-back carries, so the whole
  // flat base is written back.
  void note_addressed() { addressed_ = true; }
  bool addressed() const { return addressed_; }

 private:
  explicit InputAliasSet(std::vector<Member> members) : members_(std::move(members)) {}

  std::vector<Member> members_;
  at::Tensor joined_;
  bool addressed_ = false;
};

// Joins the set `t`'s alias group belongs to where an op touching it must see
// the members joined (see InputAliasSet::must_join). No-op for other tensors.
void join_inputs_if_needed(const at::Tensor& t, bool addresses_storage, bool reapply_views);

// Joins the set of an input that other inputs share storage with, before an op
// lays it out anew there (an out= argument of another shape): what it writes
// lands where the other inputs see it. No-op for other tensors.
void join_shared_inputs_before_relayout(const at::Tensor& t, bool reapply_views);

}  // namespace fxinplace::functionalize
