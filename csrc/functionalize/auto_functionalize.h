// Custom ops that mutate their arguments have no functional variant. They are
// functionalized the auto_functionalized_v2 way: the op runs on fresh copies of
// the mutated bases (views regenerated from them) and later reads see the new
// bases. The op itself is emitted by Python (`auto_functionalized_v2` is a
// Python higher-order op, which Inductor and fxinplace.reinplace understand);
// this file prepares its inputs and commits its results.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <functional>
#include <vector>

#include "functionalize/op_classes.h"

namespace fxinplace::functionalize {

// Where a mutated argument sits in its base: the base's index in `bases`, and
// the argument's size/stride/storage offset in the base's storage.
// (Symbolic under tracing_mode="symbolic".)
struct MutatedView {
  int64_t base_index;
  std::vector<c10::SymInt> size;
  std::vector<c10::SymInt> stride;
  c10::SymInt storage_offset;
};

// (op, arguments with unwrapped values, per written argument: one MutatedView
// per tensor (a list for Tensor[] arguments), unwrapped bases)
//   -> (op results..., new bases...)
using AutoFunctionalizeHook = std::function<std::vector<c10::IValue>(
    const c10::OperatorHandle&, const std::vector<c10::IValue>&, const std::vector<std::vector<MutatedView>>&,
    const std::vector<at::Tensor>&)>;

void set_auto_functionalize_hook(AutoFunctionalizeHook hook);

// Runs `op` (a custom op that writes arguments) on the stack's arguments and
// leaves its results (fresh functional tensors) on the stack.
void auto_functionalize(const c10::OperatorHandle& op, const OpClass& op_class, torch::jit::Stack* stack,
                        bool reapply_views);

}  // namespace fxinplace::functionalize
