// An in-place foreach op is eager's loop over its lists: element k is written
// before element k + 1 is read. Its functional variant computes every element
// from the values before the op, which is the same only where no written
// element shares memory with an element of another index:
//
//   torch._foreach_mul_([b[:2], b[1:]], 0.5)      # eager: b[1] halved twice
//   torch._foreach_add_([a, b], [b, a])           # eager: b += (a + b)
//
// Such an op runs one index at a time (each a foreach op over one-element
// lists, functionalized as usual), so each sees the writes before it.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "functionalize/op_classes.h"

namespace fxinplace::functionalize {

// `args`: the op's arguments on the stack (functional tensors).
bool foreach_elements_interact(const OpClass& c, c10::ArrayRef<c10::IValue> args);

// Calls `op` once per index with each list argument cut to its element there,
// through the dispatcher (so through this functionalization again).
void run_foreach_in_sequence(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace fxinplace::functionalize
