#include "functionalize/meta_geometry.h"

#include <ATen/ATen.h>
#include <c10/core/SymBool.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

namespace fxinplace::functionalize {
namespace {

// The keys of Python modes (make_fx's proxy and fake modes), which must not
// see these meta computations. Not PythonDispatcher: SymInt arithmetic inside
// kernels calls into Python, which must still find it (excluding it trips
// torch's own consistency checks under symbolic tracing).
c10::DispatchKeySet python_keys() { return c10::python_ks; }

bool known_true(const c10::SymBool& b) { return TORCH_STATICALLY_KNOWN_TRUE(b); }

bool is_zero(const c10::SymInt& size) { return TORCH_GUARD_SIZE_OBLIVIOUS(size.sym_eq(0)); }

c10::SymInt extent_of(c10::SymIntArrayRef sizes, c10::SymIntArrayRef strides,
                      const c10::SymInt& storage_offset) {
  // An empty tensor addresses nothing. (Tested per dim rather than clamped
  // with max(): a traced sym_max would land in the graph.)
  for (const c10::SymInt& size : sizes)
    if (is_zero(size)) return storage_offset;
  c10::SymInt extent = storage_offset + 1;
  for (size_t d = 0; d < sizes.size(); ++d) extent = extent + (sizes[d] - 1) * strides[d];
  return extent;
}

}  // namespace

std::vector<c10::SymInt> contiguous_strides(c10::SymIntArrayRef sizes) {
  std::vector<c10::SymInt> strides(sizes.size());
  c10::SymInt stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    if (!is_zero(sizes[d])) stride = stride * sizes[d];
  }
  return strides;
}

c10::SymInt storage_extent(const at::Tensor& t) {
  return extent_of(t.sym_sizes(), t.sym_strides(), t.sym_storage_offset());
}

at::Tensor meta_strided(at::ScalarType dtype, c10::SymIntArrayRef sizes, c10::SymIntArrayRef strides,
                        const c10::SymInt& storage_offset) {
  c10::impl::ExcludeDispatchKeyGuard no_modes(python_keys());
  at::Tensor storage = at::empty_symint({extent_of(sizes, strides, storage_offset)},
                                        at::TensorOptions().dtype(dtype).device(c10::kMeta));
  return storage.as_strided_symint(sizes, strides, storage_offset);
}

at::Tensor meta_like(const at::Tensor& like) {
  return meta_strided(like.scalar_type(), like.sym_sizes(), like.sym_strides(), like.sym_storage_offset());
}

namespace {

// Elements `like` spans from its storage's start (offset + the reach of its
// dims), where no two of its elements share memory and its strides are
// positive; nullopt where that cannot be decided without a guard on data.
std::optional<c10::SymInt> non_overlapping_span(const at::Tensor& like) {
  std::vector<std::pair<c10::SymInt, c10::SymInt>> dims;  // (stride, size)
  for (int64_t d = 0; d < like.dim(); ++d) {
    const c10::SymInt size = like.sym_size(d);
    const c10::SymInt stride = like.sym_stride(d);
    if (!TORCH_GUARD_OR_FALSE(size.sym_gt(0)) || !TORCH_GUARD_OR_FALSE(stride.sym_ge(0))) return std::nullopt;
    if (!TORCH_GUARD_OR_FALSE(size.sym_eq(1))) dims.emplace_back(stride, size);
  }
  std::stable_sort(dims.begin(), dims.end(), [](const auto& a, const auto& b) {
    return TORCH_GUARD_OR_FALSE(a.first.sym_lt(b.first));
  });
  c10::SymInt reach = 1;  // elements the inner dims span
  for (const auto& [stride, size] : dims) {
    if (!TORCH_GUARD_OR_FALSE(stride.sym_ge(reach))) return std::nullopt;
    reach = stride * (size - 1) + reach;
  }
  return like.sym_storage_offset() + reach;
}

}  // namespace

