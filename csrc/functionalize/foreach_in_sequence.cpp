#include "functionalize/foreach_in_sequence.h"

#include <optional>
#include <vector>

#include "functionalize/eager_write_rules.h"
#include "functionalize/functional_tensor.h"

namespace fxinplace::functionalize {
namespace {

// The length of the op's lists (every list argument of a foreach op has it).
std::optional<size_t> list_length(c10::ArrayRef<c10::IValue> args) {
  for (const c10::IValue& a : args)
    if (a.isList()) return a.toListRef().size();
  return std::nullopt;
}

}  // namespace

bool foreach_elements_interact(const OpClass& c, c10::ArrayRef<c10::IValue> args) {
  if (!c.foreach || c.written.empty()) return false;
  const std::optional<size_t> length = list_length(args);
  if (!length || *length < 2) return false;
  for (size_t p : c.written) {
    if (!args[p].isTensorList()) continue;
    const c10::List<at::Tensor> written = args[p].toTensorList();
    for (size_t k = 0; k < written.size(); ++k) {
      const at::Tensor w = written[k];
      for (const c10::IValue& a : args) {
        if (!a.isTensorList()) continue;
        const c10::List<at::Tensor> list = a.toTensorList();
        for (size_t j = 0; j < list.size(); ++j) {
          const at::Tensor other = list[j];
          if (j != k && w.defined() && other.defined() && may_share_memory(w, other)) return true;
        }
      }
    }
  }
  return false;
}

void run_foreach_in_sequence(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t num_args = op.schema().arguments().size();
  const std::vector<c10::IValue> args(stack->end() - num_args, stack->end());
  torch::jit::drop(*stack, num_args);
  const size_t length = *list_length(args);
  for (size_t k = 0; k < length; ++k) {
    torch::jit::Stack one;
    one.reserve(num_args);
    for (const c10::IValue& a : args) {
      if (!a.isList()) {
        one.push_back(a);
        continue;
      }
      c10::impl::GenericList element(a.toList().elementType());
      element.push_back(a.toListRef()[k]);
      one.emplace_back(std::move(element));
    }
    op.callBoxed(one);
  }
  // In-place foreach ops return nothing.
  TORCH_CHECK(op.schema().returns().empty(), "fxinplace.functionalize: ", op.operator_name(),
              " runs one index at a time but returns values");
}

}  // namespace fxinplace::functionalize
