"""Differential tests on randomly generated programs, against the stock pass's exact code.

Each seed is a program from ``fxinplace.testing.random.stock_programs`` (the independent generator's
programs that ``torch.func.functionalize`` and ``make_fx`` already get right: all dtypes, odd
layouts, inputs aliasing each other, view chains, writes through views, ``_foreach_*`` lists).
The native pass must agree with eager and, where the stock pass is sound, emit the stock
pass's exact ``gm.code`` unless the difference is explained (see
``reinplace_differential.explain_divergence``).

``FXINPLACE_GEN_COUNT`` sets how many seeds run (default 200). For many more
seeds without pytest, use ``benchmarks/run_random_programs.py``.
"""

from __future__ import annotations

import os

import pytest

import fxinplace
from fxinplace.testing.harness.reinplace_differential import assert_ok, check_program
from fxinplace.testing.random.stock_programs import generate

GEN_COUNT = int(os.environ.get("FXINPLACE_GEN_COUNT", "200"))


@pytest.mark.parametrize("seed", range(GEN_COUNT))
def test_random_program(seed: int) -> None:
    program = generate(seed)
    try:
        outcome = check_program(
            program.fn,
            program.make_args,
            name=f"seed {seed}",
            native=fxinplace.reinplace,
        )
        assert_ok(outcome)
    except Exception as exc:
        raise AssertionError(f"{exc}\n---- program (seed {seed}) ----\n{program.source}") from exc
