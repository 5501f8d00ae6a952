"""The harness's test of a symbolic trace's validity at the second size
(``fxinplace.testing.harness.shape_guards``): a trace that specialized is excused there, and
one that did not is held to eager."""

from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace.testing.harness.broken_passes import functionalize_baking_the_trace_size
from fxinplace.testing.harness.pipelines import PIPELINES, WRONG, check_program
from fxinplace.testing.harness.shape_guards import guards_hold
from fxinplace.testing.random.programs import generate


def _args(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n + 2)[1:-1], torch.randn(n, n).t()


def _unbinds(x0: torch.Tensor, x1: torch.Tensor) -> tuple[torch.Tensor]:
    x0[1].copy_(x1.unbind(1)[-1][-3])
    return (x0 * 2,)


def _sums(x0: torch.Tensor, x1: torch.Tensor) -> tuple[torch.Tensor]:
    x0.add_(x1.sum(1))
    return (x0 * 2,)


def test_a_trace_that_specialized_holds_only_at_its_size() -> None:
    # unbind over a symbolic dimension pins it (Eq(s, 7)): valid at 7 only.
    gm = make_fx(fxinplace.functionalize(_unbinds), tracing_mode="symbolic")(*_args(7))
    assert guards_hold(gm, _args(7)) is True
    assert guards_hold(gm, _args(11)) is False


def test_a_trace_that_kept_its_symbols_holds_at_another_size() -> None:
    gm = make_fx(fxinplace.functionalize(_sums), tracing_mode="symbolic")(*_args(7))
    assert guards_hold(gm, _args(11)) is True
    # Sizes that contradict each other (x0 of 7, x1 of 11) break the guard x0.size == x1.size.
    assert guards_hold(gm, (torch.randn(7), torch.randn(11, 11))) is False


def test_a_real_trace_cannot_tell() -> None:
    gm = make_fx(fxinplace.functionalize(_sums))(*_args(7))
    assert guards_hold(gm, _args(11)) is None


def test_the_harness_holds_an_unspecialized_trace_to_eager_at_the_second_size() -> None:
    # A functionalization that bakes the trace size into its outputs without a guard is right
    # at the trace size and wrong at the second: wrong, not excused as a specialization.
    symbolic = [p for p in PIPELINES if p.name == "fxf@sym"]
    reports = [
        check_program(generate(s), pipelines=symbolic, functionalize=functionalize_baking_the_trace_size)
        for s in range(4, 10)
    ]
    wrong_at_second_size = [
        rep.seed
        for rep in reports
        if any(
            f.kind == WRONG and f.half == "functionalize" and "n=" in f.signature
            for f in rep.results["fxf@sym"].findings
        )
    ]
    assert len(wrong_at_second_size) >= 3, [rep.results["fxf@sym"].findings for rep in reports]
