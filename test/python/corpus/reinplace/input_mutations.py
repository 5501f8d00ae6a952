"""Mutations of program inputs: the graph ends with a ``copy_`` into each mutated placeholder,
which must stay."""

from __future__ import annotations

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import x44, x44_y44


@reinplace_case(x44, expect={"aten.copy_.default": 1})
def input_add_(x):
    x.add_(1)
    return x


@reinplace_case(x44, expect={"aten.copy_.default": 1})
def input_slice_fill_(x):
    x[1].fill_(0)
    return x.sum()


@reinplace_case(x44_y44)
def input_mutate_then_intermediate(x, y):
    x.mul_(2)
    a = x + y
    a.relu_()
    return a


@reinplace_case(x44_y44, expect={"aten.copy_.default": 2})
def input_mutate_two_inputs(x, y):
    x.add_(y)
    y.mul_(2)
    return x + y


@reinplace_case(x44)
def input_view_mutation_output_view(x):
    x.t().add_(1)
    return x.t()


@reinplace_case(x44_y44)
def input_copy_from_intermediate(x, y):
    x.copy_(y * 2)
    return x


@reinplace_case(x44)
def input_clone_then_mutate(x):
    y = x.clone()
    x.add_(1)
    return y


@reinplace_case(x44)
def input_mutation_no_outputs(x):
    x.sub_(3)
