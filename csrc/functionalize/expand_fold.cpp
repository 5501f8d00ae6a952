#include "functionalize/expand_fold.h"

#include <ATen/ATen.h>

#include <vector>

namespace fxinplace::functionalize {
namespace {

bool is_one(const c10::SymInt& size) {
  const auto concrete = size.maybe_as_int();
  return concrete && *concrete == 1;
}

}  // namespace

at::Tensor fold_expand_back(const at::Tensor& base, const at::Tensor& mutated, bool reapply_views,
                            CopiesFold fold) {
  if (mutated.sym_sizes() == base.sym_sizes()) return mutated;
  // Dims of `mutated` that repeat base elements: the leading ones expand()
  // added, and those where a base dim of size 1 was expanded. (make_fx
  // specializes sizes 0 and 1, so a symbolic size is never 1.)
  const int64_t lead = mutated.dim() - base.dim();
  std::vector<int64_t> kept;
  std::vector<int64_t> repeated;
  c10::SymInt copies = 1;
  std::vector<c10::SymInt> kept_sizes;
  for (int64_t d = 0; d < mutated.dim(); ++d) {
    const bool repeats = d < lead || (is_one(base.sym_size(d - lead)) && !is_one(mutated.sym_size(d)));
    (repeats ? repeated : kept).push_back(d);
    if (repeats) {
      copies = copies * mutated.sym_size(d);
    } else {
      kept_sizes.push_back(mutated.sym_size(d));
    }
  }
  if (copies.maybe_as_int() == std::optional<int64_t>(1)) {
    // Only size-1 dims were added: the same elements in the same order.
    return reapply_views ? mutated.reshape_symint(base.sym_sizes())
                         : at::view_copy_symint(mutated, base.sym_sizes());
  }
  // Every copy of a base element side by side in the last dim, the element's
  // position in the others (functional ops only, in both remove modes).
  std::vector<int64_t> order = kept;
  order.insert(order.end(), repeated.begin(), repeated.end());
  std::vector<c10::SymInt> grouped_sizes = kept_sizes;
  grouped_sizes.push_back(copies);
  auto grouped = [&](const at::Tensor& t) {
    return at::view_copy_symint(at::permute_copy(t, order), grouped_sizes);
  };
  at::Tensor old_copies = grouped(at::expand_copy_symint(base, mutated.sym_sizes()));
  at::Tensor new_copies = grouped(mutated);
  if (fold == CopiesFold::kSumOfChanges) {
    at::Tensor changes = at::sum(at::sub(new_copies, old_copies), {-1}, /*keepdim=*/true, base.scalar_type());
    return at::view_copy_symint(at::add(at::view_copy_symint(base, changes.sym_sizes()), changes),
                                base.sym_sizes());
  }
  at::Tensor changed = at::ne(new_copies, old_copies);
  // The last changed copy: the highest position among the changed ones.
  at::Tensor position = at::arange(c10::Scalar(1), c10::Scalar(copies + 1),
                                   at::TensorOptions().dtype(at::kLong).device(mutated.device()));
  at::Tensor last_changed = at::argmax(at::mul(changed, position), -1, /*keepdim=*/true);
  at::Tensor written = at::gather(new_copies, -1, last_changed);
  at::Tensor any_changed = at::any(changed, -1, /*keepdim=*/true);
  at::Tensor folded = at::where(any_changed, written, at::view_copy_symint(base, written.sym_sizes()));
  return at::view_copy_symint(folded, base.sym_sizes());
}

}  // namespace fxinplace::functionalize