// A graph input with gaps between its elements (x0[..., 1:]) keeps its
// layout in eager, where writes land in place: later results computed from it
// follow its strides, its storage_offset() stays, and as_strided of it
// addresses its storage. Functionally, its new value is laid out so too: the
// value scattered into a copy of the input's storage span, viewed at the
// input's place (the gaps hold what the input's storage held there).
at::Tensor with_gapped_layout_of(const at::Tensor& t, const at::Tensor& like) {
  const std::optional<c10::SymInt> span = non_overlapping_span(like);
  if (!span) return t;
  // The gaps keep what `like`'s storage holds there (eager reads them through
  // as_strided): the span of its storage, copied.
  at::Tensor buffer = like.as_strided_symint({*span}, {1}, 0).clone();
  return at::as_strided_scatter_symint(buffer, t, like.sym_sizes(), like.sym_strides(),
                                       like.sym_storage_offset())
      .as_strided_symint(like.sym_sizes(), like.sym_strides(), like.sym_storage_offset());
}

namespace {

// `t` (`like`'s sizes and strides but in size-1 dims) with `like`'s strides in
// its size-1 dims too. Such a stride addresses nothing, but TensorIterator
// orders dims by stride, size-1 dims included, so the layout of a result
// computed from the tensor follows it: a kernel's result keeps its input's
// stride there or not (index_add of x1 of sizes (3, 7, 1), strides
// (7, 1, 42), gives stride 1), and `t0 | t0` of a view of it came out
// (3, 15, 1, 1) where eager's is (1, 15, 5, 45) (random pipelines seed 200786).
// Only where the strides recorded differ: as_strided bakes in the sizes,
// which a symbolic trace keeps only where it specialized them (a dim that is
// 1 at the traced sizes, x1 = a[1:] of a (2, 1) a, may be 2 at the next run
// of a graph that never reads its size).
at::Tensor with_unit_strides_of(const at::Tensor& t, const at::Tensor& like, bool views) {
  // With remove="mutations_and_views" values are compact copies whatever
  // eager's layout (and a copy laid out anew would hold only the elements,
  // where as_strided of the tensor may address its storage past them: random
  // pipelines seed 186315): left as they are.
  if (!views) return t;
  // Decided without guards: a symbolic trace must not specialize a size.
  if (!known_true(t.sym_numel().sym_ne(0))) return t;  // maybe addresses nothing, laid out anyhow
  bool differs = false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (known_true(t.sym_size(d).sym_eq(1)))
      differs = differs || !TORCH_GUARD_OR_TRUE(t.sym_stride(d).sym_eq(like.sym_stride(d)));
  if (!differs) return t;
  return t.as_strided_symint(like.sym_sizes(), like.sym_strides(), t.sym_storage_offset());
}

}  // namespace

