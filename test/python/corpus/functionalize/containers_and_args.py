"""Containers (dicts and lists returned, a list of inputs) and non-tensor arguments."""

from __future__ import annotations

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a44, ar


@functionalize_case(a44, "container")
def returns_dict_and_lists(x):
    a = x.clone()
    v = a[1]
    v.add_(1)
    return {"a": a, "views": [v, a.t()], "pair": (a.sum(), v.sum())}


@functionalize_case(lambda: (ar(4, 3), 2), "non_tensor_arg")
def int_arg_passthrough(x, n):
    a = x.clone()
    a[:n].add_(n)
    return a, n * 2


@functionalize_case(lambda: (ar(3, 4), 1, 0.5), "non_tensor_arg", "input_mutation")
def scalar_args_and_input_mutation(x, dim, s):
    x.select(dim, 2).mul_(s)
    return x.sum(dim)


@functionalize_case(lambda: ([ar(2, 2), ar(2, 2, start=4.0)],), "container")
def list_input_mutated(xs):
    xs[0].add_(xs[1])
    xs[1][0].zero_()
    return xs[0] + xs[1]
