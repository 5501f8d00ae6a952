#include "functionalize/auto_functionalize.h"

#include "functionalize/functional_tensor.h"
#include "functionalize/ivalue_tensors.h"

namespace fxinplace::functionalize {
namespace {

AutoFunctionalizeHook& hook_slot() {
  static AutoFunctionalizeHook hook;
  return hook;
}

// Collects, for one written argument, where each of its tensors sits in its
// base; bases are numbered in first-seen order, one per alias group.
class BaseTable {
 public:
  explicit BaseTable(bool reapply_views) : reapply_(reapply_views) {}

  MutatedView locate(const c10::OperatorHandle& op, const at::Tensor& t) {
    FunctionalTensorImpl* impl = functional_impl(t);
    impl->rebase_if_needed();  // an alias made before its base was resized
    TORCH_CHECK(
        !impl->value().unsafeGetTensorImpl()->has_symbolic_sizes_strides(),
        "fxinplace.functionalize: ", c10::toString(op.operator_name()),
        " mutates a tensor with symbolic shapes; custom mutable ops are supported with concrete shapes "
        "(make_fx tracing_mode 'real' or 'fake')");
    AliasState* alias = impl->alias().get();
    int64_t index = 0;
    while (index < static_cast<int64_t>(aliases_.size()) && aliases_[index] != alias) ++index;
    if (index == static_cast<int64_t>(aliases_.size())) {
      aliases_.push_back(alias);
      bases_.push_back(alias->base(reapply_));
    }
    at::Tensor where = measure_on_meta(bases_[index], impl->views());
    return MutatedView{index, where.sizes().vec(), where.strides().vec(), where.storage_offset()};
  }

  const std::vector<AliasState*>& aliases() const { return aliases_; }
  const std::vector<at::Tensor>& bases() const { return bases_; }

 private:
  bool reapply_;
  std::vector<AliasState*> aliases_;
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
  for (c10::IValue& a : args)
    a = map_tensors(
        a, [&](const at::Tensor& t) { return is_functional(t) ? unwrap_synced(t, reapply_views) : t; });

  std::vector<c10::IValue> results = hook_slot()(op, args, mutated, table.bases());
  const size_t num_returns = op.schema().returns().size();
  TORCH_CHECK(results.size() == num_returns + table.bases().size(), "fxinplace.functionalize: the ",
              "auto_functionalize hook returned ", results.size(), " values for ",
              c10::toString(op.operator_name()));
  for (size_t k = 0; k < table.aliases().size(); ++k)
    table.aliases()[k]->set_base(results[num_returns + k].toTensor());
  for (size_t r = 0; r < num_returns; ++r)
    stack->push_back(
        map_tensors(results[r], [](const at::Tensor& t) { return t.defined() ? wrap_new(t) : t; }));
}

}  // namespace fxinplace::functionalize
