#include "functionalize/alias_state.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/StorageImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>

#include "functionalize/dispatch_key.h"
#include "functionalize/meta_geometry.h"
#include "functionalize/region.h"

namespace fxinplace::functionalize {
namespace {

c10::Storage dataless_storage(const at::Tensor& like) {
  // A fake value answers device() through Python (prim.device); with the
  // trace's modes excluded it goes to the fake tensor alone, not through
  // make_fx's proxy mode first.
  c10::impl::ExcludeDispatchKeyGuard no_modes(c10::python_ks);
  return c10::Storage(c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), 0,
                                                            c10::DataPtr(nullptr, like.device()),
                                                            /*allocator=*/nullptr, /*resizable=*/false));
}

// `value`, written through views[level..], scattered into `input` (the value
// of views[level]'s input) at the place the rest of the chain measures to.
at::Tensor scatter_directly(const at::Tensor& input, at::Tensor value, const ViewChain& views, size_t level,
                            CopiesFold fold) {
  for (size_t k = level; k < views.size(); ++k) value = views[k]->unflip(value);
  at::Tensor where = replay_on_meta(input, [&](at::Tensor current) {
    for (size_t k = level; k < views.size(); ++k)
      current = views[k]->forward(current, /*reapply_views=*/true);
    return current;
  });
  return scatter_into_storage(input, value, where.sym_sizes(), where.sym_strides(),
                              where.sym_storage_offset(), fold);
}

}  // namespace

AliasState::AliasState(at::Tensor base)
    : base_(std::move(base)), region_(current_region()), storage_(dataless_storage(base_)) {}

void AliasState::mark_eager_layout() {
  c10::impl::ExcludeDispatchKeyGuard exclude(kFunctionalizeKey);  // a meta tensor, not a functional one
  eager_geometry_ = meta_like(base_);
}

bool AliasState::eager_layout() const {
  return eager_geometry_.defined() && same_geometry(base_, eager_geometry_);
}

size_t AliasState::plan_fold(const ViewChain& views, const c10::OperatorName& writer, CopiesFold fold) const {
  // Folding back through a view whose elements share memory (overlapping
  // unfold windows) scatters every copy of a location, so the copies the
  // write did not change overwrite the one it did. Where the rest of the chain
  // only selects elements, the written elements (which do not share memory:
  // the write's rules checked them) scatter straight into that view's input
  // instead. (expand() has a fold of its own.)
  size_t direct = direct_fold_level(views);
  bool scatters = false;
  for (size_t k = 0; k + 1 < views.size(); ++k) scatters = scatters || views[k]->folds_by_scatter();
  if (!scatters) return views.size();
  // With views copied (remove="mutations_and_views") the inputs of the views
  // below `direct` are compact *_copy values, laid out otherwise than eager's
  // views, and the rest of the chain replayed with real views on one can fail
  // where eager's views do not (random pipelines seed 100737: x2[..., 1:] of
  // an x2 laid out (1, 2), then .unfold(0, 2, 2).view(-1, 1)). Where every
  // view keeps elements, the fold goes straight into the base, on which the
  // whole chain is measured below.
  if (!reapply_views() && direct < views.size()) {
    bool keep = true;
    for (size_t k = 0; k < direct; ++k) keep = keep && views[k]->keeps_elements();
    if (keep) direct = 0;
  }
  c10::impl::ExcludeDispatchKeyGuard no_modes(c10::python_ks);
  // Measured on eager's layout of the base: with views copied the base's value
  // may be laid out otherwise (a result computed from a compact copy), and a
  // view eager takes (flatten() of a transpose) then does not exist on it
  // (random pipelines seed 148986).
  std::vector<at::Tensor> levels{reapply_views() ? meta_like(base_) : eager_base_layout()};
  for (const auto& view : views) levels.push_back(view->forward(levels.back(), /*reapply_views=*/true));
  // The written tensor's elements share memory (masked_fill_ of a stride-0
  // as_strided): scattered at once, which copy lands is unspecified, so each
  // view folds in turn; copies written alike (fill_) can land in any order.
  if (direct < views.size() && fold != CopiesFold::kUniform && !provably_injective(levels.back()))
    direct = views.size();
  for (size_t k = 0; k + 1 < views.size() && k < direct; ++k)
    TORCH_CHECK(!views[k]->folds_by_scatter() || provably_injective(levels[k + 1]),
                "fxinplace.functionalize: ", c10::toString(writer), " writes through a view made by ",
                views[k]->op_name(),
                " whose elements may share memory (overlapping windows); functionalization cannot fold this "
                "write back through such a view. Please clone() the view's source first.");
  return direct;
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
  const size_t direct = plan_fold(views, writer, fold);
  pending_.push_back(Update{std::move(new_value), views, fold, direct});
  ++generation_;
  mutated_ = true;
  written_with_grad_ = written_with_grad_ || at::GradMode::is_enabled();
  detached_from_autograd_ = detached_from_autograd_ || (!at::GradMode::is_enabled() && base_.requires_grad());
}

