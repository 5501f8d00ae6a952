"""Every random program through every pipeline, each compared with its oracle.

Pipelines (``PIPELINES``):

* ``func``, ``func+dce``: ``make_fx(torch.func.functionalize(f))`` then ``fxinplace.reinplace``,
  the second after ``eliminate_dead_code()``;
* ``fxf``, ``fxf+dce``, ``fxf-views``: the same with ``fxinplace.functionalize`` (``fxf-views``:
  ``remove="mutations_and_views"``);
* ``...@sym``: each of those traced with ``tracing_mode="symbolic"`` at the first size,
  re-inplaced with the sample args of that size, and run at both sizes;
* ``fxf-eager``, ``fxf-eager-views``: ``fxinplace.functionalize(f)(*args)`` run eagerly;
* ``...:compile``, ``...:inductor`` (of ``func``, ``fxf`` and ``fxf@sym``): the same graphs
  re-inplaced with ``policy="compile"`` (the torch.compile backend's) and
  ``policy="inductor"`` (the Inductor hook's), also with ``check=True``. An Inductor-policy
  graph states what its auto_functionalized nodes clone in Inductor's node meta; it runs
  with that moved into the nodes' own arguments (``with_clones_in_kwargs``), as the
  checker models it.

Oracles. Eager ``f`` (outputs, dtypes, shapes, defined strides, input post-state,
eager's errors) is the oracle of a functional graph and of ``fxf-eager``; the
un-reinplaced functional graph is the oracle of the re-inplaced one (values, strides,
input post-state, and exactly the same output/input and output/output aliasing).
Attribution:

* re-inplaced graph != functional graph, or the pass raised: the **reinplace** half;
* ``fxinplace.functionalize`` graph or eager run != eager (or raising where eager does
  not, or not raising where eager does): the **functionalize** half;
* ``torch.func.functionalize`` graph != eager: a torch limitation (reported, not a failure;
  re-inplacing is then still checked against that graph);
* a symbolic trace whose shape guards fail at the second size (it specialized,
  ``shape_guards.guards_hold``) is run at the trace size only: a note. Where its guards hold,
  the functional graph must match eager at the second size and the re-inplaced graph it.

Exceptions from fxinplace count as clear, documented errors when they are
``fxinplace.ReinplaceInputError``, a ``RuntimeError`` naming fxinplace, or the checker's
``ReinplaceCheckError`` with ``cannot_check`` (a rewrite it does not model); any other
exception from fxinplace is an internal error. ``reinplace(..., check=True)`` raising
``fxinplace.FunctionalGraphRaisedError`` (the functional graph raises on the sample args, so
there is nothing to check against) is clear where the functional graph raised in the
harness's own run too, and internal where it did not.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import logging
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace._reinplace.inductor_policy import with_clones_in_kwargs
from fxinplace.testing.harness.errors import message, normalize_message
from fxinplace.testing.harness.oracle import Observed, differences, format_exc, observe
from fxinplace.testing.harness.shape_guards import guards_hold
from fxinplace.testing.harness.worker_pool import note_stage
from fxinplace.testing.random.programs import RandomProgram

__all__ = [
    "EAGER_CHECKS",
    "PIPELINES",
    "Finding",
    "Pipeline",
    "PipelineResult",
    "ProgramReport",
    "TORCH_STAGES",
    "call_reinplace",
    "check_program",
    "copy_graph_module",
]

# Status of one program in one pipeline, worst first. SKIPPED: the pipeline cannot run the
# program at all (the compile paths: eager raises, or Dynamo cannot compile it either way).
WRONG, INTERNAL, CLEAR, LIMITATION, SKIPPED, OK = "wrong", "internal", "clear", "limitation", "skipped", "ok"
_RANK = {WRONG: 0, INTERNAL: 1, CLEAR: 2, LIMITATION: 3, SKIPPED: 4, OK: 5}
NOTE = "note"  # a finding that does not change the status


@dataclasses.dataclass(frozen=True)
class Pipeline:
    name: str
    functionalizer: str  # "torch.func" or "fxinplace" ("none": make_fx of the program itself, an oracle)
    remove: str = "mutations"
    tracing: str = "real"
    dce: bool = False
    eager: bool = False  # run fxinplace.functionalize(f) eagerly instead of tracing
    policy: str = "stock"  # fxinplace.reinplace(..., policy=)


def _graph_pipelines() -> list[Pipeline]:
    out = []
    for tracing, suffix in (("real", ""), ("symbolic", "@sym")):
        out += [
            Pipeline(f"func{suffix}", "torch.func", tracing=tracing),
            Pipeline(f"func+dce{suffix}", "torch.func", tracing=tracing, dce=True),
            Pipeline(f"fxf{suffix}", "fxinplace", tracing=tracing),
            Pipeline(f"fxf+dce{suffix}", "fxinplace", tracing=tracing, dce=True),
            Pipeline(f"fxf-views{suffix}", "fxinplace", "mutations_and_views", tracing=tracing),
        ]
    for policy in ("compile", "inductor"):
        out += [
            Pipeline(f"func:{policy}", "torch.func", policy=policy),
            Pipeline(f"fxf:{policy}", "fxinplace", policy=policy),
            Pipeline(f"fxf@sym:{policy}", "fxinplace", tracing="symbolic", policy=policy),
        ]
    return out


EAGER_CHECKS: tuple[Pipeline, ...] = (
    Pipeline("fxf-eager", "fxinplace", eager=True),
    Pipeline("fxf-eager-views", "fxinplace", "mutations_and_views", eager=True),
)
PIPELINES: tuple[Pipeline, ...] = (*EAGER_CHECKS, *_graph_pipelines())


@dataclasses.dataclass
class Finding:
    kind: str  # WRONG, INTERNAL, CLEAR, LIMITATION or NOTE
    half: str  # "reinplace", "functionalize" or "torch"
    signature: str  # short and stable: what groups failures
    detail: str = ""


@dataclasses.dataclass
class PipelineResult:
    findings: list[Finding] = dataclasses.field(default_factory=list)
    ran: bool = False  # got a re-inplaced graph (or an eager result) to compare
    expected_error: bool = False  # eager raised and so did this pipeline

    @property
    def status(self) -> str:
        kinds = [f.kind for f in self.findings if f.kind != NOTE]
        return min(kinds, key=_RANK.__getitem__) if kinds else OK


@dataclasses.dataclass
class ProgramReport:
    seed: int
    results: dict[str, PipelineResult]
    features: frozenset[str]
    seconds: float = 0.0


# --------------------------------------------------------------------------- helpers

ReinplaceFn = Callable[..., Any]


def call_reinplace(
    gm: torch.fx.GraphModule, *args: Any, reinplace: ReinplaceFn | None = None, policy: str = "stock"
) -> Any:
    """``reinplace(gm, *args)`` with ``check=True`` where the pass takes it (an independent
    checker), and ``policy`` where it is not the default and the pass takes it; under
    ``policy="compile"`` with ``memory_plan=True`` where the pass takes it, as the
    compile backend runs it (the checker proves each reuse of a dead buffer)."""
    fn = fxinplace.reinplace if reinplace is None else reinplace
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        parameters = {}
    kwargs: dict[str, Any] = {"check": True} if "check" in parameters else {}
    if policy != "stock" and "policy" in parameters:
        kwargs["policy"] = policy
    if policy == "compile" and "memory_plan" in parameters:
        kwargs["memory_plan"] = True
    return fn(gm, *args, **kwargs)


def copy_graph_module(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy whose graph can be edited without touching ``gm`` (node metadata shared, shallowly)."""
    graph = torch.fx.Graph()
    value_map: dict[torch.fx.Node, torch.fx.Node] = {}
    output = graph.graph_copy(gm.graph, value_map, return_output_node=True)
    out_value, old_output = output  # type: ignore[misc]
    new_output = graph.output(out_value, type_expr=old_output.type)
    new_output.meta = copy.copy(old_output.meta)
    graph._codegen = copy.deepcopy(gm.graph._codegen)
    return torch.fx.GraphModule(gm, graph)


