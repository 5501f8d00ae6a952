"""Outputs that are views of mutated tensors; outputs that alias inputs."""

from __future__ import annotations

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34, a34_r4, a44


@functionalize_case(a44, "output_view")
def output_views_of_mutated(x):
    a = x.clone()
    a.mul_(2)
    return a.view(2, 8), a[1], a.t(), a


@functionalize_case(a44, "output_view")
def output_view_then_base_mutated(x):
    a = x.clone()
    v = a[1:3]
    a.add_(1)
    return v


@functionalize_case(a44, "output_aliases_input")
def output_identity(x):
    return x


@functionalize_case(a34, "output_aliases_input")
def output_view_of_unmutated_input(x):
    return x.t(), x[0]


@functionalize_case(a34, "output_aliases_input", "input_mutation")
def output_mutated_input(x):
    x.add_(1)
    return x, x[1]


@functionalize_case(a34_r4, "output_aliases_input")
def output_mixed_aliasing(x, y):
    a = x + 1
    a[0].copy_(y)
    return a, y, x.view(-1)