at::Tensor with_dense_layout_of(const at::Tensor& t, const at::Tensor& like, bool views) {
  // Decided without guards on data-dependent sizes (a boolean mask's
  // x[x > 0]): what cannot be decided leaves `t` as it is.
  if (t.dim() != like.dim()) return t;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (!TORCH_GUARD_OR_FALSE(t.sym_size(d).sym_eq(like.sym_size(d)))) return t;
  bool same = true;
  for (int64_t d = 0; d < t.dim(); ++d)
    same = same && (TORCH_GUARD_OR_FALSE(t.sym_size(d).sym_eq(1)) ||
                    TORCH_GUARD_OR_TRUE(t.sym_stride(d).sym_eq(like.sym_stride(d))));
  // An input that does not start its storage (x[1:]) keeps its offset too:
  // storage_offset() and as_strided of it read it (random pipelines seed 954).
  // Not under a fake or symbolic trace: relocating bakes the input's sizes
  // into the graph, which a symbolic trace must not specialize (a size-1
  // input sliced from an input it shares memory with).
  const bool traced = t.key_set().has(c10::DispatchKey::Python);
  const bool same_offset =
      traced || TORCH_GUARD_OR_TRUE(t.sym_storage_offset().sym_eq(like.sym_storage_offset()));
  if (same && (same_offset || !views)) return with_unit_strides_of(t, like, views);
  if (!same_offset || !TORCH_GUARD_OR_FALSE(like.unsafeGetTensorImpl()->sym_is_non_overlapping_and_dense()))
    return views ? with_gapped_layout_of(t, like) : t;
  if (!views) {
    // as_strided_scatter keeps its input's layout; at its own geometry it
    // writes every element. (aten::copy is generated from copy_, which a mode
    // under us records as a mutation.)
    return at::as_strided_scatter_symint(
        at::empty_strided_symint(like.sym_sizes(), like.sym_strides(), t.options()), t, like.sym_sizes(),
        like.sym_strides(), 0);
  }
  // Dims from the largest stride to the smallest: contiguous in that order is `like`'s layout.
  std::vector<int64_t> order(t.dim());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return TORCH_GUARD_OR_FALSE(like.sym_stride(a).sym_gt(like.sym_stride(b)));
  });
  std::vector<int64_t> inverse(order.size());
  for (size_t k = 0; k < order.size(); ++k) inverse[order[k]] = static_cast<int64_t>(k);
  return t.permute(order).contiguous().permute(inverse);
}

namespace {

// Whether the dims `left` (stride, size) can be ordered so that each stride
// provably steps past everything the dims before it span (`spanned`, the
// largest offset they reach). Such an order is by increasing stride, so it
// is searched for without comparing strides that cannot be compared.
bool some_order_steps_past(std::vector<std::pair<c10::SymInt, c10::SymInt>>& left,
                           const c10::SymInt& spanned) {
  if (left.empty()) return true;
  for (size_t k = 0; k < left.size(); ++k) {
    auto [stride, size] = left[k];
    if (!known_true(stride.sym_gt(spanned))) continue;
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(k));
    const bool found = some_order_steps_past(left, spanned + (size - 1) * stride);
    left.insert(left.begin() + static_cast<std::ptrdiff_t>(k), {stride, size});
    if (found) return true;
  }
  return false;
}

}  // namespace

// Whether distinct elements of `t` provably occupy distinct memory: with its
// dims ordered by stride, each stride must step past everything the smaller
// dims span. Overlapping windows (unfold with step < size, as_strided) fail
// it; eager then writes them in kernel order (x.unfold(0, 2, 1).add_(1) adds
// twice where windows overlap), which a functional value cannot express.
// Symbolic geometry should satisfy it for every value of its symbols; where
// that cannot be shown without guards, it is decided at the traced sizes.
bool provably_injective(const at::Tensor& t) {
  if (!t.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
    if (t.is_non_overlapping_and_dense()) return true;  // the common case, cached
    std::vector<std::pair<int64_t, int64_t>> dims;      // (stride, size)
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (t.size(d) == 0) return true;
      if (t.size(d) > 1) dims.emplace_back(t.stride(d), t.size(d));
    }
    std::sort(dims.begin(), dims.end());
    int64_t spanned = 0;
    for (const auto& [stride, size] : dims) {
      if (stride <= spanned) return false;
      spanned += (size - 1) * stride;
    }
    return true;
  }
  std::vector<std::pair<c10::SymInt, c10::SymInt>> dims;
  for (int64_t d = 0; d < t.dim(); ++d) {
    const c10::SymInt& size = t.sym_size(d);
    if (known_true(size.sym_eq(0))) return true;
    if (!known_true(size.sym_le(1))) dims.emplace_back(t.sym_stride(d), size);
  }
  // A dim of size 1 steps past nothing: counting one that might be 1 is
  // only stricter.
  if (some_order_steps_past(dims, c10::SymInt(0))) return true;
  // Not shown for every value of the symbols (an input's strides are symbols
  // of their own, unrelated to its sizes): decided at the traced sizes, with
  // guards, as eager's kernels decide their checks under fake tensors. A size
  // or stride that depends on data counts as overlapping.
  std::vector<std::pair<c10::SymInt, c10::SymInt>> traced;
  for (const auto& [stride, size] : dims)
    if (TORCH_GUARD_OR_TRUE(size.sym_gt(1))) traced.emplace_back(stride, size);
  std::stable_sort(traced.begin(), traced.end(), [](const auto& a, const auto& b) {
    return TORCH_GUARD_OR_FALSE(a.first.sym_lt(b.first));
  });
  c10::SymInt spanned = 0;
  for (const auto& [stride, size] : traced) {
    if (!TORCH_GUARD_OR_FALSE(stride.sym_gt(spanned))) return false;
    spanned = spanned + (size - 1) * stride;
  }
  return true;
}

