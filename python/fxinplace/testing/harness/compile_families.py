"""Two families of real training code through both compile paths: ``torch.optim`` steps with
``foreach=True`` and activation checkpointing.

The random generator writes straight-line tensor programs; real training code reaches the
compilers in other forms that broke them (issue 15): an optimizer step is a chain of
``_foreach_*`` ops over parameter and state lists, written back into every list
(``torch.compile(opt.step)``), and ``torch.utils.checkpoint`` around dropout or
``scaled_dot_product_attention`` puts RNG-state higher-order ops in the graphs. Each case
builds the same state afresh for every run, so eager, the oracle and ours start equal.

* ``OPTIMIZERS``: a few parameters with seeded gradients, ``STEPS`` compiled steps; observed
  are the parameters and every state tensor after each step. On the hook path, one more
  step is measured (``fxinplace.testing.harness.memory``): the hook must not allocate more bytes
  per step than stock Inductor.
* ``CHECKPOINTS``: ``checkpoint(fn, x, use_reentrant=False)`` trained one step (forward,
  backward); observed are the output and every gradient.

Attribution as for random programs (``compile_oracle.judge``): the backend must equal
``aot_eager`` bitwise, the hook Inductor with a no-op re-inplacing slot; both oracles are
compared with eager.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from fxinplace.testing.harness.compile_oracle import judge
from fxinplace.testing.harness.compile_runs import ORACLE, OURS, run_compiled
from fxinplace.testing.harness.memory import MemoryStats, measure
from fxinplace.testing.harness.oracle import Observed, observe
from fxinplace.testing.harness.pipelines import INTERNAL, NOTE, WRONG, Finding, PipelineResult, ProgramReport

__all__ = [
    "CHECKPOINTS",
    "FAMILY_PIPELINES",
    "OPTIMIZERS",
    "Built",
    "Case",
    "check_case",
    "check_family_case",
]

STEPS = 3
_SHAPES = ((8, 4), (4,), (3, 3))


@dataclasses.dataclass(frozen=True)
class Built:
    """One fresh copy of a case's state: what to compile, how to run it (returning the
    tensors to compare), and what to do before one more measured call (optimizers: new
    gradients)."""

    target: Callable[..., Any]
    run: Callable[[Callable[..., Any]], list[torch.Tensor]]
    before_measured_call: Callable[[], None] = lambda: None


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    family: str  # "optim" or "ckpt"
    make: Callable[[], Built]


def _optimizer(kind: str, **options: Any) -> Callable[[], Built]:
    def make() -> Built:
        g = torch.Generator().manual_seed(0)
        params = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in _SHAPES]
        opt = getattr(torch.optim, kind)(params, foreach=True, **options)
        calls = [0]

        def set_grads() -> None:
            grads = torch.Generator().manual_seed(100 + calls[0])
            calls[0] += 1
            for p in params:
                p.grad = torch.randn(p.shape, generator=grads)

        def run(step: Callable[..., Any]) -> list[torch.Tensor]:
            seen = []
            for _ in range(STEPS):
                set_grads()
                step()
                seen += [p.detach().clone() for p in params]
                for p in params:
                    seen += [
                        v.detach().clone() for _, v in sorted(opt.state[p].items()) if torch.is_tensor(v)
                    ]
            return seen

        return Built(opt.step, run, set_grads)

    return make


OPTIMIZERS: tuple[Case, ...] = tuple(
    Case(name, "optim", _optimizer(kind, **options))
    for name, kind, options in (
        ("Adam", "Adam", {"lr": 0.01}),
        ("Adam(amsgrad)", "Adam", {"lr": 0.01, "amsgrad": True}),
        ("AdamW", "AdamW", {"lr": 0.01}),
        ("AdamW(amsgrad)", "AdamW", {"lr": 0.01, "amsgrad": True}),
        ("SGD(momentum)", "SGD", {"lr": 0.1, "momentum": 0.9}),
        ("SGD(nesterov)", "SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
        ("RAdam", "RAdam", {"lr": 0.01}),
        ("NAdam", "NAdam", {"lr": 0.01}),
        ("Adagrad", "Adagrad", {"lr": 0.1}),
        ("RMSprop", "RMSprop", {"lr": 0.01, "momentum": 0.5}),
        ("Adamax", "Adamax", {"lr": 0.01}),
        ("ASGD", "ASGD", {"lr": 0.01}),
        ("Rprop", "Rprop", {"lr": 0.01}),
    )
)


def _checkpointed(body: str) -> Callable[[], Built]:
    def make() -> Built:
        g = torch.Generator().manual_seed(0)
        lin = torch.nn.Linear(8, 24)
        with torch.no_grad():
            for p in lin.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
        x = torch.randn(2, 5, 8, generator=g)

        def fn(y: torch.Tensor) -> torch.Tensor:
            h = lin(y)
            if body == "dropout":
                return F.dropout(h.relu(), 0.3, training=True) * 2
            q, k, v = h.view(2, 5, 3, 8).unbind(2)
            q, k, v = q[:, None], k[:, None], v[:, None]
            if body == "sdpa":
                return F.scaled_dot_product_attention(q, k, v, dropout_p=0.2)
            if body == "sdpa(causal)":
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return F.dropout(F.scaled_dot_product_attention(q, k, v, dropout_p=0.2), 0.1, training=True)

        def target(y: torch.Tensor) -> torch.Tensor:
            return torch.utils.checkpoint.checkpoint(fn, y, use_reentrant=False)

        def run(compiled: Callable[..., Any]) -> list[torch.Tensor]:
            torch.manual_seed(123)  # the same dropout masks in every run
            y = x.clone().requires_grad_(True)
            out = compiled(y)
            out.square().sum().backward()
            return [out.detach(), y.grad, *(p.grad for p in lin.parameters())]

        return Built(target, run)

    return make


CHECKPOINTS: tuple[Case, ...] = tuple(
    Case(f"checkpoint({body})", "ckpt", _checkpointed(body))
    for body in ("dropout", "sdpa", "sdpa(causal)", "sdpa+dropout")
)

#: Pipeline names of the families' reports, per path.
FAMILY_PIPELINES = {
    (family, path): f"{family}:{path}" for family in ("optim", "ckpt") for path in ("backend", "hook")
}
_ORACLE_NAMES = {"backend": "aot_eager", "hook": "Inductor without re-inplacing"}


def _observed_run(
    compiler: str, case: Case, *, check: bool = True, memory: bool = False, backend: Any = None
) -> tuple[Observed, MemoryStats | None]:
    built = case.make()
    stats: list[MemoryStats] = []

    def go(compiled: Callable[..., Any]) -> Observed:
        seen = observe(lambda: built.run(compiled), [])
        if memory and seen.error is None:
            built.before_measured_call()
            stats.append(measure(compiled)[0])
        return seen

    try:
        seen = run_compiled(compiler, built.target, go, check=check, backend=backend)
    except Exception as exc:  # noqa: BLE001 - recorded like an error of the call
        seen = Observed(error=exc)
    return seen, (stats[0] if stats else None)


def _memory_findings(case: Case, hook: MemoryStats | None) -> list[Finding]:
    """The hook's step must allocate no more bytes than stock Inductor's (same program)."""
    if hook is None:
        return []
    _, stock = _observed_run("inductor-stock", case, check=False, memory=True)
    if stock is None:
        return [Finding(NOTE, "torch", "stock Inductor did not run the step")]
    if hook.allocated_bytes > stock.allocated_bytes:
        detail = f"hook {hook}, stock {stock}"
        signature = f"{case.name}: the hook allocates more per step than stock Inductor"
        return [Finding(WRONG, "reinplace", signature, detail)]
    return []


def check_case(case: Case, path: str, *, backend: Any = None) -> PipelineResult:
    """``case`` through ``path`` (``"backend"`` or ``"hook"``) against its oracle and eager."""
    result = PipelineResult()
    try:
        eager, _ = _observed_run("eager", case)
        oracle, _ = _observed_run(ORACLE[path], case)
        memory = case.family == "optim" and path == "hook"
        ours, stats = _observed_run(OURS[path], case, memory=memory, backend=backend)
        found = judge(ours, oracle, eager, exact=path == "backend", oracle_name=_ORACLE_NAMES[path])
        result.findings += [dataclasses.replace(f, signature=f"{case.name}: {f.signature}") for f in found]
        result.ran = ours.error is None
        if memory and ours.error is None:
            result.findings += _memory_findings(case, stats)
    except Exception as exc:  # noqa: BLE001 - a harness bug must not hide the other cases
        result.findings.append(Finding(INTERNAL, "harness", f"{case.name}: harness raised {exc!r}"[:160]))
    return result


def check_family_case(index: int, cases: tuple[Case, ...], paths: tuple[str, ...]) -> ProgramReport:
    """``cases[index]`` through each of ``paths``, as a report like a random program's."""
    started = time.perf_counter()
    case = cases[index]
    results = {FAMILY_PIPELINES[case.family, path]: check_case(case, path) for path in paths}
    return ProgramReport(index, results, frozenset({case.name}), time.perf_counter() - started)
