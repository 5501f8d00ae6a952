"""Running both re-inplacing passes on fresh copies of a graph and comparing them: how long
each took, what each rewrote, whether each result computes what the un-rewritten graph
(and, when given, eager) computes, and whether fxinplace's code is the stock pass's.
Shared by `python -m fxinplace bench` and benchmarks/bench_reinplace.py."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import signal
import statistics
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.fx import GraphModule

from fxinplace.testing.harness.oracle import value_difference

__all__ = [
    "Comparison",
    "PassRun",
    "TimeLimitExceeded",
    "compare",
    "count_inplace",
    "count_scatters",
    "outputs_match",
    "recompile_time",
    "time_limit",
]

SCATTER_TARGETS = frozenset(
    {
        torch.ops.aten.select_scatter.default,
        torch.ops.aten.slice_scatter.default,
        torch.ops.aten.diagonal_scatter.default,
        torch.ops.aten.as_strided_scatter.default,
    }
)


# --------------------------------------------------------------------------- measuring


def _is_inplace(target: Any) -> bool:
    return isinstance(target, torch._ops.OpOverload) and target._schema.name.split("::")[-1].endswith("_")


def inplace_names(gm: GraphModule) -> set[str]:
    """Names of call_function nodes whose target is an in-place overload (add_, copy_, ...)."""
    return {n.name for n in gm.graph.nodes if n.op == "call_function" and _is_inplace(n.target)}


def count_inplace(before: dict[str, bool], after: GraphModule) -> int:
    """Nodes of `after` that are in-place now and were out-of-place nodes of the original
    graph (`before`: name -> was in-place). Nodes a pass inserted (the copy_ of a
    scatter it rewrote) are not counted."""
    return sum(1 for name in inplace_names(after) if before.get(name) is False)


def count_scatters(gm: GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target in SCATTER_TARGETS)


def _snapshot(gm: GraphModule) -> dict[str, bool]:
    return {n.name: _is_inplace(n.target) for n in gm.graph.nodes if n.op == "call_function"}


def _clone_args(args: Sequence[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _leaves(v)]
    return [value]


def _same(a: Any, b: Any) -> bool:
    return value_difference(a, b, tolerance=(1e-5, 1e-6)) is None


def outputs_match(reference: tuple[list[Any], list[Any]], gm: GraphModule, args: Sequence[Any]) -> str | None:
    """Run `gm` on fresh copies of `args`; None if its outputs and the inputs' final
    values equal `reference` (outputs, inputs after), else what differs."""
    ref_out, ref_in = reference
    fresh = _clone_args(args)
    try:
        out = _leaves(gm(*fresh))
    except Exception as e:  # a wrong rewrite can make the graph raise
        return f"raised {type(e).__name__}: {e}"
    if len(out) != len(ref_out):
        return f"{len(out)} outputs, expected {len(ref_out)}"
    for i, (a, b) in enumerate(zip(out, ref_out, strict=True)):
        if not _same(a, b):
            return f"output {i} differs"
    for i, (a, b) in enumerate(zip(fresh, ref_in, strict=True)):
        if not _same(a, b):
            return f"input {i} ends with a different value"
    return None


def reference_run(gm: GraphModule, args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    fresh = _clone_args(args)
    return _leaves(gm(*fresh)), fresh


def recompile_time(gm: GraphModule, runs: int = 3) -> float:
    """Median wall time of gm.recompile() (codegen + compile of forward)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        gm.recompile()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


