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
  // specializes sizes 0 and 1, so a symbolic size is 1 only as an expression,
  // Min(1, s0 - 1) from a diagonal, seed 6308: expand() changed that dim, so
  // there it is 1.)
  const int64_t lead = mutated.dim() - base.dim();
  std::vector<int64_t> kept;
  std::vector<int64_t> repeated;
  c10::SymInt copies = 1;
  std::vector<c10::SymInt> kept_sizes;
  for (int64_t d = 0; d < mutated.dim(); ++d) {
    const bool repeats = d < lead || (is_one(base.sym_size(d - lead)) && !is_one(mutated.sym_size(d))) ||
                         TORCH_GUARD_OR_FALSE(base.sym_size(d - lead).sym_ne(mutated.sym_size(d)));
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
  if (fold == CopiesFold::kSumOfChanges) {
    // Every copy of a base element side by side in the last dim, the
    // element's position in the others (functional ops only, in both modes).
    std::vector<int64_t> order = kept;
    order.insert(order.end(), repeated.begin(), repeated.end());
    std::vector<c10::SymInt> grouped_sizes = kept_sizes;
    grouped_sizes.push_back(copies);
    auto grouped = [&](const at::Tensor& t) {
      return at::view_copy_symint(at::permute_copy(t, order), grouped_sizes);
    };
    at::Tensor old_copies = grouped(at::expand_copy_symint(base, mutated.sym_sizes()));
    at::Tensor changes =
        at::sum(at::sub(grouped(mutated), old_copies), {-1}, /*keepdim=*/true, base.scalar_type());
    return at::view_copy_symint(at::add(at::view_copy_symint(base, changes.sym_sizes()), changes),
                                base.sym_sizes());
  }
  // The written copy is found byte by byte, not element by element: a write
  // through a view(dtype) of narrower elements changes part of an element in
  // one copy and another part in another. x (3, 4) float32;
  //   x.expand(3, 3, 4).view(torch.float16).diagonal(0, 2, 0).fill_(1)
  // writes the low half of x[:, 0] in copy 0, its high half in copy 1.
  // Bytes also tell -0.0 from 0.0, and a NaN left alone from one written.
  // Copies first, then the element's position, then its bytes.
  std::vector<int64_t> order = repeated;
  order.insert(order.end(), kept.begin(), kept.end());
  std::vector<c10::SymInt> grouped_sizes{copies};
  grouped_sizes.insert(grouped_sizes.end(), kept_sizes.begin(), kept_sizes.end());
  grouped_sizes.emplace_back(1);
  auto bytes_of_copies = [&](const at::Tensor& t) {
    return at::view_copy(at::view_copy_symint(at::permute_copy(t, order), grouped_sizes), at::kByte);
  };
  at::Tensor old_copies = bytes_of_copies(at::expand_copy_symint(base, mutated.sym_sizes()));
  at::Tensor new_copies = bytes_of_copies(mutated);
  at::Tensor changed = at::ne(new_copies, old_copies);
  // The last changed copy: the highest position among the changed ones.
  std::vector<int64_t> position_sizes(static_cast<size_t>(new_copies.dim()), 1);
  position_sizes[0] = -1;
  at::Tensor position =
      at::view_copy(at::arange(c10::Scalar(1), c10::Scalar(copies + 1),
                               at::TensorOptions().dtype(at::kLong).device(mutated.device())),
                    position_sizes);
  at::Tensor last_changed = at::argmax(at::mul(changed, position), 0, /*keepdim=*/true);
  at::Tensor written = at::gather(new_copies, 0, last_changed);
  at::Tensor any_changed = at::any(changed, 0, /*keepdim=*/true);
  std::vector<c10::SymInt> one_copy_sizes = grouped_sizes;
  one_copy_sizes[0] = 1;
  at::Tensor old_bytes = at::view_copy(at::view_copy_symint(base, one_copy_sizes), at::kByte);
  at::Tensor folded = at::view_copy(at::where(any_changed, written, old_bytes), base.scalar_type());
  return at::view_copy_symint(folded, base.sym_sizes());
}

}  // namespace fxinplace::functionalize