def _clear(exc: BaseException) -> bool:
    # check=True saying it cannot check a rewrite (README: value conversions, fake args
    # without hints, ...) is a documented limit of the checker, not a wrong result.
    cannot_check = isinstance(exc, fxinplace.ReinplaceCheckError) and exc.cannot_check
    return (
        cannot_check
        or isinstance(exc, fxinplace.ReinplaceInputError)
        or (isinstance(exc, RuntimeError) and "fxinplace" in message(exc))
    )


def _format_exc(exc: BaseException) -> str:
    return format_exc(exc, limit=-6)


def _error_finding(exc: BaseException, half: str, where: str) -> Finding:
    kind = CLEAR if _clear(exc) else INTERNAL
    return Finding(kind, half, f"{where} raised {normalize_message(exc)}", _format_exc(exc))


FunctionalizeFn = Callable[..., Any]


def _functionalizer(p: Pipeline, functionalize: FunctionalizeFn | None) -> Callable[..., Any]:
    if p.functionalizer == "none":  # make_fx of the program itself: mutations and all
        return lambda fn, remove: fn
    if p.functionalizer == "torch.func":
        return torch.func.functionalize
    return functionalize or fxinplace.functionalize


def _trace(
    program: RandomProgram, p: Pipeline, functionalize: FunctionalizeFn | None
) -> torch.fx.GraphModule:
    wrapped = _functionalizer(p, functionalize)(program.fn, remove=p.remove)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make_fx(wrapped, tracing_mode=p.tracing)(*program.make_args(program.sizes[0]))


