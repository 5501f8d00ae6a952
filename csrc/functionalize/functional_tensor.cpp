#include "functionalize/functional_tensor.h"

#include <ATen/core/TensorBody.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "functionalize/dispatch_key.h"
#include "functionalize/meta_geometry.h"

namespace fxinplace::functionalize {
namespace {

const c10::DispatchKeySet kValueBits{c10::DispatchKey::Conjugate, c10::DispatchKey::Negative};

// Our key plus the value's backend/autograd keys. Python keys are dropped so a
// proxy or fake mode only ever sees the unwrapped values we pass down. The
// conjugate/negative bits are eager's (the layout's, where a `*_copy` value
// holds the resolved values): composite ops such as resolve_conj() ask for them.
c10::DispatchKeySet wrapper_keys(const at::Tensor& value, const at::Tensor& layout) {
  const at::Tensor& eager = layout.defined() ? layout : value;
  return c10::DispatchKeySet(kFunctionalizeKey) |
         (value.key_set() - c10::python_ks - c10::functorch_transforms_ks - kValueBits) |
         (eager.key_set() & kValueBits);
}

}  // namespace

FunctionalTensorImpl::FunctionalTensorImpl(at::Tensor value, std::shared_ptr<AliasState> alias,
                                           ViewChain views, uint64_t generation, at::Tensor layout,
                                           uint64_t base_version)
    : c10::TensorImpl(c10::Storage(alias->storage()), wrapper_keys(value, layout), value.dtype()),
      value_(std::move(value)),
      layout_(std::move(layout)),
      // The alias's dataless storage was made on the value's device: asking a
      // fake value for its device() dispatches prim.device through every
      // Python mode of the trace, once per wrapper.
      device_(storage_.device()),
      alias_(std::move(alias)),
      views_(std::move(views)),
      generation_(generation),
      base_version_(base_version) {
  set_custom_sizes_strides(SizesStridesPolicy::CustomSizes);
  set_custom_device(true);
  set_allow_tensor_metadata_change(true);
}

void FunctionalTensorImpl::set_value(at::Tensor value) { value_ = std::move(value); }

void FunctionalTensorImpl::sync(bool reapply_views) {
  rebase_if_needed();
  if (generation_ == alias_->generation()) return;
  const at::Tensor& base = alias_->base(reapply_views);
  at::Tensor current = base;
  for (size_t k = 0; k < views_.size(); ++k) {
    const auto& record = views_[k];
    const bool own_elements_only = alias_->holds_own_elements_only(reapply_views, k == 0);
    // An as_strided view reading its input's storage past the input's
    // elements (x.as_strided((7,), (1,)) of x = t[:6]) was taken on the
    // input's own memory; a value written since holds x's elements only.
    TORCH_CHECK(
        !record->is_as_strided() || record->within_storage(current, own_elements_only),
        "fxinplace.functionalize: an as_strided() view reads storage past the elements of the tensor it "
        "views, which was written since; its functional value holds only its own elements (eager reads "
        "the rest of the storage there). Please take as_strided of a clone, or of the whole storage's "
        "tensor");
    current = record->forward(current, reapply_views);
  }
  set_value(std::move(current));
  generation_ = alias_->generation();
  // With *_copy views a written input's value is compact (x1 = x0[:, 1:-1]:
  // offset 0, no gaps); the input answers with eager's geometry still, so
  // storage_offset() and the views measured on it are eager's. With views
  // kept, the value keeps eager's layout itself (see with_dense_layout_of)
  // but for its storage offset under a fake or symbolic trace: there the
  // input and the views of it made before the write answer with eager's
  // geometry too (random pipelines seed 8667).
  const at::Tensor& eager = alias_->eager_geometry();
  if (!eager.defined() || alias_->base_version() != 0) return;
  if (!reapply_views) {
    if (views_.empty() && !same_geometry(eager, value_)) layout_ = eager;
    return;
  }
  if (layout_.defined() || same_geometry(eager, base)) return;
  layout_ = views_.empty() ? eager : measure_on_meta(eager, views_);
}

void FunctionalTensorImpl::commit(const at::Tensor& new_value, const c10::OperatorName& writer,
                                  CopiesFold fold) {
  // Every alias, this one included, is regenerated from the updated base at
  // its next read: a view so that its layout is the view's own, the base so
  // that it keeps the base's layout.
  alias_->add_update(new_value, views_, writer, fold);
}

void FunctionalTensorImpl::become(const FunctionalTensorImpl& other) {
  alias_ = other.alias_;
  views_ = other.views_;
  generation_ = other.generation_;
  base_version_ = other.base_version_;
  layout_ = other.layout_;
  set_value(other.value_);
  key_set_ = other.key_set_;
}

void FunctionalTensorImpl::set_to(const FunctionalTensorImpl& source) {
  if (source.alias_ != alias_) {
    storage_ = source.storage_;
    storage_changed_ = true;
  }
  become(source);
}

namespace {

// Placing a view in another base (view_storage_at) may refuse it with a clear
// error that the program catches, as it would catch eager's. The tensor must
// then still be the view it was, so that every later read refuses it again:
// left half-moved (its alias switched, its view chain still the old base's)
// the next read replayed that chain on the new base (random pipelines seed
// 192844: view_as_real of a float64 base raised torch's own error).
class MoveUndo {
 public:
  explicit MoveUndo(FunctionalTensorImpl& t) : t_(t), alias_(t.alias()), base_version_(t.base_version()) {}
  MoveUndo(const MoveUndo&) = delete;
  MoveUndo& operator=(const MoveUndo&) = delete;
  ~MoveUndo() {
    if (!kept_) t_.restore_move(alias_, base_version_);
  }
  void keep() { kept_ = true; }

