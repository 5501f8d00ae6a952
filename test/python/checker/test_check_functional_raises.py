"""A functional graph that raises on the sample args (make_fx keeps an op that raised
inside a try/except of the traced program) leaves the checker nothing to check
against: `reinplace(..., check=True)` says so with a clear error naming the node,
and the random-pipeline harness counts that as clear, not as an internal error."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace.testing.harness.pipelines import CLEAR, INTERNAL, PIPELINES, check_program
from fxinplace.testing.random.programs import RandomProgram


def _index_past_the_end(x):
    t = x * 2
    try:
        t.index_put_((torch.tensor([50]),), torch.tensor(1.0))  # recorded, then raises
    except IndexError:
        pass
    return t + 1


def test_a_functional_graph_that_raises_is_a_clear_error_naming_the_node():
    x = torch.randn(4)
    gm = make_fx(torch.func.functionalize(_index_past_the_end))(x)
    with pytest.raises(fxinplace.FunctionalGraphRaisedError) as info:
        fxinplace.reinplace(gm, x, check=True)
    error = info.value
    assert isinstance(error, RuntimeError) and isinstance(error, fxinplace.ReinplaceCheckError)
    assert error.cannot_check and error.reason == "functional_raised" and error.node == "index_put"
    assert str(error).startswith(
        "fxinplace: cannot check the rewritten graph: the functional graph's node index_put "
        "(aten.index_put.default) raised when run on the sample args: IndexError: index 50 is out of bounds"
    )
    assert isinstance(error.__cause__, IndexError)


_PROGRAM = RandomProgram(
    seed=0,
    make_args_source="def make_args(n):\n    return (torch.arange(float(n)),)\n",
    inputs=("x0",),
    body=(
        "t0 = x0 * 2",
        "try:\n    t0.index_put_((torch.tensor([50]),), torch.tensor(1.0))\nexcept IndexError:\n    pass",
    ),
    returns=("t0 + 1",),
)
_FUNC = [p for p in PIPELINES if p.name == "func"]


def test_the_harness_counts_it_clear():
    findings = check_program(_PROGRAM, pipelines=_FUNC).results["func"].findings
    refused = [f for f in findings if f.half == "reinplace"]
    assert [f.kind for f in refused] == [CLEAR], findings
    assert "FunctionalGraphRaisedError" in refused[0].signature


def test_the_harness_counts_it_internal_when_the_graph_runs_fine():
    def refuses(gm, *args, check=False):
        raise fxinplace.FunctionalGraphRaisedError("fxinplace: cannot check the rewritten graph: ...")

    clean = dataclasses.replace(_PROGRAM, body=_PROGRAM.body[:1])
    findings = check_program(clean, pipelines=_FUNC, reinplace=refuses).results["func"].findings
    assert [f.kind for f in findings if f.half == "reinplace"] == [INTERNAL], findings
