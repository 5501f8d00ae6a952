"""Stock-conformance tests: ``fxinplace.reinplace`` vs ``torch.fx.passes.reinplace``.

For every program in ``corpus.PROGRAMS`` the native pass must agree with eager
(outputs, input post-state, no new input/output or output/output aliasing) and,
wherever the stock pass is sound, generate exactly the stock pass's ``gm.code``.
"""

from __future__ import annotations

import pytest
from corpus import PROGRAMS, Program
from differential import assert_ok, check_program, structure

import fxinplace

# The pass under test. Swap for torch.fx.passes.reinplace.reinplace to self-check
# the corpus and harness against the stock pass.
NATIVE = fxinplace.reinplace


def test_corpus_is_well_formed() -> None:
    names = [p.name for p in PROGRAMS]
    assert len(names) >= 60
    assert len(names) == len(set(names)), "duplicate program names"


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_conformance(program: Program) -> None:
    outcome = check_program(
        program.fn,
        program.make_args,
        name=program.name,
        require_stock_match=program.require_stock_match,
        native=NATIVE,
        tracing_mode=program.tracing_mode,
        make_trace_args=program.make_trace_args,
    )
    assert_ok(outcome)

    # Corpus integrity: programs not marked as stock-unsound must be stock-sound,
    # otherwise the code comparison would be skipped silently.
    if program.require_stock_match:
        assert outcome.stock_sound, (
            f"{program.name}: stock pass is unsound here but the program is not marked "
            "require_stock_match=False:\n" + "\n".join(outcome.stock_problems)
        )

    if program.expect is not None and outcome.stock_sound:
        assert outcome.gm_native is not None
        counts = structure(outcome.gm_native)
        wrong = {
            op: (counts.get(op, 0), want) for op, want in program.expect.items() if counts.get(op, 0) != want
        }
        assert not wrong, f"{program.name}: op counts (got, expected) {wrong}\n{outcome.native_code}"
