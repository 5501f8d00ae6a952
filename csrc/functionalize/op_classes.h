// How the fallback treats an operator, read once from its schema and cached.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>
#include <vector>

namespace fxinplace::functionalize {

enum class OpKind {
  kPure,         // no alias annotations: sync inputs, run on values, wrap outputs
  kView,         // returns alias `self` (`Tensor(a)` / `Tensor(a)[]`): record, replay later
  kInplaceView,  // changes `self`'s view metadata (t_, unsqueeze_, ...)
  kResize,       // resize_, resize_as_ (see resize.h)
  kMutating,     // writes arguments (`Tensor(a!)`), in-place and out= ops
  kLift,         // lift_fresh/lift: a constant (torch.tensor) enters the region
  kSetToTensor,  // x.set_(src): x becomes an alias of src
  kUnsupported,  // reason in `unsupported_reason`
};

struct OpClass {
  OpKind kind = OpKind::kPure;
  // Decomposed through its CompositeImplicitAutograd kernel before anything
  // else: we sit above Autograd, so e.g. reshape/matmul arrive undecomposed.
  bool composite_implicit = false;
  // A non-ATen op (custom op): mutations go through auto_functionalized_v2.
  bool custom = false;
  // An aten::_foreach_* op (eager runs it as a loop over its lists).
  bool foreach = false;
  std::vector<size_t> written;  // positions of written arguments
  // Per return: the written argument it aliases, or -1 for a fresh result.
  std::vector<int> return_alias;
  // kMutating: the functional variant; kInplaceView: the out-of-place view op.
  std::optional<c10::OperatorHandle> functional;
  // `functional` has a CompositeImplicitAutograd kernel (matmul for matmul.out).
  bool functional_is_composite = false;
  // Arguments passed to `functional`, by position in this op's arguments
  // (out= arguments are dropped).
  std::vector<size_t> functional_args;
  // An out= op whose one out= tensor sets the dtype the op computes in
  // (ATen's get_dtype_from_result: torch.sum(x, 0, out=int32) sums x as
  // int32): the position in `functional_args` of the functional variant's
  // optional `dtype` argument, and the out= argument's position.
  std::optional<size_t> functional_dtype;
  std::optional<size_t> out_arg;
  std::string unsupported_reason;
};

const OpClass& classify(const c10::OperatorHandle& op);

}  // namespace fxinplace::functionalize
