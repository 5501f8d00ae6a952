"""Stock-conformance tests: ``fxinplace.reinplace`` vs ``torch.fx.passes.reinplace``.

For every program of the corpus (``corpus/reinplace/``) the native pass must agree with
eager (outputs, input post-state, no new input/output or output/output aliasing) and,
wherever the stock pass is sound, generate exactly the stock pass's ``gm.code``
(``fxinplace.testing.harness.reinplace_differential``). The harness itself must flag broken
passes.
"""

from __future__ import annotations

import pytest
import torch
from corpus.reinplace import PROGRAMS, Program

import fxinplace
from fxinplace.testing.harness.broken_passes import inplace_first_candidate
from fxinplace.testing.harness.reinplace_differential import assert_ok, check_case, expectation_problems

# The pass under test. Swap for torch.fx.passes.reinplace.reinplace to self-check
# the corpus and harness against the stock pass (or run `python -m corpus.reinplace`).
NATIVE = fxinplace.reinplace


def test_corpus_is_well_formed() -> None:
    names = [p.name for p in PROGRAMS]
    assert len(names) >= 60
    assert len(names) == len(set(names)), "duplicate program names"


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_conformance(program: Program) -> None:
    outcome = check_case(program, native=NATIVE)
    assert_ok(outcome)
    # Corpus integrity: a program not marked stock-unsound is stock-sound (else the code
    # comparison would be skipped silently), and its op counts are those it expects.
    problems = expectation_problems(program, outcome)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- the harness


def _program(name: str) -> Program:
    return next(p for p in PROGRAMS if p.name == name)


def _drops_clones(gm: torch.fx.GraphModule, *sample_args) -> torch.fx.GraphModule:
    """Broken: replaces every clone by its input (right values, wrong aliasing)."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is torch.ops.aten.clone.default:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


def _does_nothing(gm: torch.fx.GraphModule, *sample_args) -> torch.fx.GraphModule:
    """Sound but not the stock pass: reinplaces nothing."""
    return gm


@pytest.mark.parametrize(
    ("native", "name", "expected"),
    [
        (inplace_first_candidate, "binary_intermediates", "input post-state value: input[0]"),
        (_drops_clones, "outputs_clone_of_input", "output/input aliasing: output[0]"),
        (_does_nothing, "pointwise_chain", "native gm.code differs from stock gm.code"),
    ],
)
def test_harness_flags_broken_pass(native, name: str, expected: str) -> None:
    outcome = check_case(_program(name), native=native)
    assert not outcome.ok
    assert any(expected in p for p in outcome.problems), "\n".join(outcome.problems) or "<no problems>"
