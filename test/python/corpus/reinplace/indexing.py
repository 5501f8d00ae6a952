"""Indexing, gather and scatter: ``index_put``, ``index_add``, ``masked_fill``, ``scatter``,
``gather``."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import bool_mask, randint, randn


@reinplace_case(lambda: (randn(4, 4), torch.tensor([3, 1]), randn(2, 4, seed=1)))
def index_put_functional(x, idx, v):
    return torch.index_put(x + 0, (idx,), v)


@reinplace_case(lambda: (randn(4, 4), torch.tensor([1, 1, 2]), randn(3, 4, seed=1)))
def index_put_accumulate(x, idx, v):
    a = x.clone()
    a.index_put_((idx,), v, accumulate=True)
    return a


@reinplace_case(lambda: (randn(4, 4), torch.tensor([2, 0, 2])))
def index_select_add(x, idx):
    return torch.index_select(x, 0, idx) + 1


@reinplace_case(lambda: (randn(4, 4), torch.tensor([0, 3, 0]), randn(3, 4, seed=1)))
def index_add_(x, idx, v):
    a = x + 0
    a.index_add_(0, idx, v)
    return a


@reinplace_case(lambda: (randn(4, 4), bool_mask(4, 4, seed=1)), expect={"aten.masked_fill_.Scalar": 1})
def masked_fill_intermediate(x, mask):
    return (x + 1).masked_fill(mask, 0.0)


@reinplace_case(lambda: (randn(4, 4), bool_mask(4, 4, seed=1)))
def bool_mask_assign(x, mask):
    a = x.clone()
    a[mask] = 0.0
    return a


@reinplace_case(lambda: (randn(4, 4), randint(4, 4, 2), randn(4, 2, seed=1)))
def scatter_src(x, idx, src):
    return torch.scatter(x + 0, 1, idx, src)


@reinplace_case(lambda: (randn(4, 4), randint(4, 4, 3)))
def gather_add(x, idx):
    return torch.gather(x, 1, idx) * 2
