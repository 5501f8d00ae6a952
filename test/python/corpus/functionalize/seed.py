"""Seed-style examples: in-place on a view updates the base and sibling views; in-place on the
base updates the views."""

from __future__ import annotations

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34, a44, r44
from ..stock_programs import scatter_op_views


@functionalize_case(a44, "seed")
def view_inplace_updates_base(x):
    a = x.clone()
    v = a.view(-1)
    v.add_(1)
    return a


@functionalize_case(a44, "seed")
def view_inplace_updates_siblings(x):
    a = x.clone()
    row = a[0]
    col = a[:, 1]
    row.mul_(2)
    return col, a


@functionalize_case(a34, "seed")
def base_inplace_updates_views(x):
    a = x.clone()
    v = a.t()
    w = a[1:, 2]
    a.add_(1)
    return v, w


@functionalize_case(a44, "seed")
def base_inplace_then_view_chain(x):
    a = x.clone()
    v = a.view(2, 8)[1]
    a.zero_()
    return v + 1


@functionalize_case(a44, "seed")
def nested_views_two_writes(x):
    a = x.clone()
    b = a.transpose(0, 1)
    c = b[1:3]
    c.fill_(5.0)
    d = a[2]
    d.sub_(1)
    return a, b, c


@functionalize_case(r44, "seed")
def scatter_op_mirror(x):
    # PyTorch's test_fx_reinplace_pass "scatter_op".
    a, e = scatter_op_views(x)
    return a.view(-1) + e


@functionalize_case(r44, "seed")
def scatter_twice(x):
    a = x.clone()
    b = a[:, 1]
    c = b[1]
    c.add_(1)
    b.mul_(2)
    return a


@functionalize_case(a44, "seed")
def view_read_before_and_after_write(x):
    a = x.clone()
    v = a[1:3, 1:3]
    before = v.sum()
    a.mul_(-1)
    after = v.sum()
    return before, after, v
