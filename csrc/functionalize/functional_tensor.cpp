#include "functionalize/functional_tensor.h"

#include <ATen/core/TensorBody.h>

#include "functionalize/dispatch_key.h"

namespace fxinplace::functionalize {
namespace {

// Our key plus the value's backend/autograd keys. Python keys are dropped so a
// proxy or fake mode only ever sees the unwrapped values we pass down.
c10::DispatchKeySet wrapper_keys(const at::Tensor& value) {
  return c10::DispatchKeySet(kFunctionalizeKey) |
         (value.key_set() - c10::python_ks - c10::functorch_transforms_ks);
}

}  // namespace

FunctionalTensorImpl::FunctionalTensorImpl(at::Tensor value, std::shared_ptr<AliasState> alias,
                                           ViewChain views, uint64_t generation, at::Tensor layout)
    : c10::TensorImpl(c10::Storage(alias->storage()), wrapper_keys(value), value.dtype()),
      value_(std::move(value)),
      layout_(std::move(layout)),
      device_(value_.device()),
      alias_(std::move(alias)),
      views_(std::move(views)),
      generation_(generation) {
  set_custom_sizes_strides(SizesStridesPolicy::CustomSizes);
  set_custom_device(true);
  set_allow_tensor_metadata_change(true);
}

void FunctionalTensorImpl::set_value(at::Tensor value) { value_ = std::move(value); }

void FunctionalTensorImpl::sync(bool reapply_views) {
  if (generation_ == alias_->generation()) return;
  at::Tensor current = alias_->base(reapply_views);
  for (const auto& record : views_) current = record->forward(current, reapply_views);
  set_value(std::move(current));
  generation_ = alias_->generation();
}

void FunctionalTensorImpl::commit(const at::Tensor& new_value, const c10::OperatorName& writer) {
  alias_->add_update(new_value, views_, writer);
  // A base now simply is the new value. A view stays stale on purpose: it is
  // regenerated from the updated base, so its layout is the view's own.
  if (views_.empty()) {
    set_value(new_value);
    generation_ = alias_->generation();
  }
}

void FunctionalTensorImpl::become(const FunctionalTensorImpl& other) {
  alias_ = other.alias_;
  views_ = other.views_;
  generation_ = other.generation_;
  layout_ = other.layout_;
  set_value(other.value_);
}

void FunctionalTensorImpl::replace_base(const at::Tensor& new_value) {
  alias_->replace_base(new_value);
  layout_ = at::Tensor();
  set_value(new_value);
  generation_ = alias_->generation();
}

at::IntArrayRef FunctionalTensorImpl::sizes_custom() const { return metadata().sizes(); }
at::IntArrayRef FunctionalTensorImpl::strides_custom() const { return metadata().strides(); }
int64_t FunctionalTensorImpl::dim_custom() const { return metadata().dim(); }
int64_t FunctionalTensorImpl::numel_custom() const { return metadata().numel(); }
int64_t FunctionalTensorImpl::storage_offset_custom() const { return metadata().storage_offset(); }
c10::SymIntArrayRef FunctionalTensorImpl::sym_sizes_custom() const { return metadata().sym_sizes(); }
c10::SymInt FunctionalTensorImpl::sym_size_custom(int64_t d) const { return metadata().sym_size(d); }
c10::SymIntArrayRef FunctionalTensorImpl::sym_strides_custom() const { return metadata().sym_strides(); }
c10::SymInt FunctionalTensorImpl::sym_numel_custom() const { return metadata().sym_numel(); }
c10::SymInt FunctionalTensorImpl::sym_storage_offset_custom() const {
  return metadata().sym_storage_offset();
}
c10::SymBool FunctionalTensorImpl::sym_is_contiguous_custom(at::MemoryFormat memory_format) const {
  return metadata().unsafeGetTensorImpl()->sym_is_contiguous(memory_format);
}
bool FunctionalTensorImpl::is_strides_like_custom(at::MemoryFormat memory_format) const {
  return metadata().unsafeGetTensorImpl()->is_strides_like(memory_format);
}
c10::SymBool FunctionalTensorImpl::sym_is_non_overlapping_and_dense_custom() const {
  return metadata().unsafeGetTensorImpl()->sym_is_non_overlapping_and_dense();
}
c10::Device FunctionalTensorImpl::device_custom() const { return device_; }
c10::Layout FunctionalTensorImpl::layout_impl() const { return value_.layout(); }

c10::intrusive_ptr<c10::TensorImpl> FunctionalTensorImpl::shallow_copy_and_detach(
    const c10::VariableVersion& version_counter, bool allow_tensor_metadata_change) const {
  auto copy = c10::make_intrusive<FunctionalTensorImpl>(value_, alias_, views_, generation_, layout_);
  copy_tensor_metadata(this, copy.get(), version_counter, allow_tensor_metadata_change);
  return copy;
}

c10::intrusive_ptr<c10::TensorImpl> FunctionalTensorImpl::shallow_copy_and_detach(
    c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const {
  auto copy = c10::make_intrusive<FunctionalTensorImpl>(value_, alias_, views_, generation_, layout_);
  copy_tensor_metadata(this, copy.get(), std::move(version_counter), allow_tensor_metadata_change);
  return copy;
}

void FunctionalTensorImpl::shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) {
  auto* other = dynamic_cast<FunctionalTensorImpl*>(impl.get());
  TORCH_CHECK(other, "fxinplace.functionalize: cannot assign a non-functional tensor to a functional one");
  copy_tensor_metadata(other, this, version_counter(), allow_tensor_metadata_change());
  become(*other);
}

bool is_functional(const at::Tensor& t) {
  return t.defined() && t.unsafeGetTensorImpl()->key_set().has(kFunctionalizeKey);
}

FunctionalTensorImpl* functional_impl(const at::Tensor& t) {
  // Only FunctionalTensorImpl carries kFunctionalizeKey: register_fallback
  // made sure nobody else owns the key.
  return static_cast<FunctionalTensorImpl*>(t.unsafeGetTensorImpl());
}

at::Tensor wrap_new(const at::Tensor& value) {
  return at::detail::make_tensor<FunctionalTensorImpl>(value, std::make_shared<AliasState>(value),
                                                       ViewChain{}, 0);
}

at::Tensor wrap_view(const at::Tensor& value, const FunctionalTensorImpl& parent,
                     std::shared_ptr<const ViewRecord> record, bool reapply_views) {
  at::Tensor layout;
  const at::Tensor& parent_layout = parent.metadata();
  if (!reapply_views && !parent_layout.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) {
    // Best effort: the parent's layout is eager's only as far as we track it
    // (results of pure ops take their value's layout). Where the view cannot be
    // replayed on it, the view's own value answers metadata queries instead.
    try {
      layout = measure_on_meta(parent_layout, ViewChain{record});
    } catch (const c10::Error&) {
      layout = at::Tensor();
    }
  }
  ViewChain views = parent.views();
  views.push_back(std::move(record));
  return at::detail::make_tensor<FunctionalTensorImpl>(value, parent.alias(), std::move(views),
                                                       parent.generation(), std::move(layout));
}

at::Tensor unwrap_synced(const at::Tensor& t, bool reapply_views) {
  FunctionalTensorImpl* impl = functional_impl(t);
  impl->sync(reapply_views);
  return impl->value();
}

}  // namespace fxinplace::functionalize