# --------------------------------------------------------------------------- one program


#: Worker stages (``note_stage``) in which only torch runs: a crash there is torch's.
_TRACE_STAGES = {"torch.func": "torch.func trace", "none": "make_fx trace"}
TORCH_STAGES = tuple(_TRACE_STAGES.values())


class _ProgramCheck:
    def __init__(
        self, program: RandomProgram, reinplace: ReinplaceFn | None, functionalize: FunctionalizeFn | None
    ) -> None:
        self.program = program
        self.reinplace = reinplace
        self.functionalize = functionalize or fxinplace.functionalize
        self.sizes = program.sizes
        self.eager = {n: observe(program.fn, program.make_args(n)) for n in self.sizes}
        self.traces: dict[tuple[str, str, str], torch.fx.GraphModule | BaseException] = {}
        self.functional_runs: dict[tuple[str, str, str, int], Observed] = {}

    def trace(self, p: Pipeline) -> torch.fx.GraphModule | BaseException:
        key = (p.functionalizer, p.remove, p.tracing)
        if key not in self.traces:
            # A worker that dies now (make_fx of torch.func.functionalize segfaults on some
            # programs, seed 8550) is reported as torch's or fxinplace's by this stage.
            note_stage(_TRACE_STAGES.get(p.functionalizer, f"{p.name} trace"))
            try:
                self.traces[key] = _trace(self.program, p, self.functionalize)
            except Exception as exc:  # noqa: BLE001 - classified by the caller
                self.traces[key] = exc
        return self.traces[key]

    def _symbolic_only_miss(self, p: Pipeline, missed: str) -> bool:
        """Eager's error ``missed`` ("Type: message") is missed only by symbolic tracing, as
        torch.func.functionalize misses it or because it depends on data (IndexError): a make_fx
        limitation, not ours.

        Fake tensors carry no data, so an index out of range cannot be raised while tracing
        symbolically (an IndexError, or a kernel's "index ... is out of bounds for
        dimension"). Where the same functionalizer misses the error in real tracing too, the
        real pipeline reports it.
        """
        if p.tracing != "symbolic":
            return False
        error = self.eager[self.sizes[0]].error
        real = self.trace(dataclasses.replace(p, tracing="real"))
        if error is not None:  # the last line raises: the real trace must have raised
            real_caught_it = isinstance(real, BaseException) and not _is_unraised_rejection(real)
        else:  # a guarded line: the real trace must not have reached the guard's AssertionError
            real_caught_it = not (isinstance(real, BaseException) and _is_unraised_rejection(real))
        stock = self.trace(dataclasses.replace(p, functionalizer="torch.func", remove="mutations"))
        stock_misses = not isinstance(stock, BaseException) or _is_unraised_rejection(stock)
        # An index checked against its tensor's size when the kernel reads it (index_add_,
        # index_copy_: "index -2 is out of bounds for dimension 1 with size 1", a RuntimeError)
        # is data, as an IndexError's is (random pipelines seed 169616).
        data_dependent = missed.startswith("IndexError") or " is out of bounds for dimension " in missed
        return real_caught_it and (stock_misses or data_dependent)

    def _stock_trace_fails_alike(self, p: Pipeline, exc: BaseException) -> bool:
        """torch.func.functionalize fails the same way under the same tracing (a torch limitation)."""
        stock = self.trace(dataclasses.replace(p, functionalizer="torch.func", remove="mutations"))
        return isinstance(stock, BaseException) and normalize_message(stock) == normalize_message(exc)

    def _stock_graph_raises_alike(self, p: Pipeline, n: int, error: BaseException) -> bool:
        """torch.func.functionalize's graph, or make_fx's graph of the program itself (no
        functionalization), traced the same way, raises the same error at ``n``."""
        for functionalizer in ("torch.func", "none"):
            other_p = dataclasses.replace(p, functionalizer=functionalizer, remove="mutations")
            other_gm = self.trace(other_p)
            if isinstance(other_gm, BaseException):
                continue
            other_error = self.functional_run(other_p, other_gm, n).error
            if other_error is not None and normalize_message(other_error) == normalize_message(error):
                return True
        return False

    def run_eager_check(self, p: Pipeline) -> PipelineResult:
        result = PipelineResult()
        n = self.sizes[0]
        wrapped = self.functionalize(self.program.fn, remove=p.remove)
        got = observe(wrapped, self.program.make_args(n))
        want = self.eager[n]
        if want.error is not None:
            if got.error is None:
                signature = f"eager raises {normalize_message(want.error)}; functionalized f does not"
                result.findings.append(Finding(WRONG, "functionalize", signature, repr(want.error)))
            else:
                result.expected_error = True
            return result
        if got.error is not None and _is_unraised_rejection(got.error):
            signature = f"eager raises {_rejected(got.error)}; functionalized f does not"
            result.findings.append(Finding(WRONG, "functionalize", signature, str(got.error)))
            return result
        if got.error is not None:
            result.findings.append(_error_finding(got.error, "functionalize", "functionalized f"))
            return result
        result.ran = True
        for check, detail in differences(got, want, strides=_eager_strides(p), aliasing="no_new"):
            result.findings.append(Finding(WRONG, "functionalize", f"differs from eager: {check}", detail))
        return result

    def functional_run(self, p: Pipeline, gm: torch.fx.GraphModule, n: int) -> Observed:
        key = (p.functionalizer, p.remove, p.tracing, n)
        if key not in self.functional_runs:
            self.functional_runs[key] = observe(gm, self.program.make_args(n))
        return self.functional_runs[key]

    def _trace_failed(self, p: Pipeline, exc: BaseException, result: PipelineResult) -> None:
        stock = p.functionalizer == "torch.func"
        half = "torch" if stock else "functionalize"
        if self.eager[self.sizes[0]].error is not None:
            result.expected_error = True
        elif _is_unraised_rejection(exc):
            kind = LIMITATION if stock or self._symbolic_only_miss(p, _rejected(exc)) else WRONG
            signature = f"eager raises {_rejected(exc)}; the traced program does not"
            result.findings.append(Finding(kind, half, signature, str(exc)))
        elif stock:
            result.findings.append(
                Finding(LIMITATION, half, f"trace raised {normalize_message(exc)}", _format_exc(exc))
            )
        elif self._stock_trace_fails_alike(p, exc):
            result.findings.append(
                Finding(LIMITATION, "torch", f"make_fx({p.tracing}) raised {normalize_message(exc)}")
            )
        else:
            result.findings.append(_error_finding(exc, half, "trace"))

    def run_pipeline(self, p: Pipeline) -> PipelineResult:
        result = PipelineResult()
        stock = p.functionalizer == "torch.func"
        half = "torch" if stock else "functionalize"
        gm = self.trace(p)
        note_stage(p.name)
        if isinstance(gm, BaseException):
            self._trace_failed(p, gm, result)
            return result
        if self.eager[self.sizes[0]].error is not None:
            error = self.eager[self.sizes[0]].error
            kind = LIMITATION if stock or self._symbolic_only_miss(p, normalize_message(error)) else WRONG
            signature = f"eager raises {normalize_message(error)}; the traced program does not"
            result.findings.append(Finding(kind, half, signature, repr(error)))
            return result
        run_sizes = self.sizes if p.tracing == "symbolic" else self.sizes[:1]
        # The functional graph against eager, and the oracle of the re-inplaced graph, at each
        # size where the trace's own shape guards hold. Where they fail (the trace specialized:
        # its recorded shapes are the trace size's, and the pass may rely on them), neither
        # graph promises anything: a note.
        oracle_sizes = []
        for n in run_sizes:
            if n != self.sizes[0] and guards_hold(gm, self.program.make_args(n)) is False:
                result.findings.append(Finding(NOTE, half, "functional graph specialized at the trace size"))
                continue
            result.findings.extend(self._functional_findings(p, gm, n))
            if self.functional_run(p, gm, n).error is None:
                oracle_sizes.append(n)
        reinplaced = copy_graph_module(gm)
        if p.dce:
            reinplaced.graph.eliminate_dead_code()
            reinplaced.recompile()
        try:
            args = self.program.make_args(self.sizes[0])
            out = call_reinplace(reinplaced, *args, reinplace=self.reinplace, policy=p.policy)
            if isinstance(out, torch.fx.GraphModule):
                reinplaced = out
            reinplaced.graph.lint()
            if p.policy == "inductor":
                reinplaced = with_clones_in_kwargs(reinplaced)
        except Exception as exc:  # noqa: BLE001
            result.findings.append(self._reinplace_failed(p, gm, exc))
            return result
        result.ran = True
        for n in oracle_sizes:
            at = f" at n={n}" if n != self.sizes[0] else ""
            got = observe(reinplaced, self.program.make_args(n))
            if got.error is not None:
                signature = f"re-inplaced graph raises{at}: {normalize_message(got.error)}"
                result.findings.append(Finding(WRONG, "reinplace", signature, _format_exc(got.error)))
                continue
            for check, detail in differences(
                got, self.functional_run(p, gm, n), strides=True, aliasing="equal"
            ):
                signature = f"re-inplaced graph differs from the functional graph{at}: {check}"
                result.findings.append(Finding(WRONG, "reinplace", signature, detail))
        return result

    def _reinplace_failed(self, p: Pipeline, gm: torch.fx.GraphModule, exc: BaseException) -> Finding:
        """The pass or its check raised. The checker refusing a functional graph that raises on the
        sample args is a clear error when our own run of that graph raised too (that failure is the
        functional graph's finding); if ours did not, the checker ran it differently: internal."""
        finding = _error_finding(exc, "reinplace", "reinplace")
        if isinstance(exc, fxinplace.FunctionalGraphRaisedError):
            raised = self.functional_run(p, gm, self.sizes[0]).error is not None
            finding.kind = CLEAR if raised else INTERNAL
        return finding

    def _functional_findings(self, p: Pipeline, gm: torch.fx.GraphModule, n: int) -> list[Finding]:
        stock = p.functionalizer == "torch.func"
        half, kind = ("torch", LIMITATION) if stock else ("functionalize", WRONG)
        at = f" at n={n}" if n != self.sizes[0] else ""
        functional, eager = self.functional_run(p, gm, n), self.eager[n]
        if functional.error is not None:
            signature = f"functional graph raises{at}: {normalize_message(functional.error)}"
            if not stock and self._stock_graph_raises_alike(p, n, functional.error):
                # make_fx records an op before running it: a line that raised while tracing
                # (caught by the program) stays in the graph, whichever functionalization ran
                return [Finding(LIMITATION, "torch", signature, _format_exc(functional.error))]
            return [Finding(kind, half, signature, _format_exc(functional.error))]
        diffs = differences(functional, eager, strides=_eager_strides(p), aliasing="no_new")
        return [Finding(kind, half, f"functional graph differs from eager{at}: {c}", d) for c, d in diffs]


