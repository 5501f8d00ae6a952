"""Factories of fresh, deterministic inputs for the corpus cases (``make_args``).

Every call returns new tensors: a case's inputs may be mutated. The re-inplacing corpus
uses seeded ``randn`` (``randn``, ``x44``, ...); the functionalization corpus exact values
(``ar``: ``arange``; ``rn``: seeded ``randn`` rounded to 1/16) so results compare exactly.
"""

from __future__ import annotations

import torch

# --------------------------------------------------------------------------- seeded random


def randn(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=gen).to(dtype)


def randint(high: int, *shape: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=gen)


def bool_mask(*shape: int, seed: int = 0) -> torch.Tensor:
    return randn(*shape, seed=seed) > 0


def symint(value: int) -> torch.SymInt:
    """A backed SymInt with hint ``value`` (as in PyTorch's test_reinplace_sym_input)."""
    from torch._dynamo.source import ConstantSource
    from torch.fx.experimental.sym_node import SymNode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env = ShapeEnv()
    symbol = env.create_symbol(value, source=ConstantSource(f"__testing_only{len(env.backed_var_to_val)}"))
    return torch.SymInt(SymNode(symbol, env, int, hint=value))


def x44() -> tuple[torch.Tensor]:
    return (randn(4, 4),)


def x44_y44() -> tuple[torch.Tensor, torch.Tensor]:
    return (randn(4, 4), randn(4, 4, seed=1))


# --------------------------------------------------------------------------- exact values


def ar(*shape: int, start: float = 0.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``arange`` of the right size, reshaped (exact values)."""
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float64) + start).to(dtype).reshape(shape)


def rn(*shape: int, seed: int = 0) -> torch.Tensor:
    """Seeded ``randn`` rounded to multiples of 1/16 (exact arithmetic in most ops)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).mul(16).round().div(16)


def a44() -> tuple[torch.Tensor]:
    return (ar(4, 4),)


def a34() -> tuple[torch.Tensor]:
    return (ar(3, 4),)


def a234() -> tuple[torch.Tensor]:
    return (ar(2, 3, 4),)


def a6() -> tuple[torch.Tensor]:
    return (ar(6),)


def r44() -> tuple[torch.Tensor]:
    return (rn(4, 4),)


def r44_r44() -> tuple[torch.Tensor, torch.Tensor]:
    return (rn(4, 4), rn(4, 4, seed=1))


def a34_r4() -> tuple[torch.Tensor, torch.Tensor]:
    return (ar(3, 4), rn(4, seed=2))