std::optional<at::Tensor> same_bytes_as(const at::Tensor& t, at::ScalarType dtype) {
  const int64_t from = static_cast<int64_t>(c10::elementSize(t.scalar_type()));
  const int64_t to = static_cast<int64_t>(c10::elementSize(dtype));
  if (from == to) return meta_strided(dtype, t.sym_sizes(), t.sym_strides(), t.sym_storage_offset());
  if (t.dim() == 0) return std::nullopt;  // view(dtype) of a 0-dim tensor keeps the element size
  std::vector<c10::SymInt> sizes = t.sym_sizes().vec();
  std::vector<c10::SymInt> strides = t.sym_strides().vec();
  c10::SymInt offset = t.sym_storage_offset();
  c10::SymInt& last = sizes.back();
  if (!known_true(strides.back().sym_eq(1)) && !known_true(last.sym_eq(1))) return std::nullopt;
  strides.back() = 1;
  if (to > from) {
    // Each element of `dtype` holds `ratio` of `t`'s, side by side in the last dim.
    const int64_t ratio = to / from;
    auto divides = [&](const c10::SymInt& v) { return known_true((v % ratio).sym_eq(0)); };
    if (!divides(last) || !divides(offset)) return std::nullopt;
    for (size_t d = 0; d + 1 < strides.size(); ++d) {
      if (!divides(strides[d])) return std::nullopt;
      strides[d] = strides[d] / ratio;
    }
    last = last / ratio;
    offset = offset / ratio;
  } else {
    const int64_t ratio = from / to;
    for (size_t d = 0; d + 1 < strides.size(); ++d) strides[d] = strides[d] * ratio;
    last = last * ratio;
    offset = offset * ratio;
  }
  return meta_strided(dtype, sizes, strides, offset);
}

