"""Differential tests of ``fxinplace.functionalize`` on randomly generated programs.

Each seed is a program from ``fxinplace.testing.random.stock_programs.generate`` (the independent
generator's programs on which ``torch.func.functionalize`` already agrees with eager: views and
in-place ops on views, bases, intermediates and inputs, inputs aliasing each other, all dtypes,
aliased returns), checked in both ``remove`` modes by
``functionalize_differential.check_functionalize``; the stock oracle is not re-run here.

``FXINPLACE_FUNCTIONALIZE_GEN_COUNT`` sets the number of seeds (default 60);
``FXINPLACE_FUNCTIONALIZE_IMPL=stock`` tests ``torch.func.functionalize`` instead.
"""

from __future__ import annotations

import functools
import os

import pytest

from fxinplace.testing.harness import functionalize_differential as differential
from fxinplace.testing.random.stock_programs import StockProgram, generate

GEN_COUNT = int(os.environ.get("FXINPLACE_FUNCTIONALIZE_GEN_COUNT", "60"))


@functools.cache
def _program(seed: int) -> StockProgram:
    return generate(seed)


@pytest.mark.parametrize("remove", differential.REMOVE_MODES)
@pytest.mark.parametrize("seed", range(GEN_COUNT))
def test_functionalize_random_program(seed: int, remove: str) -> None:
    program = _program(seed)
    refusal = _documented_refusal(program, remove)
    if refusal is not None:
        pytest.skip(f"a refusal the README lists: {refusal}")
    case = differential.FunctionalizeCase(f"gen_seed_{seed}", program.fn, program.make_args)
    # torch.func.functionalize leaves aten::matmul's internal view/expand nodes in
    # remove="mutations_and_views" graphs (a known stock limitation, see the corpus case
    # matmul_batched_views); the generators emit batched matmuls, so tolerate exactly
    # those when validating the harness with the stock implementation.
    problems = differential.check_functionalize(
        case,
        differential.IMPL,
        remove,
        check_stock=False,
        tolerate_matmul_views=differential.IMPL_NAME == "stock",
    )
    assert not problems, differential.format_problems(
        case, remove, problems, extra=f"---- program (seed {seed}) ----\n{program.source}"
    )


def _documented_refusal(program: StockProgram, remove: str) -> str | None:
    """The clear error fxinplace.functionalize raises where functionalization cannot express
    the program (README, "fxinplace.functionalize raises a RuntimeError naming fxinplace"):
    a RuntimeError whose message starts with the implementation's name. The pipelines count
    these as clear errors too; any other exception is the harness's to report."""
    if differential.IMPL_NAME == "stock":
        return None
    try:
        differential.IMPL(program.fn, remove=remove)(*program.make_args())
    except RuntimeError as exc:
        if str(exc).startswith("fxinplace.functionalize"):
            return str(exc).splitlines()[0]
    return None