 private:
  FunctionalTensorImpl& t_;
  std::shared_ptr<AliasState> alias_;
  uint64_t base_version_;
  bool kept_ = false;
};

}  // namespace

void FunctionalTensorImpl::restore_move(std::shared_ptr<AliasState> alias, uint64_t base_version) {
  alias_ = std::move(alias);
  base_version_ = base_version;
}

void FunctionalTensorImpl::follow_move() {
  // (Reached from anywhere functional_impl() is, our key included in a region:
  // the meta tensors measured here must not become functional tensors.)
  c10::impl::ExcludeDispatchKeyGuard exclude(kFunctionalizeKey);
  while (alias_->moved_to()) {
    TORCH_CHECK(base_version_ == 0,
                "fxinplace.functionalize: a view of an input that shares memory with "
                "another input was taken before the input was resized");
    // Where eager has this alias: its views replayed on its input's place.
    at::Tensor where = measure_on_meta(alias_->moved_layout(), views_);
    MoveUndo undo(*this);
    alias_ = alias_->moved_to();
    base_version_ = alias_->base_version();
    view_storage_at(where, "an input's view lies outside the storage it shares with another input");
    undo.keep();
  }
}

void FunctionalTensorImpl::replace_base(const at::Tensor& new_value,
                                        std::optional<c10::SymIntArrayRef> eager_strides) {
  // Eager resizes in place: the storage and its offset stay; sizes and
  // strides are the new value's (or those eager computes in).
  at::Tensor old_layout = meta_like(metadata());
  at::Tensor new_layout =
      meta_strided(new_value.scalar_type(), new_value.sym_sizes(),
                   eager_strides ? *eager_strides : new_value.sym_strides(), old_layout.sym_storage_offset());
  alias_->replace_base(new_value, std::move(old_layout), new_layout);
  layout_ = same_geometry(new_layout, new_value) ? at::Tensor() : std::move(new_layout);
  set_value(new_value);
  generation_ = alias_->generation();
  base_version_ = alias_->base_version();
}

void FunctionalTensorImpl::rebase_if_needed() {
  if (base_version_ == alias_->base_version()) return;
  // Where eager has this alias: its views replayed on the base layout they were made on.
  at::Tensor where = measure_on_meta(alias_->retired_layout(base_version_), views_);
  MoveUndo undo(*this);
  base_version_ = alias_->base_version();
  view_storage_at(where,
                  "a view was taken of a tensor that was resized afterwards, and the view reaches outside "
                  "the resized tensor (eager keeps reading the old storage there, which functionalization "
                  "cannot express)");
  undo.keep();
}

void FunctionalTensorImpl::view_storage_at(const at::Tensor& where, const char* outside_error) {
  // The value is the old geometry's: regenerate it at the next read.
  generation_ = kStale;
  // as_strided selects elements; the conjugate and negative bits the chain
  // set (each an odd number of times) are set again after it.
  const ValueFlips bits = value_flips(views_);
  ViewChain flips;
  static const c10::OperatorHandle conj = c10::Dispatcher::singleton().findSchemaOrThrow("aten::_conj", "");
  static const c10::OperatorHandle neg =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::_neg_view", "");
  if (bits.conjugated)
    flips.push_back(std::make_shared<const ViewRecord>(conj, std::vector<c10::IValue>{c10::IValue()}, 0));
  if (bits.negated)
    flips.push_back(std::make_shared<const ViewRecord>(neg, std::vector<c10::IValue>{c10::IValue()}, 0));
  const at::Tensor base = alias_->eager_base_layout();
  // Where the chain went through view(dtype): the same bytes in the base's
  // elements, as_strided there, then view(dtype) back.
  const bool reinterpreted = where.scalar_type() != base.scalar_type();
  std::optional<at::Tensor> in_base = reinterpreted ? same_bytes_as(where, base.scalar_type()) : where;
  TORCH_CHECK(
      in_base, "fxinplace.functionalize: a ", where.scalar_type(), " view of a ", base.scalar_type(),
      " tensor that does not cover whole elements of the latter (or is not contiguous in its last dim) "
      "cannot be placed in the ",
      base.scalar_type(), " tensor's storage (as_strided of such a view, or a view kept across resize_)");
  if (!reinterpreted && same_geometry(where, base)) {
    views_ = flips;
    key_set_ = (key_set_ - kValueBits) | (where.key_set() & kValueBits);
    layout_ = same_geometry(base, alias_->base_value()) ? at::Tensor() : base;
    // Without a layout of its own the tensor answers with its value's sizes
    // until the next read regenerates it; meanwhile the base's value stands in
    // (random pipelines seed 123934: t2 = x[:1] as_strided_ to (2, 3), then
    // resized to x's (7,) by an out= op, still said (2, 3)).
    if (!layout_.defined()) set_value(alias_->base_value());
    return;
  }
  TORCH_CHECK(in_base->sym_storage_offset() >= base.sym_storage_offset() &&
                  storage_extent(*in_base) <= storage_extent(base),
              "fxinplace.functionalize: ", outside_error);
  static const c10::OperatorHandle as_strided =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::as_strided", "");
  static const c10::OperatorHandle view_dtype =
      c10::Dispatcher::singleton().findSchemaOrThrow("aten::view", "dtype");
  // as_strided addresses the base value's own storage, at the distance from
  // the value's storage offset that eager's view has from eager's base (kept
  // for later values of the base, wherever their kernels place them).
  c10::SymInt offset =
      in_base->sym_storage_offset() - base.sym_storage_offset() + alias_->base_value().sym_storage_offset();
  std::vector<c10::IValue> args{c10::IValue(), c10::IValue(in_base->sym_sizes()),
                                c10::IValue(in_base->sym_strides()), c10::IValue(offset)};
  views_ = ViewChain{std::make_shared<const ViewRecord>(as_strided, std::move(args), 0,
                                                        alias_->base_value().sym_storage_offset())};
  if (reinterpreted)
    views_.push_back(std::make_shared<const ViewRecord>(
        view_dtype, std::vector<c10::IValue>{c10::IValue(), c10::IValue(where.scalar_type())}, 0));
  views_.insert(views_.end(), flips.begin(), flips.end());
  layout_ = where;
  // Eager's view has the bits (composite ops such as .real ask for them).
  key_set_ = (key_set_ - kValueBits) | (where.key_set() & kValueBits);
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
  auto copy =
      c10::make_intrusive<FunctionalTensorImpl>(value_, alias_, views_, generation_, layout_, base_version_);
  copy_tensor_metadata(this, copy.get(), version_counter, allow_tensor_metadata_change);
  return copy;
}

c10::intrusive_ptr<c10::TensorImpl> FunctionalTensorImpl::shallow_copy_and_detach(
    c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const {
  auto copy =
      c10::make_intrusive<FunctionalTensorImpl>(value_, alias_, views_, generation_, layout_, base_version_);
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
  auto* impl = static_cast<FunctionalTensorImpl*>(t.unsafeGetTensorImpl());
  if (C10_UNLIKELY(impl->alias()->moved_to() != nullptr)) impl->follow_move();
  return impl;
}

// The wrapper reads `requires_grad` as its value does (autograd runs on the
// values, below our key), so code that asks (x.requires_grad) sees eager's answer.
at::Tensor mirror_requires_grad(at::Tensor wrapper, const at::Tensor& value) {
  if (value.requires_grad()) wrapper.unsafeGetTensorImpl()->set_requires_grad(true);
  return wrapper;
}

at::Tensor wrap_new(const at::Tensor& value, bool eager_layout) {
  auto alias = std::make_shared<AliasState>(value);
  if (eager_layout) alias->mark_eager_layout();
  return mirror_requires_grad(
      at::detail::make_tensor<FunctionalTensorImpl>(value, std::move(alias), ViewChain{}, 0), value);
}

at::Tensor wrap_new_in_eager_geometry(const at::Tensor& value, const at::Tensor& eager_geometry) {
  // (Not marked as laid out as in eager where the geometries agree: a meta
  // kernel's strides stand in for the device kernel's, good enough for the
  // view-or-copy choices of composite ops, not for as_strided of the value.)
  if (same_geometry(eager_geometry, value)) return wrap_new(value);
  auto alias = std::make_shared<AliasState>(value);
  alias->set_eager_geometry(eager_geometry);
  return mirror_requires_grad(
      at::detail::make_tensor<FunctionalTensorImpl>(value, std::move(alias), ViewChain{}, 0, eager_geometry),
      value);
}

at::Tensor wrap_view(const at::Tensor& value, const FunctionalTensorImpl& parent,
                     std::shared_ptr<const ViewRecord> record, bool reapply_views) {
  at::Tensor layout;
  const at::Tensor& parent_layout = parent.metadata();
  // With views kept, a view's value is laid out as eager's view, unless the
  // parent answers with a layout of its own: a written input of a fake or
  // symbolic trace keeps a compact value (x1 = x0[1:3] written: offset 0,
  // eager's is 6), and x1.reshape(2, -1).storage_offset() must read 6 still
  // (random pipelines seed 8667, where as_strided then addressed other elements).
  if (!reapply_views || parent.answers_with_layout()) {
    // Best effort: the parent's layout is eager's only as far as we track it
    // (results of pure ops take their value's layout). Where the view cannot be
    // replayed on it, the view's own value answers metadata queries instead.
    try {
      layout = measure_on_meta(parent_layout, ViewChain{record});
      // The replay starts without the parent's conjugate/negative bits (ops on
      // a meta tensor with them take other paths); views keep them, and
      // composite ops (.real, .imag) ask.
      if (parent_layout.is_conj() && layout.is_complex()) layout._set_conj(!layout.is_conj());
      if (parent_layout.is_neg()) layout._set_neg(!layout.is_neg());
    } catch (const c10::Error& e) {
      // On a layout that is eager's, the view op raises as eager raises
      // (x[..., 1].view(5, -1) of a channels_last x); the *_copy op on the
      // compact value would not.
      TORCH_CHECK(!parent.has_eager_layout(), "fxinplace.functionalize: ", record->op_name(), ": ",
                  e.what_without_backtrace());
      layout = at::Tensor();
    }
  }
  ViewChain views = parent.views();
  views.push_back(std::move(record));
  return mirror_requires_grad(at::detail::make_tensor<FunctionalTensorImpl>(
                                  value, parent.alias(), std::move(views), parent.generation(),
                                  std::move(layout), parent.base_version()),
                              value);
}

at::Tensor unwrap_synced(const at::Tensor& t, bool reapply_views) {
  FunctionalTensorImpl* impl = functional_impl(t);
  impl->sync(reapply_views);
  return impl->value();
}

}  // namespace fxinplace::functionalize
