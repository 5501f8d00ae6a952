"""Outputs: several, an input returned, views of intermediates, clones of inputs, the same
tensor twice, nested containers."""

from __future__ import annotations

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import x44


@reinplace_case(x44)
def outputs_multiple(x):
    a = x + 1
    b = a * 2
    return a, b, a.view(-1)


@reinplace_case(x44)
def outputs_input_returned(x):
    return x, x + 1, x.view(-1)


@reinplace_case(x44)
def outputs_views_of_intermediate(x):
    a = x + 1
    return a.t(), a[0]


@reinplace_case(x44, expect={"aten.clone.default": 1})
def outputs_clone_of_input(x):
    # Values alone cannot tell the clone apart from x: only the aliasing check can.
    return x.clone(), x.view(-1)


@reinplace_case(x44)
def outputs_same_twice(x):
    a = x + 1
    return a, a


@reinplace_case(x44)
def outputs_nested_pytree(x):
    a = x + 1
    return {"a": a.relu(), "b": [x * 2, x.sum()]}
