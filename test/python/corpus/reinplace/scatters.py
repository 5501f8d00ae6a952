"""``a[...] = b`` style scatters into intermediates: the scatter goes where the write lands in
place."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import randn, x44


@reinplace_case(x44, expect={"aten.select_scatter.default": 0})
def scatter_select_fill(x):
    a = x + 1
    a[0] = 0.0
    return a


@reinplace_case(lambda: (randn(4, 4), randn(4, seed=1)), expect={"aten.select_scatter.default": 0})
def scatter_select_assign_tensor(x, y):
    a = x * 2
    a[2] = y
    return a


@reinplace_case(x44, expect={"aten.slice_scatter.default": 0})
def scatter_slice_fill(x):
    a = x.clone()
    a[1:3] = 5.0
    return a


@reinplace_case(lambda: (randn(4, 4), randn(2, 4, seed=1)))
def scatter_slice_step_assign(x, y):
    a = x - 1
    a[::2] = y
    return a


@reinplace_case(lambda: (randn(4, 4), randn(3, seed=1)))
def scatter_nested_views_assign(x, y):
    a = x.clone()
    a[1:, 0] = y
    return a


@reinplace_case(x44, expect={"aten.fill_.Scalar": 1, "aten.diagonal_scatter.default": 0})
def scatter_diagonal_fill(x):
    a = x.clone()
    a.diagonal().fill_(0)
    return a


@reinplace_case(x44)
def scatter_diagonal_zero_offset(x):
    a = x * 3
    a.diagonal(1).zero_()
    return a


@reinplace_case(x44)
def scatter_zeros_buffer_accumulate(x):
    out = torch.zeros(4, 4)
    out[1:3] += x[1:3]
    return out


@reinplace_case(x44)
def scatter_then_view_output(x):
    a = x + 1
    a[0] = 0.0
    return a, a[1]
