"""Broadcasting and dtypes: an op goes in place into ``self`` only where its result has
``self``'s shape and dtype."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import randint, randn, x44, x44_y44


@reinplace_case(x44_y44, expect={"aten.add.Tensor": 1, "aten.add_.Tensor": 0})
def broadcast_small_self(x, y):
    a = x.sum(0)
    # ``a`` (4,) is smaller than the (4, 4) result: not reinplaceable.
    return a + y


@reinplace_case(x44_y44, expect={"aten.add.Tensor": 1, "aten.add_.Tensor": 1})
def broadcast_large_self(x, y):
    a = x + 1
    return a + y.sum(0)


@reinplace_case(x44, expect={"aten.add_.Tensor": 1})
def dtype_to_float64(x):
    a = x.to(torch.float64)
    return a + 1


@reinplace_case(x44_y44)
def dtype_comparisons(x, y):
    a = x + 1
    m = (a > 0) & (y < 0)
    return m, a


@reinplace_case(lambda: (randn(4), randn(4, seed=1)))
def dtype_inplace_ge(x, y):
    a = x.clone()
    a.ge_(y)
    return a


@reinplace_case(
    lambda: (randint(10, 4, 4), randn(4, 4)), expect={"aten.add.Tensor": 1, "aten.add_.Tensor": 1}
)
def dtype_mixed_int_float(i, f):
    # int64 self with a float result: not reinplaceable; float self: fine.
    return i.clone() + f, f.clone() + i


@reinplace_case(x44)
def dtype_copy_into_float64_buffer(x):
    a = torch.zeros(4, 4, dtype=torch.float64)
    a.copy_(x)
    return a
