"""Ops that return an alias or a copy depending on the input: ``.contiguous()``, ``.to(dtype)``."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34


@functionalize_case(a34, "contiguous")
def contiguous_alias_on_contiguous(x):
    a = x.clone()
    c = a.contiguous()  # an alias: a is contiguous
    c[0].fill_(-2.0)
    d = a[1:].contiguous()  # also an alias (a row slice is contiguous)
    d.mul_(2)
    return a, c


@functionalize_case(
    a34,
    "contiguous",
    stock_fails=("mutations_and_views",),
    stock_fails_reason=(
        "with remove='mutations_and_views' the functional wrapper of a.t() takes its strides "
        "from t_copy (contiguous), so .contiguous() returns an alias instead of a copy and the "
        "writes through it reach a; eager copies"
    ),
)
def contiguous_of_transposed_is_copy(x):
    a = x.clone()
    b = a.t().contiguous()  # a copy in eager
    b[0].fill_(-1.0)
    return a, b


@functionalize_case(a34, "to_dtype")
def to_dtype_copy_vs_alias(x):
    a = x.clone()
    d = a.to(torch.float64)  # a copy
    s = a.to(torch.float32)  # an alias: same dtype
    d.add_(0.5)
    s[1].mul_(3)
    return a, d, a.to(torch.int64)
