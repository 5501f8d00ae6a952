// What eager leaves in a tensor that an in-place or out= op writes, given the
// value the op's functional variant computed: eager writes *into* the tensor,
// so the tensor keeps its dtype (the value is cast, where casting is allowed)
// and, for in-place ops, its shape; an out= argument of another shape is
// resized (to the computed value's strides, as TensorIterator picks them).
// Where eager raises (a cast it does not allow, a result that broadcasts past
// `self`, writes into memory that other elements or other arguments also
// occupy, an out= dtype the op does not accept), so do we.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <vector>

#include "functionalize/expand_fold.h"

namespace fxinplace::functionalize {

struct Write {
  at::Tensor target;  // the functional tensor the op writes
  at::Tensor value;   // its new value, as the functional variant computed it
  bool is_out;        // an out= argument (may be resized) rather than self
  // How a write through expand() combines the copies of an element (set by
  // conform_writes for a target whose elements share memory).
  CopiesFold fold = CopiesFold::kWrittenCopy;
  // The value as eager lays it out, where its own layout is not eager's (a
  // dataless meta tensor; undefined where the value's layout is eager's).
  at::Tensor eager_layout{};
};

// The write changes no element (its target has none, and is not resized).
bool writes_nothing(const Write& w);

// The checks eager makes on a written tensor before it computes anything
// (TensorIterator's internal-overlap check comes before its shape checks):
// made before the functional variant runs, so a write eager refuses raises
// eager's error, and a trace records no node for it (make_fx records a node
// before running it; one that raises would stay in the graph, and raise there).
void check_written_before_running(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                                  c10::ArrayRef<size_t> written);

// copy_ from a negative view (torch._neg_view) of another dtype converts,
// then negates in self's dtype; the functional `copy` negates first, in the
// source's dtype, so an int16 -32768 copied into float16 comes out -32768
// where eager gives 32768. Rewrites the functional variant's source so it
// computes eager's value.
void negate_after_converting(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                             torch::jit::Stack& functional_stack);

// Whether two functional tensors may address one memory location (one alias
// group, and their elements, or where their layouts are not dense their
// spans, meet).
bool may_share_memory(const at::Tensor& a, const at::Tensor& b);

// Casts each write's value to its target's dtype and checks what eager
// checks; throws, naming fxinplace and the op, where eager raises.
// (The in-place writes' checks of check_written_before_running, which must
// have run first, are not repeated.)
void conform_writes(const c10::OperatorHandle& op, c10::ArrayRef<c10::IValue> args,
                    std::vector<Write>& writes);

}  // namespace fxinplace::functionalize
