"""Inputs that share memory: eager's writes through one are seen through the others.
``torch.func.functionalize`` treats them as separate tensors."""

from __future__ import annotations

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import ar

_ALIASED_INPUTS_REASON = "torch.func.functionalize treats inputs that share memory as separate tensors"


@functionalize_case(
    lambda: (lambda x: (x, x))(ar(2, 3)),
    "aliased_inputs",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason=_ALIASED_INPUTS_REASON,
)
def same_tensor_twice_written_through_one(a, b):
    a.add_(1)
    return b * 2


@functionalize_case(
    lambda: (lambda x: (x, x[1:]))(ar(3, 2)),
    "aliased_inputs",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason=_ALIASED_INPUTS_REASON,
)
def input_and_its_slice_written_through_the_slice(a, b):
    b.mul_(3)
    return a + 0


@functionalize_case(
    lambda: (lambda x: (x[:2], x[1:]))(ar(3, 2)),
    "aliased_inputs",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason=_ALIASED_INPUTS_REASON,
)
def overlapping_input_slices_both_written(a, b):
    a[0].zero_()
    b.add_(a.sum())
    return a.clone(), b.clone()


@functionalize_case(
    lambda: (lambda x: (x.t(), x[:, 1]))(ar(3, 2)),
    "aliased_inputs",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason=_ALIASED_INPUTS_REASON,
)
def transposed_input_and_a_column_of_it(a, b):
    a[0].zero_()
    b.add_(a.sum())
    return a * 1, b * 1
