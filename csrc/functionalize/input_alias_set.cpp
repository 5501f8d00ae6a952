#include "functionalize/input_alias_set.h"

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "functionalize/alias_state.h"
#include "functionalize/dispatch_key.h"
#include "functionalize/functional_tensor.h"
#include "functionalize/meta_geometry.h"

namespace fxinplace::functionalize {

void InputAliasSet::share(const std::vector<at::Tensor>& wrapped, const std::vector<at::Tensor>& originals) {
  TORCH_CHECK(!wrapped.empty() && wrapped.size() == originals.size(),
              "fxinplace.functionalize: an input alias set needs one original per member");
  c10::impl::ExcludeDispatchKeyGuard exclude(kFunctionalizeKey);  // meta layouts, not functional tensors
  std::vector<Member> members;
  for (size_t k = 0; k < wrapped.size(); ++k) {
    const at::Tensor& o = originals[k];
    members.push_back(
        Member{functional_impl(wrapped[k])->alias(), o,
               meta_strided(o.scalar_type(), o.sym_sizes(), o.sym_strides(), o.sym_storage_offset())});
  }
  std::shared_ptr<InputAliasSet> set(new InputAliasSet(std::move(members)));
  const c10::Storage storage = functional_impl(wrapped[0])->alias()->storage();
  for (const at::Tensor& w : wrapped) {
    FunctionalTensorImpl* impl = functional_impl(w);
    impl->alias()->set_input_set(set);
    impl->alias()->share_storage(storage);
    impl->share_storage(storage);
  }
}

bool InputAliasSet::must_join(const AliasState* touched, bool addresses_storage) const {
  if (joined()) return false;
  // as_strided addresses the storage, which only the joined base has (a write through
  // it folds back with as_strided_scatter on the base; a gap's memory is there).
  if (addresses_storage) return true;
  for (const Member& m : members_) {
    std::shared_ptr<AliasState> alias = m.alias.lock();
    if (alias && alias->mutated() && alias.get() != touched) return true;
  }
  return false;
}

void InputAliasSet::join(bool reapply_views) {
  // The flat base: every element of the storage the members can address.
  // (An empty member addresses nothing, whatever its offset: x0[1:3] of an empty x0.)
  // The largest extent by comparison (a guard, under symbolic shapes), not a symbolic
  // max, which a graph cannot replay as a size.
  c10::SymInt numel = 0;
  for (const Member& m : members_) {
    if (m.layout.sym_numel().maybe_as_int() == 0) continue;
    c10::SymInt extent = storage_extent(m.layout);
    if (extent > numel) numel = extent;
  }
  const at::Tensor& first = members_[0].original;
  at::Tensor flat = reapply_views ? at::as_strided_symint(first, {numel}, {1}, c10::SymInt(0))
                                  : at::as_strided_copy_symint(first, {numel}, {1}, c10::SymInt(0));
  std::shared_ptr<AliasState> base = std::make_shared<AliasState>(flat);
  std::shared_ptr<AliasState> any = members_[0].alias.lock();
  base->mark_eager_layout();
  base->share_storage(any->storage());
  base->set_region(any->region());
  base->set_input_set(shared_from_this());  // its inputs' write-backs ask for the flat base
  static const c10::OperatorName joined_at{"fxinplace::join_inputs", ""};
  for (const Member& m : members_) {
    std::shared_ptr<AliasState> alias = m.alias.lock();
    if (!alias) continue;
    TORCH_CHECK(alias->base_version() == 0,
                "fxinplace.functionalize: an input that shares memory with another input was resized "
                "(resize_, or an out= argument) before the sharing mattered; functionalization cannot place "
                "the resized input in the shared storage");
    if (alias->mutated()) {
      // Its writes so far, scattered into the flat base at its place.
      at::Tensor value = alias->base(reapply_views);
      at::Tensor writer =
          at::detail::make_tensor<FunctionalTensorImpl>(flat, base, ViewChain{}, base->generation());
      FunctionalTensorImpl* impl = static_cast<FunctionalTensorImpl*>(writer.unsafeGetTensorImpl());
      impl->view_storage_at(m.layout,
                            "an input's place lies outside the storage it shares with another input");
      impl->commit(value, joined_at);
    }
    alias->move_to(base, m.layout);
  }
  joined_ = flat;
}

void join_inputs_if_needed(const at::Tensor& t, bool addresses_storage, bool reapply_views) {
  const std::shared_ptr<AliasState>& alias = functional_impl(t)->alias();
  const std::shared_ptr<InputAliasSet>& set = alias->input_set();
  if (!set) return;
  if (addresses_storage) set->note_addressed();
  if (!set->must_join(alias.get(), addresses_storage)) return;
  c10::impl::ExcludeDispatchKeyGuard exclude(kFunctionalizeKey);
  set->join(reapply_views);
}

void join_shared_inputs_before_relayout(const at::Tensor& t, bool reapply_views) {
  const std::shared_ptr<InputAliasSet>& set = functional_impl(t)->alias()->input_set();
  if (!set || !set->shared()) return;
  join_inputs_if_needed(t, /*addresses_storage=*/true, reapply_views);
}

}  // namespace fxinplace::functionalize
