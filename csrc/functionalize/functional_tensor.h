// The wrapper TensorImpl of a functional tensor: an inner ("value") tensor
// holding the alias's current value, the alias group's shared state, and the
// chain of views that leads from the group's base to this alias.
//
// Sizes, strides, device and layout are forwarded to the value, so shape
// queries work (also for fake/symbolic values); storage is the alias group's
// dataless storage, so storage identity behaves like in eager.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

#include <memory>

#include "functionalize/alias_state.h"
#include "functionalize/view_record.h"

namespace fxinplace::functionalize {

class FunctionalTensorImpl final : public c10::TensorImpl {
 public:
  // `layout`, when defined, is a meta tensor with the eager sizes/strides/offset
  // of this alias; metadata queries answer from it instead of from `value`.
  FunctionalTensorImpl(at::Tensor value, std::shared_ptr<AliasState> alias, ViewChain views,
                       uint64_t generation, at::Tensor layout = at::Tensor(), uint64_t base_version = 0);

  const at::Tensor& value() const { return value_; }
  const std::shared_ptr<AliasState>& alias() const { return alias_; }
  const ViewChain& views() const { return views_; }
  uint64_t generation() const { return generation_; }
  uint64_t base_version() const { return base_version_; }
  // What sizes/strides/contiguity queries answer from.
  const at::Tensor& metadata() const { return layout_.defined() ? layout_ : value_; }
  // Whether metadata queries answer from an eager layout rather than the value.
  bool answers_with_layout() const { return layout_.defined(); }
  // metadata() is eager's layout as replayed on a meta tensor (views made with
  // remove="mutations_and_views"), not the value's own.
  // Only where the chain starts at a base laid out as eager lays it out.
  bool has_eager_layout() const {
    return alias_->eager_layout() && (views_.empty() ? true : layout_.defined());
  }

  // Regenerates the value from the base when some alias was written since.
  void sync(bool reapply_views);
  // Records that this alias now holds `new_value` (same shape).
  void commit(const at::Tensor& new_value, const c10::OperatorName& writer,
              CopiesFold fold = CopiesFold::kWrittenCopy);
  // Takes over another alias's view and value (in-place view ops like t_()).
  void become(const FunctionalTensorImpl& other);
  // x.set_(src): x becomes an alias of src, in src's storage (alias group);
  // an input so changed is written back whole (storage_changed()).
  void set_to(const FunctionalTensorImpl& source);
  // Follows a join of input groups (AliasState::moved_to): becomes the view of
  // the joined base at its eager place. Called by functional_impl().
  void follow_move();
  // Undoes the switch of alias group and base version of a follow_move or
  // rebase_if_needed whose view_storage_at refused the view.
  void restore_move(std::shared_ptr<AliasState> alias, uint64_t base_version);
  void share_storage(const c10::Storage& storage) { storage_ = storage; }
  bool storage_changed() const { return storage_changed_; }
  // Gives a base alias a value of a new shape (resize_, out= resizing).
  // `eager_strides`: the strides eager gives it, where the value's are not
  // (a value computed from compact copies of views).
  void replace_base(const at::Tensor& new_value,
                    std::optional<c10::SymIntArrayRef> eager_strides = std::nullopt);
  // An alias made before its base was resized keeps its eager place in the
  // storage: its views become one as_strided of the new base. Called before
  // the view chain is used.
  void rebase_if_needed();
  // Makes this alias the view of its base at `where` (eager geometry, a meta
  // tensor in the base's storage), negated/conjugated as its views were;
  // throws `outside_error` where that is not inside the base.
  void view_storage_at(const at::Tensor& where, const char* outside_error);

  at::IntArrayRef sizes_custom() const override;
  at::IntArrayRef strides_custom() const override;
  int64_t dim_custom() const override;
  int64_t numel_custom() const override;
  int64_t storage_offset_custom() const override;
  c10::SymIntArrayRef sym_sizes_custom() const override;
  c10::SymInt sym_size_custom(int64_t d) const override;
  c10::SymIntArrayRef sym_strides_custom() const override;
  c10::SymInt sym_numel_custom() const override;
  c10::SymInt sym_storage_offset_custom() const override;
  c10::SymBool sym_is_contiguous_custom(at::MemoryFormat memory_format) const override;
  bool is_strides_like_custom(at::MemoryFormat memory_format) const override;
  c10::SymBool sym_is_non_overlapping_and_dense_custom() const override;
  c10::Device device_custom() const override;
  c10::Layout layout_impl() const override;

  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(
      const c10::VariableVersion& version_counter, bool allow_tensor_metadata_change) const override;
  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(
      c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const override;
  void shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) override;

 private:
  const char* tensorimpl_type_name() const override { return "fxinplace.FunctionalTensorImpl"; }
  void set_value(at::Tensor value);
  // A generation no alias group reaches: the value must be regenerated.
  static constexpr uint64_t kStale = ~uint64_t{0};

  at::Tensor value_;
  // With remove="mutations_and_views" a view's value comes from `*_copy` ops
  // and is contiguous; composite ops (contiguous(), reshape) must still see the
  // view's eager strides, or they would alias where eager copies.
  at::Tensor layout_;
  // Every value of an alias lives on one device; asking a fake value each time
  // would call into Python.
  c10::Device device_;
  std::shared_ptr<AliasState> alias_;
  ViewChain views_;
  uint64_t generation_;
  uint64_t base_version_;
  bool storage_changed_ = false;
};

bool is_functional(const at::Tensor& t);
FunctionalTensorImpl* functional_impl(const at::Tensor& t);  // t must be functional

// A new alias group whose base is `value`.
// eager_layout: `value` is laid out as eager lays the tensor out (an input of
// the function), so views of it replay eager's layout checks.
at::Tensor wrap_new(const at::Tensor& value, bool eager_layout = false);
// A new alias group whose base is `value`, which eager lays out as
// `eager_geometry` (a meta tensor of value's sizes and dtype): metadata
// queries answer with eager's geometry.
at::Tensor wrap_new_in_eager_geometry(const at::Tensor& value, const at::Tensor& eager_geometry);
// A new alias of `parent`'s group: `parent`'s views plus `record`. Unless
// `value` is a real view (`reapply_views`), the alias also keeps its eager layout.
at::Tensor wrap_view(const at::Tensor& value, const FunctionalTensorImpl& parent,
                     std::shared_ptr<const ViewRecord> record, bool reapply_views);
// The synced inner value of a functional tensor.
at::Tensor unwrap_synced(const at::Tensor& t, bool reapply_views);

}  // namespace fxinplace::functionalize
