"""Random programs through both ``torch.compile`` paths, each against its execution oracle.

    report = check_compiled(program_for(seed))        # every pipeline the seed gets
    report.results["hook"].status                      # "ok", "wrong", "internal", ...

Pipelines (``COMPILE_PIPELINES``):

* ``backend``: ``torch.compile(f, backend="fxinplace", options={"check": True, "memory_plan":
  True})`` against ``torch.compile(f, backend="aot_eager")``, **bitwise**: outputs (values with NaNs in the
  same places, dtypes, shapes, strides), the inputs after the call (values and layouts) and
  aliasing (which outputs share memory with which inputs and with each other);
* ``hook``: Inductor with ``fxinplace.inductor.installed(check=True)`` against Inductor with
  its re-inplacing slot doing nothing, within ``default_tolerance`` (both compiled, so
  normally bitwise), the same checks;
* ``backend@dynamic``, ``hook@dynamic``: the same with ``dynamic=True``, compiled at the
  program's first size and called again at its second (the symbolic graph is reused).

Every run gets fresh inputs from ``p.make_args(n)``, which rebuilds inputs that alias each
other (the same tensor twice, slices, transposes, dtype views) identically each time.
Attribution (``compile_oracle.judge``): a difference is fxinplace's only where the oracle
equals eager; the oracle differing from eager, or raising where eager does not, is a torch
finding. A ``hook`` failure is annotated with a note saying whether stock Inductor (its own
re-inplacing pass) fails the same way. Where the checker cannot model a graph
(``cannot_check``), the clear error is counted and the path runs again without the checker
so that its values are still compared. Programs eager rejects are skipped.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from fxinplace.testing.harness.compile_oracle import judge, needs_unchecked_run
from fxinplace.testing.harness.compile_runs import ORACLE, OURS, run_compiled
from fxinplace.testing.harness.errors import normalize_message
from fxinplace.testing.harness.on_device import default_device, on_device
from fxinplace.testing.harness.oracle import Observed, differences, observe
from fxinplace.testing.harness.pipelines import (
    INTERNAL,
    NOTE,
    SKIPPED,
    WRONG,
    Finding,
    PipelineResult,
    ProgramReport,
    _quiet_logs,
)
from fxinplace.testing.random.minimize import shrink
from fxinplace.testing.random.programs import RandomProgram, generate

__all__ = [
    "COMPILE_PIPELINES",
    "CompilePipeline",
    "check_compiled",
    "check_seed",
    "compile_failures",
    "minimized",
    "pipelines_for",
    "program_for",
]


@dataclasses.dataclass(frozen=True)
class CompilePipeline:
    name: str
    path: str  # "backend" or "hook"
    dynamic: bool = False


COMPILE_PIPELINES: tuple[CompilePipeline, ...] = (
    CompilePipeline("backend", "backend"),
    CompilePipeline("backend@dynamic", "backend", dynamic=True),
    CompilePipeline("hook", "hook"),
    CompilePipeline("hook@dynamic", "hook", dynamic=True),
)

_ORACLE_NAMES = {"backend": "aot_eager", "hook": "Inductor without re-inplacing"}


def pipelines_for(
    seed: int, paths: Sequence[str] = ("backend", "hook"), dynamic_every: dict[str, int] | None = None
) -> list[CompilePipeline]:
    """The pipelines seed ``seed`` runs: the static one of each path, and the dynamic one for
    every ``dynamic_every[path]``-th seed (default: every backend seed, every third hook seed;
    0 for none)."""
    every = {"backend": 1, "hook": 3, **(dynamic_every or {})}
    return [
        p
        for p in COMPILE_PIPELINES
        if p.path in paths and (not p.dynamic or (every[p.path] and seed % every[p.path] == 0))
    ]


def program_for(seed: int) -> RandomProgram:
    """The random program the compile paths run for ``seed``: the generator's, without lines
    eager rejects (Dynamo cannot trace an op that raises inside ``try``, and a program that
    raises is skipped)."""
    return generate(seed, reject_lines=False)


class _CompiledCheck:
    def __init__(self, program: RandomProgram, backend: Any) -> None:
        self.program = program
        self.backend = backend
        self.sizes = program.sizes
        self.eager = {n: observe(program.fn, program.make_args(n)) for n in self.sizes}
        self.recompiled = False

    def runs(
        self, compiler: str, sizes: Sequence[int], *, dynamic: bool, check: bool = True
    ) -> list[Observed]:
        """One compile of ``f``, called at each of ``sizes`` on fresh inputs (``self.recompiled``:
        whether Dynamo compiled again for a later size)."""
        make_args = self.program.make_args
        graphs = torch._dynamo.utils.counters["stats"]

        def run(compiled: Callable[..., Any]) -> list[Observed]:
            seen = [observe(compiled, make_args(sizes[0]))]
            before = graphs["unique_graphs"]
            seen += [observe(compiled, make_args(n)) for n in sizes[1:]]
            self.recompiled = graphs["unique_graphs"] != before
            return seen

        try:
            return run_compiled(
                compiler, self.program.fn, run, dynamic=dynamic, check=check, backend=self.backend
            )
        except Exception as exc:  # noqa: BLE001 - a failure outside the call (Inductor's context managers)
            return [Observed(error=exc) for _ in sizes]

    def run_pipeline(self, p: CompilePipeline) -> PipelineResult:
        result = PipelineResult()
        error = self.eager[self.sizes[0]].error
        if error is not None:
            result.findings.append(Finding(SKIPPED, "program", f"eager raises {normalize_message(error)}"))
            return result
        sizes = list(self.sizes if p.dynamic else self.sizes[:1])
        oracle = self.runs(ORACLE[p.path], sizes, dynamic=p.dynamic)
        ours = self.runs(OURS[p.path], sizes, dynamic=p.dynamic)
        if any(needs_unchecked_run(o.error) for o in ours):
            result.findings += self._judge(p, sizes, ours, oracle)  # the clear error, counted
            ours = self.runs(OURS[p.path], sizes, dynamic=p.dynamic, check=False)
            result.findings.append(Finding(NOTE, "reinplace", "compared without the checker"))
        result.findings += self._judge(p, sizes, ours, oracle)
        result.ran = any(o.error is None for o in ours)
        if p.dynamic and self.recompiled:
            result.findings.append(Finding(NOTE, "torch", "Dynamo compiled again at the second size"))
        if p.path == "hook" and any(f.kind in (WRONG, INTERNAL) for f in result.findings):
            result.findings.append(self._stock_inductor_note(p, sizes, oracle))
        return result

    def _judge(
        self, p: CompilePipeline, sizes: list[int], ours: list[Observed], oracle: list[Observed]
    ) -> list[Finding]:
        findings = []
        for n, o, w in zip(sizes, ours, oracle, strict=True):
            at = f" at n={n}" if n != self.sizes[0] else ""
            findings += judge(
                o, w, self.eager[n], exact=p.path == "backend", at=at, oracle_name=_ORACLE_NAMES[p.path]
            )
            if o.error is not None:
                break  # the later calls of a failed compile say nothing new
        return findings

    def _stock_inductor_note(self, p: CompilePipeline, sizes: list[int], oracle: list[Observed]) -> Finding:
        """Whether Inductor's own re-inplacing pass gets this program wrong too."""
        stock = self.runs("inductor-stock", sizes, dynamic=p.dynamic, check=False)
        for s, w in zip(stock, oracle, strict=True):
            if s.error is not None or w.error is not None:
                raised = normalize_message(s.error) if s.error is not None else "no error"
                return Finding(NOTE, "torch", f"stock Inductor: {raised}")
            if differences(s, w):
                return Finding(NOTE, "torch", "stock Inductor is wrong here too", str(differences(s, w)[:2]))
        return Finding(NOTE, "torch", "stock Inductor is right here")


