#include "functionalize/alias_state.h"

#include <c10/core/StorageImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "functionalize/meta_geometry.h"
#include "functionalize/region.h"

namespace fxinplace::functionalize {
namespace {

c10::Storage dataless_storage(const at::Tensor& like) {
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), 0,
                                                            c10::DataPtr(nullptr, like.device()),
                                                            /*allocator=*/nullptr, /*resizable=*/false));
}

}  // namespace

AliasState::AliasState(at::Tensor base)
    : base_(std::move(base)), region_(current_region()), storage_(dataless_storage(base_)) {}

void AliasState::check_fold_keeps_every_write(const ViewChain& views, const c10::OperatorName& writer) const {
  // Folding back through a view whose elements share memory (overlapping
  // unfold windows) scatters every copy of a location, so the copies the
  // write did not change overwrite the one it did. (expand() has a fold of
  // its own; the written tensor itself was checked by the write's rules.)
  bool scatters = false;
  for (size_t k = 0; k + 1 < views.size(); ++k) scatters = scatters || views[k]->folds_by_scatter();
  if (!scatters) return;
  at::Tensor level = meta_like(base_);
  c10::impl::ExcludeDispatchKeyGuard no_modes(c10::python_ks);
  for (size_t k = 0; k + 1 < views.size(); ++k) {
    level = views[k]->forward(level, /*reapply_views=*/true);
    TORCH_CHECK(!views[k]->folds_by_scatter() || provably_injective(level),
                "fxinplace.functionalize: ", c10::toString(writer), " writes through a view made by ",
                views[k]->op_name(),
                " whose elements share memory (overlapping windows); functionalization cannot fold a write "
                "back through such a view. Please clone() the view's source first.");
  }
}

void AliasState::add_update(at::Tensor new_value, const ViewChain& views, const c10::OperatorName& writer,
                            CopiesFold fold) {
  // as_strided addresses the storage of whatever it is applied to: after
  // another view it would replay against that view's replayed value, whose
  // layout need not match the eager one.
  for (size_t k = 1; k < views.size(); ++k)
    TORCH_CHECK(
        !views[k]->is_as_strided(), "fxinplace.functionalize: ", c10::toString(writer),
        " writes through as_strided() applied to another view; as_strided is only supported as the first "
        "view of a tensor (it is not compositional)");
  check_fold_keeps_every_write(views, writer);
  pending_.push_back(Update{std::move(new_value), views, fold});
  ++generation_;
  mutated_ = true;
}

void AliasState::set_base(at::Tensor new_base) {
  pending_.clear();
  base_ = std::move(new_base);
  ++generation_;
  mutated_ = true;
}

void AliasState::replace_base(at::Tensor new_base, at::Tensor old_layout, at::Tensor new_layout) {
  set_base(std::move(new_base));
  retired_layouts_.push_back(std::move(old_layout));
  current_layout_ = std::move(new_layout);
}

at::Tensor AliasState::eager_base_layout() const {
  return current_layout_.defined() ? current_layout_ : meta_like(base_);
}

const at::Tensor& AliasState::base(bool reapply_views) {
  if (pending_.empty()) return base_;
  const at::Tensor before = base_;
  for (Update& update : pending_) {
    // Views of the current base along the chain, then fold the written value
    // back from the innermost view outwards.
    std::vector<at::Tensor> along{base_};
    for (size_t k = 0; k + 1 < update.views.size(); ++k)
      along.push_back(update.views[k]->forward(along.back(), reapply_views));
    at::Tensor value = std::move(update.value);
    for (size_t k = update.views.size(); k-- > 0;)
      value = update.views[k]->reverse(along[k], value, reapply_views, update.fold);
    base_ = std::move(value);
  }
  pending_.clear();
  // Eager writes into the tensor, whose layout stays; a functional result
  // (masked_fill of a channels_last tensor, a scatter) may be laid out
  // otherwise, and later results (x * 1) would follow it. Views replay their
  // own geometry, so only the remove="mutations" values need it.
  if (reapply_views) base_ = with_dense_layout_of(base_, before);
  return base_;
}

}  // namespace fxinplace::functionalize
