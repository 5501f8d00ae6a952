"""Inputs that share memory: eager's writes through one are seen through the others.
``torch.func.functionalize`` treats them as separate tensors."""

from __future__ import annotations

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import ar


def _aliased_inputs_case(make_args):
    """A case whose inputs share memory: one the stock implementation gets wrong."""
    return functionalize_case(
        make_args,
        "aliased_inputs",
        "input_mutation",
        stock_fails=True,
        stock_fails_reason="torch.func.functionalize treats inputs that share memory as separate tensors",
    )


@_aliased_inputs_case(lambda: (lambda x: (x, x))(ar(2, 3)))
def same_tensor_twice_written_through_one(a, b):
    a.add_(1)
    return b * 2


@_aliased_inputs_case(lambda: (lambda x: (x, x[1:]))(ar(3, 2)))
def input_and_its_slice_written_through_the_slice(a, b):
    b.mul_(3)
    return a + 0


@_aliased_inputs_case(lambda: (lambda x: (x[:2], x[1:]))(ar(3, 2)))
def overlapping_input_slices_both_written(a, b):
    a[0].zero_()
    b.add_(a.sum())
    return a.clone(), b.clone()


@_aliased_inputs_case(lambda: (lambda x: (x.t(), x[:, 1]))(ar(3, 2)))
def transposed_input_and_a_column_of_it(a, b):
    a[0].zero_()
    b.add_(a.sum())
    return a * 1, b * 1
