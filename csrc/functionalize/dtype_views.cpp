#include "functionalize/dtype_views.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <vector>

#include "functionalize/meta_geometry.h"

namespace fxinplace::functionalize {

namespace {

bool has_symbols(const at::Tensor& t) {
  auto symbolic = [](const c10::SymInt& s) { return s.is_symbolic(); };
  return std::any_of(t.sym_sizes().begin(), t.sym_sizes().end(), symbolic) ||
         std::any_of(t.sym_strides().begin(), t.sym_strides().end(), symbolic);
}

// view(dtype)'s rule on strides: between element sizes the last dim must be
// contiguous, and into wider elements every other stride a multiple of the
// ratio, size-1 dims included.
bool strides_viewable_as(const at::Tensor& t, at::ScalarType dtype) {
  const int64_t from = static_cast<int64_t>(t.element_size());
  const int64_t to = static_cast<int64_t>(c10::elementSize(dtype));
  if (from == to || t.dim() == 0) return true;
  if (!TORCH_GUARD_OR_FALSE(t.sym_stride(-1).sym_eq(1))) return false;
  for (int64_t d = 0; to > from && d + 1 < t.dim(); ++d)
    if (!TORCH_GUARD_OR_FALSE((t.sym_stride(d) % (to / from)).sym_eq(0))) return false;
  return true;
}

}  // namespace

bool viewable_as(const at::Tensor& t, at::ScalarType dtype) {
  const int64_t from = static_cast<int64_t>(t.element_size());
  const int64_t to = static_cast<int64_t>(c10::elementSize(dtype));
  if (!strides_viewable_as(t, dtype)) return false;
  return to <= from || t.dim() == 0 || TORCH_GUARD_OR_FALSE((t.sym_storage_offset() % (to / from)).sym_eq(0));
}

// A value's size-1 dims may have any stride (a functional kernel's layout,
// which eager's tensor need not share): those strides are set as a
// contiguous layout would have them, the same memory, so view(dtype) sees
// what eager's tensor would show it. (A size-1 dim addresses one element
// whatever its stride.) Under a symbolic trace the strides recorded for a
// size-1 dim need not be the run's either (random pipelines seed 156493:
// _foreach_add of a transposed input of sizes (2, 3, s0, 1) records stride 1
// in its last dim, the run gets s0), so there they are set whatever they read.
// Nor need a fake trace's: a fake kernel lays its result out anew where the
// real one may keep its input's strides (random pipelines seed 198507:
// index_put of a (1,) input of stride 2 records stride 1, the run gets 2,
// and view(torch.float32) of it raises), so a value under a fake mode (its
// Python key) is treated as a symbolic one.
at::Tensor with_contiguous_unit_strides(const at::Tensor& t, at::ScalarType dtype, bool reapply_views) {
  if (t.element_size() == c10::elementSize(dtype) || t.dim() == 0) return t;
  const bool recorded_strides_may_differ = has_symbols(t) || t.key_set().has(c10::DispatchKey::Python);
  if (viewable_as(t, dtype) && !recorded_strides_may_differ) return t;
  // An empty tensor addresses nothing whatever its strides (random pipelines
  // seed 164760: x[:, :-1] of a (7, 1) x whose value is laid out (1, 7)).
  if (TORCH_GUARD_OR_FALSE(t.sym_numel().sym_eq(0))) {
    const std::vector<c10::SymInt> contiguous = contiguous_strides(t.sym_sizes());
    return reapply_views ? t.as_strided_symint(t.sym_sizes(), contiguous, t.sym_storage_offset())
                         : at::as_strided_copy_symint(t, t.sym_sizes(), contiguous, t.sym_storage_offset());
  }
  std::vector<c10::SymInt> strides = t.sym_strides().vec();
  c10::SymInt inner = 1;
  bool changed = false;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    if (TORCH_GUARD_OR_FALSE(t.sym_size(d).sym_eq(1))) {
      changed = changed || recorded_strides_may_differ || !TORCH_GUARD_OR_FALSE(strides[d].sym_eq(inner));
      strides[d] = inner;
    }
    inner = strides[d] * t.sym_size(d);
  }
  if (!changed) return t;
  return reapply_views ? t.as_strided_symint(t.sym_sizes(), strides, t.sym_storage_offset())
                       : at::as_strided_copy_symint(t, t.sym_sizes(), strides, t.sym_storage_offset());
}

at::Tensor viewable_as_dtype(const at::Tensor& t, at::ScalarType dtype, bool reapply_views) {
  const at::Tensor fixed = with_contiguous_unit_strides(t, dtype, reapply_views);
  // Nor need a value's storage offset be eager's: under a symbolic trace a
  // written input's value is addressed from the input's own start, an offset
  // of s0 + 1 in eager (even) becomes 1 (random pipelines seed 156181):
  //   t0 = view_as_complex(x.as_strided((2,), (1,), x.storage_offset() + 1))
  //   t0.as_strided_((2,), (1,), t0.storage_offset())   # replayed as view(dtype)
  // A wider dtype needs an offset of whole elements, which a contiguous copy
  // has. (Strides view(dtype) cannot take are left to raise as they are.)
  if (viewable_as(fixed, dtype) || !strides_viewable_as(fixed, dtype)) return fixed;
  return fixed.clone(at::MemoryFormat::Contiguous);
}

}  // namespace fxinplace::functionalize
