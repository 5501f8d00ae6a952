"""Linear algebra: ``matmul``, ``addmm``, ``bmm`` and small MLP and attention programs."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import randn


@reinplace_case(lambda: (randn(4, 3), randn(3, 5, seed=1), randn(5, seed=2)), expect={"aten.add_.Tensor": 1})
def matmul_add(x, y, b):
    return (x @ y) + b


@reinplace_case(lambda: (randn(5, seed=2), randn(4, 3), randn(3, 5, seed=1)))
def addmm_relu(b, x, y):
    return torch.addmm(b, x, y).relu()


@reinplace_case(lambda: (randn(2, 3, 4), randn(2, 4, 3, seed=1)))
def bmm_add(x, y):
    return torch.bmm(x, y) + 1


@reinplace_case(
    lambda: (
        randn(2, 4),
        randn(4, 8, seed=1),
        randn(8, seed=2),
        randn(8, 3, seed=3),
        randn(3, seed=4),
    )
)
def mlp(x, w1, b1, w2, b2):
    return (x @ w1 + b1).relu() @ w2 + b2


@reinplace_case(lambda: (randn(4, 8), randn(4, 8, seed=1), randn(4, 8, seed=2)))
def attention(q, k, v):
    scores = (q @ k.t()) * 0.5
    return scores.softmax(-1) @ v