def _eager_strides(p: Pipeline) -> str | bool:
    """Which output strides must match eager's: with ``remove="mutations"`` those of outputs that
    are fresh in eager (views become ``*_copy`` ops with ``remove="mutations_and_views"``)."""
    return "fresh" if p.remove == "mutations" else False


def _is_unraised_rejection(exc: BaseException) -> bool:
    """The generator's guard after a line eager rejects: the line ran without raising."""
    return isinstance(exc, AssertionError) and str(exc).startswith("eager rejects: ")


def _rejected(exc: BaseException) -> str:
    """Eager's error for the line, as the guard's message names it."""
    return str(exc).removeprefix("eager rejects: ")


_QUIET = False


def _quiet_logs() -> None:
    # make_fx and FakeTensor log expected failures (view replays, guards) at ERROR level.
    global _QUIET
    if not _QUIET:
        for name in ("torch._subclasses.fake_tensor", "torch.fx.experimental.symbolic_shapes"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        _QUIET = True


def check_program(
    program: RandomProgram,
    *,
    pipelines: Sequence[Pipeline] = PIPELINES,
    reinplace: ReinplaceFn | None = None,
    functionalize: FunctionalizeFn | None = None,
) -> ProgramReport:
    """Run ``program`` through ``pipelines``; ``reinplace`` replaces ``fxinplace.reinplace``,
    ``functionalize`` replaces ``fxinplace.functionalize`` (both: for self-checks)."""
    _quiet_logs()
    started = time.perf_counter()
    check = _ProgramCheck(program, reinplace, functionalize)
    results: dict[str, PipelineResult] = {}
    for p in pipelines:
        try:
            results[p.name] = check.run_eager_check(p) if p.eager else check.run_pipeline(p)
        except Exception as exc:  # noqa: BLE001 - a harness bug must not hide the other pipelines
            results[p.name] = PipelineResult(
                [Finding(INTERNAL, "harness", f"harness raised {normalize_message(exc)}", _format_exc(exc))]
            )
    return ProgramReport(program.seed, results, program.features, time.perf_counter() - started)
