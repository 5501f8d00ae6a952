#include "functionalize/eager_rehearsal.h"

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/Exceptions.h>

#include "functionalize/dispatch_key.h"
#include "functionalize/error_text.h"
#include "functionalize/functional_tensor.h"
#include "functionalize/ivalue_tensors.h"
#include "functionalize/meta_geometry.h"

namespace fxinplace::functionalize {
namespace {

at::Tensor stand_in(const at::Tensor& t) {
  // A Python number passed as a tensor is a CPU scalar, which kernels take
  // alongside tensors of any device (and promote as a number).
  if (!t.defined() || t.unsafeGetTensorImpl()->is_wrapped_number()) return t;
  // A functional tensor answers sizes/strides with its eager geometry.
  return meta_strided(t.scalar_type(), t.sym_sizes(), t.sym_strides(), t.sym_storage_offset());
}

}  // namespace

void rehearse_on_meta(
    const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
    const std::vector<std::pair<const c10::TensorImpl*, std::vector<c10::SymInt>>>& resized) {
  // Python modes (make_fx) must not record the rehearsal.
  c10::impl::ExcludeDispatchKeyGuard no_modes(c10::python_ks | c10::DispatchKeySet(kFunctionalizeKey));
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (const c10::IValue& a : args)
    stack.push_back(map_tensors(a, [&](const at::Tensor& t) {
      for (const auto& [impl, sizes] : resized)
        if (t.defined() && t.unsafeGetTensorImpl() == impl)
          return meta_strided(t.scalar_type(), sizes, contiguous_strides(sizes), t.sym_storage_offset());
      return stand_in(t);
    }));
  try {
    op.callBoxed(stack);
  } catch (const c10::NotImplementedError&) {
    // no meta kernel: nothing to learn
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "fxinplace.functionalize: ", c10::toString(op.operator_name()),
                " is rejected by eager PyTorch: ", e.what_without_backtrace());
  } catch (python_error& e) {
    // A meta kernel written in Python raised: take its error off the Python
    // error indicator (it is ours to report, not to leave pending).
    e.persist();
    bool not_implemented = false;
    {
      pybind11::gil_scoped_acquire gil;
      not_implemented = e.type != nullptr && PyErr_GivenExceptionMatches(e.type, PyExc_NotImplementedError);
    }
    if (not_implemented) return;
    TORCH_CHECK(false, "fxinplace.functionalize: ", c10::toString(op.operator_name()),
                " is rejected by eager PyTorch: ", e.what());
  } catch (std::exception& e) {
    const std::string message = error_text(e);
    if (message.rfind("NotImplementedError", 0) == 0) return;
    TORCH_CHECK(false, "fxinplace.functionalize: ", c10::toString(op.operator_name()),
                " is rejected by eager PyTorch: ", message);
  }
}

std::vector<at::Tensor> rehearse_results_on_meta(const c10::OperatorHandle& op,
                                                 c10::ArrayRef<c10::IValue> args) {
  c10::impl::ExcludeDispatchKeyGuard no_modes(c10::python_ks | c10::DispatchKeySet(kFunctionalizeKey));
  torch::jit::Stack stack;
  stack.reserve(args.size());
  for (const c10::IValue& a : args) stack.push_back(map_tensors(a, stand_in));
  try {
    op.callBoxed(stack);
  } catch (python_error& e) {
    e.persist();  // (off the Python error indicator: nothing to report)
    return {};
  } catch (std::exception&) {
    return {};
  }
  std::vector<at::Tensor> results;
  for (const c10::IValue& r : stack) for_each_tensor(r, [&](const at::Tensor& t) { results.push_back(t); });
  return results;
}

}  // namespace fxinplace::functionalize
