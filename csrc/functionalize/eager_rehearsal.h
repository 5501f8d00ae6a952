// Rehearsing a mutating op the way eager would run it, without data: the op
// runs on dataless meta stand-ins of its arguments (their dtypes and
// geometry), so eager's own argument checks run — the dtypes a written tensor
// may have (mm.out wants exactly its result's dtype, add.out any dtype the
// result casts to, abs_ refuses complex self). The functional variant that
// computes the value does none of these checks.
//
// Meta kernels skip memory-overlap checks and, for some ops, pick other
// strides for a resized out= argument than the CPU/CUDA kernels do, so only
// the errors are used.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <utility>
#include <vector>

namespace fxinplace::functionalize {

// Throws, naming fxinplace and the op, with eager's message where the op
// rejects its arguments. Does nothing where it cannot run on meta stand-ins
// (no meta kernel). Symbolic shapes stay symbolic on the stand-ins; an out=
// argument eager resizes is given its new sizes (`resized`: the argument and
// its sizes) up front, as a tensor of symbolic sizes cannot be resized.
void rehearse_on_meta(
    const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
    const std::vector<std::pair<const c10::TensorImpl*, std::vector<c10::SymInt>>>& resized = {});

// The tensors a pure op returns in eager, as dataless meta tensors with
// eager's geometry (each tensor of a list return in turn): the op run on
// stand-ins laid out as its functional arguments are in eager. With
// remove="mutations_and_views" a view's value is a compact copy, so the
// functional result need not be laid out as eager's (mul of a transposed
// view is transposed in eager), yet composite ops decide by the layout
// (reshape() views a contiguous tensor and copies another). Empty where the
// op does not run on meta; its errors are the real op's to report.
std::vector<at::Tensor> rehearse_results_on_meta(const c10::OperatorHandle& op,
                                                 c10::ArrayRef<c10::IValue> args);

}  // namespace fxinplace::functionalize
