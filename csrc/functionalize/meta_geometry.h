// Eager geometry without data: dataless meta tensors laid out like a tensor
// (sizes, strides, storage offset; symbolic ones included), on which view ops
// are replayed to learn where a view lands in its base's storage.
//
// Python keys are excluded while these run, so no proxy/fake mode records
// them; with symbolic sizes the SymInt arithmetic may add shape guards, as the
// eager kernels under a fake mode would.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <vector>

#include "functionalize/expand_fold.h"

namespace fxinplace::functionalize {

// A dataless meta tensor with `like`'s dtype, sizes, strides and storage
// offset (not its conjugate/negative bits), on a meta storage just large
// enough for it.
at::Tensor meta_like(const at::Tensor& like);

// A dataless meta tensor of `dtype` with the given geometry.
at::Tensor meta_strided(at::ScalarType dtype, c10::SymIntArrayRef sizes, c10::SymIntArrayRef strides,
                        const c10::SymInt& storage_offset);

// The memory of `t`'s elements as a meta tensor of `dtype` of which
// view(t.scalar_type()) has `t`'s geometry (the same bytes, in units of
// `dtype`'s elements); nullopt where no such tensor exists (elements of
// another size that are not contiguous in the last dim, or that cover only
// part of some element of `dtype`).
std::optional<at::Tensor> same_bytes_as(const at::Tensor& t, at::ScalarType dtype);

// as_strided_scatter(input, src, sizes, strides, storage_offset): `input`
// cloned with its storage, the elements at that geometry of the storage
// replaced by `src`. The kernel addresses input's storage, but its meta kernel
// (fake and symbolic tracing) wants the geometry inside input.numel()
// elements from offset 0; where that is not certain (input is a view at an
// offset, or has gaps), the scatter happens on a fresh copy of the memory
// input spans, and its result is read back at input's geometry. A negated
// or conjugated view (its bit set) is scattered into without the bit. Where
// the geometry repeats memory through stride-0 dims, `fold` says how the
// copies of a location combine (as for a write through expand()).
at::Tensor scatter_into_storage(const at::Tensor& input, const at::Tensor& src, c10::SymIntArrayRef sizes,
                                c10::SymIntArrayRef strides, const c10::SymInt& storage_offset,
                                CopiesFold fold = CopiesFold::kWrittenCopy);

// Whether `a` and `b` have the same sizes, strides and storage offset.
bool same_geometry(const at::Tensor& a, const at::Tensor& b);

// `replay` applied to meta_like(base), with Python keys excluded.
at::Tensor replay_on_meta(const at::Tensor& base, const std::function<at::Tensor(const at::Tensor&)>& replay);

// The number of storage elements (of `t`'s dtype) from the storage's start
// that `t` can address: offset + 1 + sum((size - 1) * stride), or offset for
// an empty tensor.
c10::SymInt storage_extent(const at::Tensor& t);

// `t` laid out like `like` (same sizes) where the strides differ: where
// `like` is non-overlapping and dense, a copy in `like`'s dim order; where it
// has gaps or starts elsewhere in its storage (and `views`),
// with_gapped_layout_of. `t` otherwise.
// With `views` false, no view op is used (remove="mutations_and_views").
at::Tensor with_dense_layout_of(const at::Tensor& t, const at::Tensor& like, bool views = true);
// `t` at `like`'s exact place in a copy of `like`'s storage span,
// where `like` is non-overlapping with concrete geometry; `t` otherwise.
at::Tensor with_gapped_layout_of(const at::Tensor& t, const at::Tensor& like);

// Whether distinct elements of `t` provably occupy distinct memory (see the
// definition). Symbolic geometry: for every value of its symbols where that
// can be shown without guards, else at the traced sizes (adding guards).
bool provably_injective(const at::Tensor& t);

// The strides of a contiguous tensor of `sizes`.
std::vector<c10::SymInt> contiguous_strides(c10::SymIntArrayRef sizes);

}  // namespace fxinplace::functionalize
