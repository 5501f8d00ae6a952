"""Pointwise chains on intermediates: each op reinplaced into its dead ``self``, unless ``self``
is read later, is an operand too, or has another shape or dtype than the result."""

from __future__ import annotations

import torch.nn.functional as F

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import randint, x44, x44_y44


@reinplace_case(
    x44,
    expect={
        "aten.mul.Tensor": 1,
        "aten.add_.Tensor": 1,
        "aten.relu_.default": 1,
        "aten.sigmoid_.default": 1,
    },
)
def pointwise_chain(x):
    return ((x * 2) + 1).relu().sigmoid()


@reinplace_case(x44)
def activations_chain(x):
    return x.clone().relu().sigmoid().tanh()


@reinplace_case(x44)
def arith_scalar_chain(x):
    return (x + 1).sub(2, alpha=3).mul(0.5).div(4).neg().abs().exp()


@reinplace_case(x44)
def pow_sqrt_log_chain(x):
    return (x.abs() + 1).pow(2).sqrt().rsqrt().log()


@reinplace_case(x44)
def clamp_chain(x):
    return (x * 3).clamp(-1, 1).clamp_min(0).clamp_max(0.5)


@reinplace_case(x44)
def gelu_silu(x):
    return F.silu(F.gelu(x + 1))


@reinplace_case(x44_y44)
def binary_intermediates(x, y):
    a = x + 1
    b = y * 2
    c = a * b
    # ``a`` is used again: the mul above must not be reinplaced into ``a``.
    return c - a


@reinplace_case(x44, expect={"aten.mul.Tensor": 1, "aten.mul_.Tensor": 0})
def self_repeated(x):
    a = x + 1
    # mul(a, a): self appears twice, never reinplaced.
    return a * a


@reinplace_case(x44)
def reused_later(x):
    a = x + 1
    b = a.sin()
    return a + b


@reinplace_case(x44_y44)
def scalar_tensor_ops(x, y):
    s = x.sum() + 1
    # 0-dim self with a larger result: not reinplaceable.
    return s * y, s.exp()


@reinplace_case(lambda: (randint(10, 4, 4),))
def int_ops(i):
    return (i * 2).add(3).bitwise_and(6).remainder(5)


@reinplace_case(x44_y44)
def bool_ops(x, y):
    return (x > 0).logical_not().logical_and(y > 0)


@reinplace_case(x44)
def half_precision(x):
    return (x.half() + 1).mul(2)