def check_compiled(
    program: RandomProgram,
    *,
    pipelines: Sequence[CompilePipeline] | None = None,
    backend: Any = None,
) -> ProgramReport:
    """Run ``program`` through ``pipelines`` (default: ``pipelines_for(program.seed)``);
    ``backend`` replaces the fxinplace backend on the backend path (a self-check)."""
    _quiet_logs()
    started = time.perf_counter()
    check = _CompiledCheck(program, backend)
    results: dict[str, PipelineResult] = {}
    for p in pipelines if pipelines is not None else pipelines_for(program.seed):
        try:
            results[p.name] = check.run_pipeline(p)
        except Exception as exc:  # noqa: BLE001 - a harness bug must not hide the other pipelines
            finding = Finding(INTERNAL, "harness", f"harness raised {normalize_message(exc)}", repr(exc))
            results[p.name] = PipelineResult([finding])
    return ProgramReport(program.seed, results, program.features, time.perf_counter() - started)


def compile_failures(report: ProgramReport) -> list[tuple[str, Finding]]:
    """``(pipeline, finding)`` for every failure (wrong result or internal error) in ``report``."""
    return [
        (name, f)
        for name, result in report.results.items()
        for f in result.findings
        if f.kind in (WRONG, INTERNAL)
    ]


def check_seed(
    seed: int,
    *,
    paths: Sequence[str] = ("backend", "hook"),
    dynamic_every: dict[str, int] | None = None,
    backend: Any = None,
    device: str | None = None,
) -> ProgramReport:
    """``program_for(seed)`` through the pipelines ``pipelines_for`` gives it (a campaign's
    check); with ``device`` ("cuda"), its inputs moved there and its own tensors made there."""
    program = program_for(seed)  # generated on the CPU: the generator runs candidate lines
    pipelines = pipelines_for(seed, paths, dynamic_every)
    if device not in (None, "cpu") and any(
        observe(program.fn, program.make_args(n)).error for n in program.sizes
    ):
        # Skipped as on the CPU, before the device sees it: where the CPU raises (an index out
        # of range), a GPU may assert on the device, which ends the worker's CUDA context.
        skipped = Finding(SKIPPED, "program", "eager raises on the CPU: not run on the device")
        return ProgramReport(
            seed, {p.name: PipelineResult([skipped]) for p in pipelines}, program.features, 0.0
        )
    with default_device(device):
        return check_compiled(on_device(program, device), pipelines=pipelines, backend=backend)


def minimized(seed: int, pipeline_name: str, signature: str, *, backend: Any = None) -> RandomProgram:
    """Seed ``seed``'s program, shrunk while ``pipeline_name`` still reports ``signature``."""
    pipeline = next(p for p in COMPILE_PIPELINES if p.name == pipeline_name)

    def fails(program: RandomProgram) -> bool:
        report = check_compiled(program, pipelines=[pipeline], backend=backend)
        return any(f.signature == signature for f in report.results[pipeline.name].findings)

    return shrink(program_for(seed), fails)