at::Tensor scatter_into_storage(const at::Tensor& input, const at::Tensor& src, c10::SymIntArrayRef sizes,
                                c10::SymIntArrayRef strides, const c10::SymInt& storage_offset,
                                CopiesFold fold) {
  // A view with the negative or conjugate bit (a real view of _neg_view or
  // _conj, kept with remove="mutations"): ops on it other than views resolve
  // the bit into a fresh tensor first, which loses the storage the geometry
  // addresses. Scatter into the storage's own values instead.
  if (input.is_neg())
    return at::neg(
        scatter_into_storage(at::_neg_view(input), at::neg(src), sizes, strides, storage_offset, fold));
  if (input.is_conj())
    return at::conj_physical(
        scatter_into_storage(at::_conj(input), at::conj_physical(src), sizes, strides, storage_offset, fold));
  // Elements sharing memory through stride-0 dims (y.as_strided((3, 2), (0, 1))
  // written, x.expand(3)[:2].unfold(0, 1, 1) zeroed): the geometry is an
  // expand() of one with size 1 there. as_strided_scatter refuses such a
  // destination, so the copies fold first, as through expand(), into a value
  // for that geometry, which repeats no memory in those dims.
  std::vector<c10::SymInt> one_copy = sizes.vec();
  bool repeats = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (TORCH_GUARD_OR_FALSE(strides[d].sym_eq(0)) && TORCH_GUARD_OR_FALSE(sizes[d].sym_gt(1))) {
      one_copy[d] = 1;
      repeats = true;
    }
  }
  if (repeats) {
    const at::Tensor old_copies = at::as_strided_copy_symint(input, one_copy, strides, storage_offset);
    const at::Tensor folded = fold_expand_back(old_copies, src, /*reapply_views=*/true, fold);
    return scatter_into_storage(input, folded, one_copy, strides, storage_offset, fold);
  }
  const c10::SymInt start = input.sym_storage_offset();
  const c10::SymInt end = extent_of(sizes, strides, storage_offset);
  // as_strided_scatter's result keeps its input's storage offset, and the value
  // depends on it: the write lands at `storage_offset` of that storage. Under
  // fake tensors torch's dispatch cache rebuilds a cached result at offset 0
  // (x[1:-1] of an input: offset 1 on the first call, 0 on the second identical
  // one), so a later trace addressed the written value one element off (seed
  // 104001). An input not provably at offset 0 whose elements hold the write
  // is scattered into a compact copy of its span instead, at offset 0 either way.
  // And as_strided_scatter clones its input keeping the layout only where no
  // two of its elements share memory: an expanded input (x.expand(-1, 3)
  // written through .unfold(1, 1, 3)) is cloned densely, and the geometry then
  // addressed other elements (an expand's copies of one element land in
  // different places). Such an input is relocated too: its storage span holds
  // each location once.
  const bool clone_keeps_layout = TORCH_GUARD_OR_FALSE(start.sym_eq(0)) && provably_injective(input);
  const bool within_elements = !TORCH_GUARD_OR_FALSE(storage_offset.sym_lt(start)) &&
                               !TORCH_GUARD_OR_FALSE(end.sym_gt(storage_extent(input)));
  // Decided at the traced sizes where not for every size, as the meta kernel decides.
  if ((clone_keeps_layout || !within_elements) && TORCH_GUARD_OR_FALSE(input.sym_numel().sym_ge(end)))
    return at::as_strided_scatter_symint(input, src, sizes, strides, storage_offset);
  // as_strided may address storage past the tensor's own elements (x[1:-1] of a
  // 5-element tensor, as_strided((2, 2), (2, 1)) reaching its last element; an
  // expand to size 0): eager writes that memory, but no functional value holds it
  // (seeds 2308, 6489).
  TORCH_CHECK(
      within_elements,
      "fxinplace.functionalize: a write through as_strided() reaches memory outside the elements of the "
      "tensor it views (its elements lie in storage offsets [",
      start, ", ", storage_extent(input), "), the write reaches [", storage_offset, ", ", end,
      ")); functionalization keeps only a tensor's elements, so it cannot express this write");
  at::Tensor memory = at::as_strided_copy_symint(input, {storage_extent(input) - start}, {1}, start);
  at::Tensor written = at::as_strided_scatter_symint(memory, src, sizes, strides, storage_offset - start);
  return at::as_strided_copy_symint(written, input.sym_sizes(), input.sym_strides(), 0);
}

bool same_geometry(const at::Tensor& a, const at::Tensor& b) {
  return a.sym_sizes() == b.sym_sizes() && a.sym_strides() == b.sym_strides() &&
         a.sym_storage_offset() == b.sym_storage_offset();
}

at::Tensor replay_on_meta(const at::Tensor& base,
                          const std::function<at::Tensor(const at::Tensor&)>& replay) {
  // Nor through the negative/conjugate fallbacks: under symbolic make_fx the Python
  // dispatcher's view() reference goes through prims.as_strided, which those
  // fallbacks do not treat as a view, so a view after _neg_view failed an ATen
  // assert (seed 6723). Geometry is all a replay computes; views keep the bits.
  c10::impl::ExcludeDispatchKeyGuard no_modes(
      python_keys() | c10::DispatchKeySet({c10::DispatchKey::Negative, c10::DispatchKey::Conjugate}));
  return replay(meta_like(base));
}

}  // namespace fxinplace::functionalize
