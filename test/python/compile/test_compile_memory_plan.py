"""torch.compile with the memory plan: make_backend(memory_plan=True) (issue 18).

Oracle: the same AOTAutograd graphs re-inplaced without the plan (``memory_plan=False``),
bitwise: a result written through an `out=` kernel is computed by the functional op's own
kernel. Every planned graph is proven by the checker (``check=True``), donated backward
inputs included. Structure: the backward reuses the buffers of donated saved activations
once they are dead, and a backward that keeps its graph (``retain_graph=True``) gets none.
"""

from __future__ import annotations

import logging

import pytest
import torch

import fxinplace.compile as fx_compile
from fxinplace.testing.harness.compile_programs import program

PLANNED = fx_compile.make_backend(memory_plan=True, check=True, explain=True)
UNPLANNED = fx_compile.make_backend()


def _steps(name, backend, *, dynamic=None, n=2):
    torch._dynamo.reset()
    s = program(name).setup()
    fn = torch.compile(s.target, backend=backend, dynamic=dynamic)
    return [s.step(fn) for _ in range(n)]


def _equal(want, got):
    for step, (w, g) in enumerate(zip(want, got, strict=True)):
        assert w.keys() == g.keys()
        for k in w:
            assert torch.equal(w[k], g[k]), f"step {step} {k} differs from the unplanned graphs"


@pytest.mark.parametrize("name", ["gpt2_train", "llama_infer", "batchnorm_train", "adamw_foreach"])
def test_planned_programs_are_bitwise_equal_to_unplanned_ones(name, caplog):
    with caplog.at_level(logging.INFO, logger="fxinplace.compile"):
        got = _steps(name, PLANNED)
    _equal(_steps(name, UNPLANNED), got)
    if name in ("gpt2_train", "llama_infer"):
        assert "memory: reuses the buffer of" in caplog.text


def test_only_outputs_the_runtime_keeps_to_itself_are_views_of_dead_buffers(monkeypatch):
    """A forward's saved activations (AOTAutograd detaches them when they are views) and a
    backward's gradients may be returned as `as_strided` views of a dead buffer of another
    layout; the outputs the caller's code gets never are. (The values are checked above:
    gpt2_train planned, with check=True, is bitwise equal to the unplanned graphs.)"""
    seen = []
    report_of = fx_compile.reinplace_report

    def spy(gm, *args, **kwargs):
        report = report_of(gm, *args, **kwargs)
        returned = next(iter(reversed(gm.graph.nodes))).args[0]
        restrided = {
            line.split(":")[0] for line in report.explain().splitlines() if line.endswith("(as_strided)")
        }
        internal = set(kwargs["internal_outputs"])
        for k, value in enumerate(returned):
            if isinstance(value, torch.fx.Node) and value.name in restrided:
                seen.append((k in internal, value.name))
        return report

    monkeypatch.setattr(fx_compile, "reinplace_report", spy)
    _steps("gpt2_train", fx_compile.make_backend(memory_plan=True))
    assert seen, "no saved activation or gradient took a dead buffer of another layout"
    assert all(internal for internal, _ in seen), seen


def test_planned_dynamic_shapes_are_bitwise_equal_to_unplanned_ones():
    _equal(_steps("llama_train", UNPLANNED, dynamic=True), _steps("llama_train", PLANNED, dynamic=True))


class _MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
        self.c = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.c(torch.tanh(self.b(torch.tanh(self.a(x))))).sum()


def _grads(backend, *, retain_graph=False):
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = _MLP()
    x = torch.randn(4, 8)
    compiled = torch.compile(m, backend=backend)
    loss = compiled(x)
    loss.backward(retain_graph=retain_graph)
    if retain_graph:
        loss.backward()  # the saved activations are read a second time
    return [p.grad.clone() for p in m.parameters()]


def test_the_backward_reuses_donated_saved_activations(caplog):
    with caplog.at_level(logging.INFO, logger="fxinplace.compile"):
        got = _grads(PLANNED)
    backward = caplog.text[caplog.text.index("backward graph") :]
    # tanh's saved outputs are donated: tanh_backward and mm results go into them.
    assert "memory: reuses the buffer of tanh" in backward, backward
    for w, g in zip(_grads(UNPLANNED), got, strict=True):
        assert torch.equal(w, g)


def test_a_backward_that_keeps_its_graph_reuses_no_saved_activation(caplog):
    with caplog.at_level(logging.INFO, logger="fxinplace.compile"):
        got = _grads(PLANNED, retain_graph=True)
    backward = caplog.text[caplog.text.index("backward graph") :]
    assert "memory: reuses the buffer of tanh" not in backward, backward
    for w, g in zip(_grads(UNPLANNED, retain_graph=True), got, strict=True):
        assert torch.equal(w, g)


def test_memory_plan_needs_the_compile_policy():
    with pytest.raises(ValueError, match="fxinplace.compile: memory_plan=True needs policy='compile'"):
        fx_compile.make_backend(memory_plan=True, policy="stock")
