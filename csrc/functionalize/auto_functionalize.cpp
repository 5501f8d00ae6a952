#include "functionalize/auto_functionalize.h"

#include <ATen/ATen.h>

#include "functionalize/dtype_views.h"
#include "functionalize/error_text.h"
#include "functionalize/functional_tensor.h"
#include "functionalize/ivalue_tensors.h"
#include "functionalize/meta_geometry.h"

namespace fxinplace::functionalize {
namespace {

AutoFunctionalizeHook& hook_slot() {
  static AutoFunctionalizeHook hook;
  return hook;
}

// Collects, for one written argument, where each of its tensors sits in its
// base; bases are numbered in first-seen order, one per alias group.
//
// auto_functionalized_v2 rebuilds each mutated tensor from its base with
// as_strided or slice, which keep the base's dtype. A tensor reached through
// view(dtype) (`x.view(torch.int32)[1]`) is therefore located in the base
// reinterpreted as that dtype (same bytes; geometry in units of the view's
// elements), and the op's new base is reinterpreted back.
class BaseTable {
 public:
  explicit BaseTable(bool reapply_views) : reapply_(reapply_views) {}

  MutatedView locate(const c10::OperatorHandle& op, const at::Tensor& t) {
    const std::string name = c10::toString(op.operator_name());
    FunctionalTensorImpl* impl = functional_impl(t);
    impl->rebase_if_needed();  // an alias made before its base was resized
    TORCH_CHECK(
        !impl->value().unsafeGetTensorImpl()->has_symbolic_sizes_strides(), "fxinplace.functionalize: ", name,
        " mutates a tensor with symbolic shapes; custom mutable ops are supported with concrete shapes "
        "(make_fx tracing_mode 'real' or 'fake')");
    for (const auto& record : impl->views())
      TORCH_CHECK(
          !record->flips_values(), "fxinplace.functionalize: ", name, " mutates a view made by ",
          record->op_name(),
          " (a conjugated or negated view); auto_functionalized_v2 rebuilds mutated views with "
          "as_strided, which cannot conjugate or negate, so the op would see other values than in eager");
    AliasState* alias = impl->alias().get();
    int64_t index = 0;
    while (index < static_cast<int64_t>(aliases_.size()) && aliases_[index] != alias) ++index;
    at::Tensor where;
    if (index == static_cast<int64_t>(aliases_.size())) {
      at::Tensor base = alias->base(reapply_);
      where = measure(name, base, impl->views());
      if (where.scalar_type() != base.scalar_type() && !reapply_ &&
          !(base.is_contiguous() && TORCH_GUARD_OR_FALSE(base.sym_storage_offset().sym_eq(0)))) {
        // view_copy reinterprets a compact copy at offset 0: located in that
        // copy instead (a strided input x[:, ::2], or x[1:], mutated as
        // x.view(torch.int32); seeds 825, 931).
        // as_strided addresses storage positions, which the compact copy has
        // elsewhere: the view would be another element there (seed 2006:
        // x.t().as_strided((3,), (2,))[2].view(torch.int32) is x.t()[1, 1] in
        // eager, [2, 0] of the compact copy).
        for (const auto& record : impl->views())
          TORCH_CHECK(!record->is_as_strided(), "fxinplace.functionalize: ", name, " mutates a ",
                      where.scalar_type(),
                      " view made through as_strided() of a tensor whose layout is not compact; with "
                      "remove=\"mutations_and_views\" the view is located in a compact copy of it, where "
                      "as_strided addresses other elements (remove=\"mutations\" takes this)");
        base = at::clone(base, at::MemoryFormat::Contiguous);
        where = measure(name, base, impl->views());
      }
      aliases_.push_back(alias);
      measured_on_.push_back(base);
      original_dtypes_.push_back(base.scalar_type());
      bases_.push_back(
          where.scalar_type() == base.scalar_type() ? base : reinterpret(name, base, where.scalar_type()));
    } else {
      where = measure(name, measured_on_[index], impl->views());
      TORCH_CHECK(where.scalar_type() == bases_[index].scalar_type(), "fxinplace.functionalize: ", name,
                  " mutates views of one tensor with different dtypes (", where.scalar_type(), " and ",
                  bases_[index].scalar_type(), "), which auto_functionalized_v2 cannot express");
    }
    check_within_base(name, where, measured_on_[static_cast<size_t>(index)]);
    return MutatedView{index, where.sym_sizes().vec(), where.sym_strides().vec(), where.sym_storage_offset()};
  }

  // The view chain replayed on `base` (meta). With remove="mutations_and_views"
  // a base's value may be a compact copy where eager's is not (an expanded or
  // strided input), and a view that exists in eager's layout may not exist
  // there: a diagonal of an expanded input reinterpreted as int32 (seed 1075),
  // `x.expand(3, 2, 1).unsqueeze(0).view(2, -1)` of an expanded x (seed 146013).
  at::Tensor measure(const std::string& name, const at::Tensor& base, const ViewChain& views) const {
    if (reapply_) return measure_on_meta(base, views);
    try {
      return measure_on_meta(base, views);
    } catch (std::exception& e) {
      TORCH_CHECK(
          false, "fxinplace.functionalize: ", name,
          " mutates a view of a tensor whose layout is not compact; with remove=\"mutations_and_views\" "
          "the view is located in a compact copy of it, where it cannot be taken (",
          error_text(e), "; remove=\"mutations\" keeps eager's layout)");
    }
  }