void AliasState::set_base(at::Tensor new_base) {
  pending_.clear();
  base_ = std::move(new_base);
  ++generation_;
  mutated_ = true;
  written_with_grad_ = written_with_grad_ || at::GradMode::is_enabled();
  detached_from_autograd_ = detached_from_autograd_ || (!at::GradMode::is_enabled() && base_.requires_grad());
}

void AliasState::replace_base(at::Tensor new_base, at::Tensor old_layout, at::Tensor new_layout) {
  if (mutated_) left_behind_.push_back(LeftBehind{old_layout, base(reapply_views())});
  if (eager_geometry_.defined()) eager_geometry_ = new_layout;
  set_base(std::move(new_base));
  retired_layouts_.push_back(std::move(old_layout));
  current_layout_ = std::move(new_layout);
}

at::Tensor AliasState::eager_base_layout() const {
  if (current_layout_.defined()) return current_layout_;
  // A written input's value need not sit where eager's does (a compact *_copy
  // value; under a fake or symbolic trace, a dense value at offset 0): views
  // placed in the storage (resize_, out= resizing a view) are placed relative
  // to eager's geometry (random pipelines seed 9679: x2 = t[1:-1] written,
  // then torch.mul(a, 2, out=x2[...]) growing it landed one element early).
  if (eager_geometry_.defined()) return eager_geometry_;
  return meta_like(base_);
}

const at::Tensor& AliasState::base(bool reapply_views) {
  if (pending_.empty()) return base_;
  const at::Tensor before = base_;
  for (Update& update : pending_) {
    // Views of the current base along the chain, then fold the written value
    // back from the innermost view outwards.
    const size_t direct = update.direct_level;
    const size_t folded = std::min(direct, update.views.size());
    // Scattered straight into the base (views copied, every view keeping
    // elements: plan_fold), the write is located on eager's layout of the
    // base, which the value may not have (seed 148986: flatten() of a
    // transpose exists in eager's layout only); the value takes that layout.
    const bool into_base = direct == 0 && direct < update.views.size() && !reapply_views;
    std::vector<at::Tensor> along{into_base ? with_dense_layout_of(base_, eager_base_layout(), false)
                                            : base_};
    for (size_t k = 0; k < folded && k + 1 < update.views.size(); ++k)
      along.push_back(update.views[k]->forward(along.back(), reapply_views));
    at::Tensor value = std::move(update.value);
    const bool written_complex = value.is_complex();
    if (direct < update.views.size()) {
      value = scatter_directly(along[direct], value, update.views, direct, update.fold);
    }
    for (size_t k = folded; k-- > 0;) {
      const ViewRecord& view = *update.views[k];
      const at::Tensor into = view.scatters_by_index() ? whole_elements_base(along[k], base_) : along[k];
      value = view.reverse(into, value, reapply_views, update.fold, written_complex);
    }
    base_ = std::move(value);
  }
  pending_.clear();
  // Eager writes into the tensor, whose layout stays; a functional result
  // (masked_fill of a channels_last tensor, a scatter, a *_copy) may be laid
  // out otherwise, and later results (x * 1) would follow it, and as_strided
  // of the base would address other elements.
  base_ = with_dense_layout_of(base_, before, reapply_views);
  return base_;
}

}  // namespace fxinplace::functionalize
