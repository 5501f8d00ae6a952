"""Composite programs: ``cat``, ``stack``, ``where``, softmax, layer norm, ``cumsum``, a loop,
tuple results, ``sort``."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import randn, x44, x44_y44


@reinplace_case(x44_y44)
def cat_add(x, y):
    return torch.cat([x, y]) + 1


@reinplace_case(x44_y44)
def stack_mul(x, y):
    return torch.stack([x, y]).mul(2)


@reinplace_case(x44_y44)
def where_add(x, y):
    return torch.where(x > 0, x, y) + 1


@reinplace_case(x44)
def softmax_intermediate(x):
    return (x * 2).softmax(-1)


@reinplace_case(x44_y44)
def log_softmax_weighted(x, y):
    return (x.log_softmax(-1) * y).sum(-1)


@reinplace_case(lambda: (randn(4, 4), randn(4, seed=1), randn(4, seed=2)))
def layer_norm_math(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


@reinplace_case(lambda: (randn(4, 4), randn(4, seed=1), randn(4, seed=2)))
def layer_norm_op(x, w, b):
    return F.layer_norm(x, (4,), w, b).relu()


@reinplace_case(x44)
def cumsum_intermediate(x):
    return (x + 1).cumsum(0)


@reinplace_case(x44)
def accumulate_loop(x):
    acc = torch.zeros_like(x)
    for i in range(3):
        acc += x * i
    return acc


@reinplace_case(x44)
def var_mean_tuple(x):
    v, m = torch.var_mean(x, dim=1)
    return v + 1, m * 2


@reinplace_case(x44)
def sort_values_add(x):
    values, indices = torch.sort(x, dim=1)
    return values + 1, indices