  // auto_functionalized_v2 rebuilds the view with as_strided on the base's
  // value, which holds only the base's elements: a view reaching storage
  // beyond them (as_strided of an empty x1 = x[..., 1:-1], or of x[1:-1]
  // reaching its neighbours) would address memory the value does not have
  // (random pipelines seed 114282: ATen's "out of bounds for storage" from
  // the rebuild). Measured in bytes: the view may be another dtype's.
  static void check_within_base(const std::string& name, const at::Tensor& where, const at::Tensor& base) {
    if (where.sym_numel() == 0) return;
    const c10::SymInt wide = static_cast<int64_t>(where.itemsize());
    const c10::SymInt base_wide = static_cast<int64_t>(base.itemsize());
    const c10::SymInt first = where.sym_storage_offset() * wide;
    const c10::SymInt last = storage_extent(where) * wide;
    const c10::SymInt start = base.sym_storage_offset() * base_wide;
    const c10::SymInt end = storage_extent(base) * base_wide;
    TORCH_CHECK(TORCH_GUARD_OR_FALSE(first.sym_ge(start)) && TORCH_GUARD_OR_FALSE(last.sym_le(end)),
                "fxinplace.functionalize: ", name,
                " mutates a view (made through as_strided()) that reaches memory outside the elements of the "
                "tensor it views (bytes [",
                first, ", ", last, ") of its storage; its elements lie in [", start, ", ", end,
                ")); functionalization keeps only a tensor's elements, so it cannot express this write");
  }

  const std::vector<AliasState*>& aliases() const { return aliases_; }
  const std::vector<at::Tensor>& bases() const { return bases_; }

  // `new_base` (what the op left in base `index`) in the alias group's dtype.
  at::Tensor restore_dtype(size_t index, const at::Tensor& new_base) const {
    const at::ScalarType dtype = original_dtypes_[index];
    if (new_base.scalar_type() == dtype) return new_base;
    const at::Tensor viewable = with_contiguous_unit_strides(new_base, dtype, reapply_);
    return reapply_ ? viewable.view(dtype) : at::view_copy(viewable, dtype);
  }

 private:
  at::Tensor reinterpret(const std::string& name, const at::Tensor& base, at::ScalarType dtype) const {
    try {
      const at::Tensor viewable = with_contiguous_unit_strides(base, dtype, reapply_);
      return reapply_ ? viewable.view(dtype) : at::view_copy(viewable, dtype);
    } catch (std::exception& e) {  // c10::Error, or python_error under make_fx
      TORCH_CHECK(false, "fxinplace.functionalize: ", name, " mutates a ", dtype,
                  " view of a tensor that cannot be reinterpreted as ", dtype, " as a whole (", error_text(e),
                  ")");
    }
  }

  bool reapply_;
  std::vector<AliasState*> aliases_;
  std::vector<at::Tensor> measured_on_;  // per base: the value its views are located in
  std::vector<at::ScalarType> original_dtypes_;
  std::vector<at::Tensor> bases_;
};

}  // namespace

void set_auto_functionalize_hook(AutoFunctionalizeHook hook) { hook_slot() = std::move(hook); }

void auto_functionalize(const c10::OperatorHandle& op, const OpClass& op_class, torch::jit::Stack* stack,
                        bool reapply_views) {
  TORCH_CHECK(hook_slot(),
              "fxinplace.functionalize: no auto_functionalize hook is installed (import fxinplace)");
  const size_t num_args = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - num_args, stack->end());
  torch::jit::drop(*stack, num_args);

  BaseTable table(reapply_views);
  std::vector<std::vector<MutatedView>> mutated(op_class.written.size());
  for (size_t k = 0; k < op_class.written.size(); ++k) {
    c10::IValue& arg = args[op_class.written[k]];
    for_each_tensor(arg, [&](const at::Tensor& t) { mutated[k].push_back(table.locate(op, t)); });
    arg = c10::IValue();  // rebuilt from its base by auto_functionalized_v2
  }
  // A read argument with the negative or conjugate bit (torch._neg_view(t)) would send
  // auto_functionalized_v2 to the Negative/Conjugate dispatch key, which has no kernel
  // for it (seed 674): it gets the same values, the bit resolved.
  for (c10::IValue& a : args)
    a = map_tensors(a, [&](const at::Tensor& t) {
      const at::Tensor value = is_functional(t) ? unwrap_synced(t, reapply_views) : t;
      return value.defined() ? at::resolve_neg(at::resolve_conj(value)) : value;
    });

  std::vector<c10::IValue> results = hook_slot()(op, args, mutated, table.bases());
  const size_t num_returns = op.schema().returns().size();
  TORCH_CHECK(results.size() == num_returns + table.bases().size(), "fxinplace.functionalize: the ",
              "auto_functionalize hook returned ", results.size(), " values for ",
              c10::toString(op.operator_name()));
  for (size_t k = 0; k < table.aliases().size(); ++k)
    table.aliases()[k]->set_base(table.restore_dtype(k, results[num_returns + k].toTensor()));
  for (size_t r = 0; r < num_returns; ++r)
    stack->push_back(
        map_tensors(results[r], [](const at::Tensor& t) { return t.defined() ? wrap_new(t) : t; }));
}

}  // namespace fxinplace::functionalize
