"""Differential tests on randomly generated programs.

Each seed is a small program from ``fxinplace.testing.program_gen`` (views,
in-place ops on views/bases/intermediates/inputs, aliased returns). The native
pass must agree with eager and, where the stock pass is sound, emit the stock
pass's exact ``gm.code`` (see ``differential.check_program``).

``FXINPLACE_GEN_COUNT`` sets how many seeds run (default 200). For many more
seeds without pytest, use ``benchmarks/run_random_programs.py``.
"""

from __future__ import annotations

import os

import pytest

import fxinplace
from fxinplace.testing.program_gen import generate
from fxinplace.testing.reinplace_differential import assert_ok, check_program

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