class TimeLimitExceeded(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise TimeLimitExceeded in the main thread after `seconds` (SIGALRM; no-op elsewhere)."""
    usable = seconds is not None and hasattr(signal, "SIGALRM")
    if usable:
        import threading

        usable = threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def _raise(signum: int, frame: Any) -> None:
        raise TimeLimitExceeded(f"over {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclasses.dataclass
class PassRun:
    """One pass on one fresh copy of the graph."""

    status: str = "ok"  # ok | skipped | timeout | error
    seconds: float | None = None
    reinplaced: int | None = None
    scatters_removed: int | None = None
    mismatch: str | None = None  # None: matches the un-reinplaced graph
    eager_mismatch: str | None = None  # None: matches eager (or no eager reference)
    error: str | None = None
    gm: GraphModule | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.mismatch is None and self.eager_mismatch is None


@dataclasses.dataclass
class Comparison:
    name: str
    nodes: int
    scatters: int
    stock: PassRun
    native: PassRun
    recompile_s: float | None = None
    report: Any = None  # fxinplace.ReinplaceReport of the native run
    # fxinplace's gm.code is the stock pass's (the drop-in claim); None: not compared.
    same_code: bool | None = None
    eager_checked: bool = False  # the results were also held to the eager program's

    @property
    def ratio(self) -> float | None:
        """Stock time / native time (how many times faster the native pass is)."""
        if self.stock.status != "ok" or self.native.status != "ok":
            return None
        if self.stock.seconds is None or not self.native.seconds:
            return None
        return self.stock.seconds / self.native.seconds

    @property
    def matches(self) -> bool:
        """The native pass ran and matches; the stock pass matches or did not run."""
        return self.native.ok and (self.stock.status != "ok" or self.stock.mismatch is None)


def matches_eager(
    reference: tuple[list[Any], list[Any] | None], gm: GraphModule, args: Sequence[Any]
) -> str | None:
    """Like outputs_match, against an eager run; entries None in `reference` are skipped."""
    ref_out, ref_in = reference
    fresh = _clone_args(args)
    try:
        out = _leaves(gm(*fresh))
    except Exception as e:
        return f"raised {type(e).__name__}: {e}"
    if len(out) != len(ref_out):
        return f"{len(out)} outputs, eager has {len(ref_out)}"
    for i, (a, b) in enumerate(zip(out, ref_out, strict=True)):
        if b is not None and not _same(a, b):
            return f"output {i} differs from eager"
    for i, (a, b) in enumerate(zip(fresh, ref_in or [], strict=False)):
        if b is not None and not _same(a, b):
            return f"input {i} ends with another value than in eager"
    return None


def _run_pass(
    fn: Callable[..., Any],
    make_gm: Callable[[], GraphModule],
    args: Sequence[Any],
    before: dict[str, bool],
    scatters_before: int,
    limit: float | None = None,
    repeats: int = 1,
    budget: float = 3.0,
) -> tuple[PassRun, Any]:
    """`fn(gm, *args)` on up to `repeats` fresh copies, no more once the runs so far
    took `budget` seconds; the median time, the last result."""
    times: list[float] = []
    for _ in range(max(repeats, 1)):
        if sum(times) >= budget:
            break
        gm = make_gm()
        gc.collect()
        t = time.perf_counter()
        try:
            with time_limit(limit):
                result = fn(gm, *args)
        except TimeLimitExceeded as e:
            return PassRun(status="timeout", seconds=time.perf_counter() - t, error=str(e)), None
        except Exception as e:
            return (
                PassRun(status="error", seconds=time.perf_counter() - t, error=f"{type(e).__name__}: {e}"),
                traceback.format_exc(),
            )
        times.append(time.perf_counter() - t)
    run = PassRun(
        seconds=statistics.median(times),
        reinplaced=count_inplace(before, gm),
        scatters_removed=scatters_before - count_scatters(gm),
        gm=gm,
    )
    return run, result


def _stock(gm: GraphModule, *args: Any) -> GraphModule:
    from torch.fx.passes.reinplace import reinplace

    return reinplace(gm, *args)


def _native(gm: GraphModule, *args: Any) -> Any:
    from fxinplace import reinplace_report

    return reinplace_report(gm, *args)


def quiet_stock_logs() -> None:
    # The stock pass tries view replays that fail by design; FakeTensor logs each one.
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)


def compare(
    name: str,
    make_gm: Callable[[], GraphModule],
    args: Sequence[Any],
    *,
    run_stock: bool = True,
    stock_limit: float | None = None,
    recompile_runs: int = 0,
    repeats: int = 1,
    step: Callable[[str], None] | None = None,
    eager: Callable[[], tuple[list[Any], list[Any] | None]] | None = None,
) -> Comparison:
    """Both passes on fresh copies of `make_gm()`, checked against the un-reinplaced graph.

    `step(label)` is called before each long step (for progress display). With
    `run_stock=False` the stock pass is reported as skipped; `stock_limit` (seconds)
    interrupts it. Each pass runs up to `repeats` times (fresh copies; median time),
    fewer once its runs add up to 3 s.
    `recompile_runs` > 0 also times gm.recompile() on the native result (median).
    `eager()` (optional) runs the original program: both results are held to it too.
    """
    quiet_stock_logs()
    step = step or (lambda label: None)
    original = make_gm()
    before = _snapshot(original)
    scatters = count_scatters(original)
    nodes = len(original.graph.nodes)

    if run_stock:
        step("stock pass")
        stock, _ = _run_pass(_stock, make_gm, args, before, scatters, stock_limit, repeats)
    else:
        stock = PassRun(status="skipped")
    step("native pass")
    native, report = _run_pass(_native, make_gm, args, before, scatters, None, repeats)
    if native.status != "ok":
        native.error = f"{native.error}\n{report}" if report else native.error
        report = None

    step("checking outputs")
    reference = reference_run(original, args)
    eager_reference = eager() if eager is not None else None
    for run in (stock, native):
        if run.status == "ok" and run.gm is not None:
            run.mismatch = outputs_match(reference, run.gm, args)
            if eager_reference is not None:
                run.eager_mismatch = matches_eager(eager_reference, run.gm, args)
    del original, reference
    same_code = None
    if stock.status == "ok" and native.status == "ok" and stock.gm is not None and native.gm is not None:
        same_code = stock.gm.code == native.gm.code

    recompile_s = None
    if recompile_runs and native.gm is not None:
        step("timing recompile")
        recompile_s = recompile_time(native.gm, recompile_runs)
    return Comparison(
        name, nodes, scatters, stock, native, recompile_s, report, same_code, eager_reference is not None
    )
