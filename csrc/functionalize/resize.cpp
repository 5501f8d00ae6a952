#include "functionalize/resize.h"

#include <ATen/ATen.h>

#include "functionalize/functional_tensor.h"
#include "functionalize/input_alias_set.h"
#include "functionalize/meta_geometry.h"

namespace fxinplace::functionalize {
namespace {

c10::SymInt numel_of(c10::SymIntArrayRef sizes) {
  c10::SymInt n = 1;
  for (const c10::SymInt& s : sizes) n = n * s;
  return n;
}

// The number of storage elements `t` spans from its storage offset.
c10::SymInt spanned(const at::Tensor& t) {
  return t.sym_numel() == 0 ? c10::SymInt(0) : storage_extent(t) - t.sym_storage_offset();
}

// `value`'s memory from its storage offset, grown to `total` elements (in
// eager the new ones are uninitialized), as a flat contiguous tensor.
at::Tensor grown_memory(const std::string& name, const at::Tensor& value, const c10::SymInt& total) {
  const c10::SymInt kept = spanned(value);
  // Eager's new elements are that storage's data where the storage holds
  // more than the tensor spans; a graph input does not carry it. (A symbolic
  // storage size is no graph input either: arithmetic on it cannot be traced,
  // so it is only checked when concrete.)
  const c10::Storage& storage = value.unsafeGetTensorImpl()->unsafe_storage();
  const auto nbytes = storage ? storage.sym_nbytes().maybe_as_int() : std::nullopt;
  const auto offset = value.sym_storage_offset().maybe_as_int();
  const auto span = kept.maybe_as_int();
  if (nbytes && offset && span) {
    TORCH_CHECK(*nbytes / static_cast<int64_t>(value.element_size()) - *offset <= *span,
                "fxinplace.functionalize: ", name,
                " grows a tensor over storage beyond its elements (eager then reads that storage's data, "
                "which functionalization cannot express); resize a clone instead");
  }
  // A copy even when views are kept: the new value is written back into the
  // input it would otherwise alias.
  at::Tensor flat = at::as_strided_copy_symint(value, {kept}, {1}, value.sym_storage_offset());
  return at::constant_pad_nd_symint(flat, {0, total - kept}, 0);
}

at::Tensor contiguous_at(const at::Tensor& self, c10::SymIntArrayRef sizes) {
  return meta_strided(self.scalar_type(), sizes, contiguous_strides(sizes), self.sym_storage_offset());
}

// A view grows the storage: the alias group's base becomes the storage's
// memory from the base's offset, flat and long enough for `extent`; every
// alias (this one first) becomes a view of it where eager has it.
void grow_group_storage(const std::string& name, FunctionalTensorImpl& impl, const c10::SymInt& extent,
                        bool reapply_views) {
  AliasState& alias = *impl.alias();
  at::Tensor old_layout = alias.eager_base_layout();
  const c10::SymInt offset = old_layout.sym_storage_offset();
  at::Tensor memory = grown_memory(name, alias.base(reapply_views), extent - offset);
  at::Tensor new_layout = meta_strided(memory.scalar_type(), memory.sym_sizes(), {1}, offset);
  alias.replace_base(std::move(memory), std::move(old_layout), std::move(new_layout));
  impl.rebase_if_needed();
}

}  // namespace

void resize_functional(const c10::OperatorHandle& op, const at::Tensor& self, c10::SymIntArrayRef sizes,
                       std::optional<at::MemoryFormat> memory_format, bool reapply_views,
                       std::optional<c10::SymIntArrayRef> strides) {
  const std::string name = c10::toString(op.operator_name());
  TORCH_CHECK(!memory_format || *memory_format == at::MemoryFormat::Contiguous,
              "fxinplace.functionalize: ", name, " with memory_format=", *memory_format,
              " is not supported (only contiguous layouts)");
  // Same sizes: eager keeps the strides too.
  if (self.sym_sizes() == sizes) {
    functional_impl(self)->sync(reapply_views);
    return;
  }
  // A resize lays the tensor out anew from its offset, over whatever memory
  // follows: between a gapped input's elements, or over another input's
  // (x = t[1::2]; x.resize_(3) reads and writes t[2]; random pipelines seed
  // 133184: an out= argument x[..., 1::2] of an empty view grown into a gap).
  // Like as_strided, it addresses the storage, which only the joined base of
  // the inputs' set holds, and which is then written back whole.
  join_inputs_if_needed(self, /*addresses_storage=*/true, reapply_views);
  FunctionalTensorImpl* impl = functional_impl(self);  // (after the join: it follows the move)
  impl->sync(reapply_views);
  TORCH_CHECK(impl->views().empty() || self.scalar_type() == impl->alias()->base_value().scalar_type(),
              "fxinplace.functionalize: ", name, " resizes a view whose dtype (", self.scalar_type(),
              ") differs from that of the tensor it views, which is not supported");
  at::Tensor where = strides ? meta_strided(self.scalar_type(), sizes, *strides, self.sym_storage_offset())
                             : contiguous_at(self, sizes);
  // resize_ keeps the tensor's conjugate and negative bits, which
  // view_storage_at takes from `where` (random pipelines seed 123599: an out=
  // resize of y.conj() left it unconjugated, and .imag of it then raised).
  where._set_conj(self.is_conj());
  where._set_neg(self.is_neg());
  if (storage_extent(where) > storage_extent(impl->alias()->eager_base_layout())) {
    if (impl->views().empty()) {
      // The base grows: a new value, which other views keep their place in.
      at::Tensor memory = grown_memory(name, impl->value(), numel_of(sizes));
      impl->replace_base(reapply_views ? memory.view_symint(sizes) : at::view_copy_symint(memory, sizes));
      return;
    }
    grow_group_storage(name, *impl, storage_extent(where), reapply_views);
  }
  // Within the storage eager only changes metadata: the tensor becomes the
  // contiguous view at its offset, and every other view keeps its data.
  impl->view_storage_at(where, "resize_ left the storage");
}

}  // namespace fxinplace::functionalize
