"""``out=`` ops: into a fresh tensor, an input, an empty tensor (resized), a view."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a44, ar, r44_r44


@functionalize_case(r44_r44, "out")
def out_into_fresh(x, y):
    c = torch.empty(4, 4)
    torch.add(x, y, out=c)
    return c


@functionalize_case(r44_r44, "out", "input_mutation")
def out_into_input(x, y):
    torch.mul(x, 2, out=y)
    return y.sum()


@functionalize_case(lambda: (ar(3),), "out", "resize")
def out_resizes_empty(x):
    c = torch.empty(0)
    torch.add(x, 1, out=c)
    return c


@functionalize_case(a44, "out")
def out_into_view(x):
    a = torch.zeros(4, 4)
    torch.sub(x[0], 1, out=a[2])
    torch.mul(x[:, 1], 2, out=a[:, 0])
    return a


@functionalize_case(r44_r44, "out")
def out_mm_and_sum(x, y):
    m = torch.empty(4, 4)
    torch.mm(x, y, out=m)
    s = torch.empty(())
    torch.sum(m, dim=(0, 1), out=s)
    return m, s


@functionalize_case(
    r44_r44,
    "out",
    stock_fails=True,
    stock_fails_reason=(
        "aten::matmul.out is CompositeImplicitAutograd with an out= alias annotation; "
        "functionalization refuses it ('Found a custom (non-ATen) operator whose output has "
        "alias annotations'), eager runs it fine"
    ),
)
def out_matmul_composite(x, y):
    m = torch.empty(4, 4)
    torch.matmul(x, y, out=m)
    return m
