"""Random programs the stock implementations get right, for comparing with their exact output.

    p = generate(seed)
    p.fn(*p.make_args())          # inputs at the program's first size

The programs of ``fxinplace.testing.random.programs`` (without lines eager rejects) that
``torch.func.functionalize`` runs as eager does in both ``remove`` modes and that ``make_fx``
traces through it: the input the stock re-inplacing pass takes. Tests that hold fxinplace to
the stock pass's exact code (``reinplace_differential.check_program``) or to
``torch.func.functionalize``'s behaviour draw from here; the pipelines
(``fxinplace.testing.harness.pipelines``) take every program, with eager as the oracle.

For seed ``s`` the program is the first of ``programs.generate(s + k * STRIDE)``,
k = 0, 1, ..., that qualifies (about 2 programs in 3 do; the others use custom ops, ops
functionalization cannot express, or expose a stock bug, which the pipelines report).
Deterministic: a seed always gives the same program.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from fxinplace.testing.harness.oracle import observe, value_difference
from fxinplace.testing.random.programs import RandomProgram
from fxinplace.testing.random.programs import generate as generate_any

__all__ = ["StockProgram", "generate"]

STRIDE = 1_000_003  # between the generator seeds tried for one seed (a prime: no overlap)
_MAX_ATTEMPTS = 32


@dataclass(frozen=True)
class StockProgram:
    """A program at its first size: ``make_args()`` gives fresh inputs on every call."""

    seed: int
    program: RandomProgram  # where it came from (its own seed: seed + k * STRIDE)

    @property
    def source(self) -> str:
        return self.program.source

    @property
    def features(self) -> frozenset[str]:
        return self.program.features

    @property
    def fn(self) -> Callable[..., object]:
        return self.program.fn

    @property
    def make_args(self) -> Callable[[], tuple]:
        return functools.partial(self.program.make_args, self.program.sizes[0])


def generate(seed: int, *, max_stmts: int = 10) -> StockProgram:
    """The program for ``seed`` (see the module docstring)."""
    for attempt in range(_MAX_ATTEMPTS):
        drawn = generate_any(seed + attempt * STRIDE, max_stmts=max_stmts, reject_lines=False)
        program = StockProgram(seed, drawn)
        if stock_agrees_with_eager(program.fn, program.make_args):
            return program
    raise RuntimeError(f"stock_programs: no program for seed {seed} in {_MAX_ATTEMPTS} attempts")


def stock_agrees_with_eager(fn: Callable[..., object], make_args: Callable[[], tuple]) -> bool:
    """``torch.func.functionalize(fn)`` gives eager's outputs and input post-state in both
    ``remove`` modes, and ``make_fx`` traces it into a graph that does too."""
    eager = observe(fn, make_args())
    if eager.error is not None:
        return False
    runs = [torch.func.functionalize(fn, remove=remove) for remove in ("mutations", "mutations_and_views")]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runs.append(make_fx(torch.func.functionalize(fn))(*make_args()))
    except Exception:  # noqa: BLE001 - a program make_fx cannot trace is not one of these
        return False
    for run in runs:
        got = observe(run, make_args())
        if got.error is not None or got.spec != eager.spec:
            return False
        pairs = [
            *zip(got.outs, eager.outs, strict=True),
            *zip(got.args_after, eager.args_after, strict=True),
            # (memory an input does not show: a shrinking out= leaves writes there that
            # torch.func.functionalize drops)
            *(
                (a, b)
                for a, b in zip(got.storages_after, eager.storages_after, strict=True)
                if a is not None and b is not None
            ),
        ]
        if any(value_difference(a, b) is not None for a, b in pairs):
            return False
    return True
