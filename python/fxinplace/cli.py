"""`python -m fxinplace`: compare the native pass with the stock one on real graphs.

    python -m fxinplace bench                      # GPT-2 (small config, random weights)
    python -m fxinplace bench --model llama
    python -m fxinplace bench --model chain --nodes 10000
    python -m fxinplace explain --model gpt2

`bench` traces the graph, runs torch.fx.passes.reinplace.reinplace and
fxinplace.reinplace on fresh copies of it, runs the original and both results on
fresh copies of the sample args and prints what each pass did, how long it took and
whether the outputs (and the inputs' final values) match the un-reinplaced graph.
Exit status: 0 when everything matches, 1 on a mismatch, 2 when a pass raised.

The comparison helpers here (`compare`, `count_inplace`, ...) are shared with
benchmarks/bench_reinplace.py.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import logging
import signal
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.fx import GraphModule

from fxinplace import graphs

__all__ = [
    "Comparison",
    "PassRun",
    "TimeLimitExceeded",
    "compare",
    "count_inplace",
    "count_scatters",
    "main",
    "outputs_match",
    "recompile_time",
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
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(torch.equal(a, b)) or bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    return type(a) is type(b) and a == b


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
    error: str | None = None
    gm: GraphModule | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.mismatch is None


@dataclasses.dataclass
class Comparison:
    name: str
    nodes: int
    scatters: int
    stock: PassRun
    native: PassRun
    recompile_s: float | None = None
    report: Any = None  # fxinplace.ReinplaceReport of the native run

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
) -> Comparison:
    """Both passes on fresh copies of `make_gm()`, checked against the un-reinplaced graph.

    `step(label)` is called before each long step (for progress display). With
    `run_stock=False` the stock pass is reported as skipped; `stock_limit` (seconds)
    interrupts it. Each pass runs up to `repeats` times (fresh copies; median time),
    fewer once its runs add up to 3 s.
    `recompile_runs` > 0 also times gm.recompile() on the native result (median).
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
    for run in (stock, native):
        if run.status == "ok" and run.gm is not None:
            run.mismatch = outputs_match(reference, run.gm, args)
    del original, reference

    recompile_s = None
    if recompile_runs and native.gm is not None:
        step("timing recompile")
        recompile_s = recompile_time(native.gm, recompile_runs)
    return Comparison(name, nodes, scatters, stock, native, recompile_s, report)


# --------------------------------------------------------------------------- formatting


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1:
        return f"{s * 1000:.1f} ms"
    return f"{s:.2f} s"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.1f}x"


def fmt_count(run: PassRun, attr: str) -> str:
    value = getattr(run, attr)
    return "-" if value is None else str(value)


def fmt_match(run: PassRun) -> str:
    if run.status == "skipped":
        return "-"
    if run.status == "timeout":
        return "timed out"
    if run.status == "error":
        return "error"
    return "yes" if run.mismatch is None else f"NO ({run.mismatch})"


def fmt_pass_time(run: PassRun, cap_note: str = "") -> str:
    if run.status == "skipped":
        return f"skipped{cap_note}"
    if run.status == "timeout":
        return f"timed out ({run.error})"
    if run.status == "error":
        return "error"
    return fmt_seconds(run.seconds)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    return "\n".join([line, rule, *body])


def _errors(c: Comparison) -> list[str]:
    out = []
    for label, run in (("stock", c.stock), ("native", c.native)):
        if run.status == "error":
            out.append(f"{label} pass raised on {c.name}: {run.error}")
        elif run.mismatch is not None:
            out.append(f"{label} pass result does not match on {c.name}: {run.mismatch}")
    return out


# --------------------------------------------------------------------------- commands


def _describe(model: str, nodes: int | None, train: bool) -> str:
    if model in ("chain", "view"):
        return f"{model} ({nodes or 1000} nodes)"
    return f"{model}{' (training step)' if train else ''}"


def _progress(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, disable=not enabled, file=sys.stderr, leave=False, unit="step")


def cmd_bench(ns: argparse.Namespace) -> int:
    name = _describe(ns.model, ns.nodes, ns.train)
    run_stock = not ns.no_stock
    total = 4 + (1 if run_stock else 0)
    with _progress(total, not ns.no_progress) as bar:
        started = []

        def step(label: str) -> None:
            # Called as each step starts: the one before it is done.
            if started:
                bar.update(1)
            started.append(label)
            bar.set_description(f"{name}: {label}")

        step("tracing")
        make_gm, args = graphs.build(
            ns.model, ns.nodes, with_training_step=ns.train, functionalize=ns.functionalize
        )
        c = compare(
            name,
            make_gm,
            args,
            run_stock=run_stock,
            stock_limit=ns.stock_timeout,
            recompile_runs=3,
            repeats=ns.repeat,
            step=step,
        )
        bar.update(1)

    headers = ["", "stock", "fxinplace"]
    rows = [
        ["nodes", str(c.nodes), str(c.nodes)],
        ["scatter nodes before", str(c.scatters), str(c.scatters)],
        ["ops reinplaced", fmt_count(c.stock, "reinplaced"), fmt_count(c.native, "reinplaced")],
        ["scatters removed", fmt_count(c.stock, "scatters_removed"), fmt_count(c.native, "scatters_removed")],
        ["pass time", fmt_pass_time(c.stock), fmt_pass_time(c.native)],
        ["speedup (stock / fxinplace)", "", fmt_ratio(c.ratio)],
        ["gm.recompile() (median of 3)", "", fmt_seconds(c.recompile_s)],
        ["outputs match", fmt_match(c.stock), fmt_match(c.native)],
    ]
    print(f"## {name}\n")
    print(markdown_table(headers, rows))
    if c.report is not None:
        print(
            f"\nfxinplace: {c.report.num_reinplaced} reinplaced, {c.report.num_scatters_removed} scatters "
            f"removed, {c.report.num_scatters_to_copy} scatters turned into copy_, "
            f"metadata path: {c.report.metadata_path}"
        )
    problems = _errors(c)
    for p in problems:
        print(f"\n{p}", file=sys.stderr)
    if c.native.status == "error":
        return 2
    return 0 if c.matches else 1


def cmd_explain(ns: argparse.Namespace) -> int:
    from fxinplace import reinplace_report

    make_gm, args = graphs.build(
        ns.model, ns.nodes, with_training_step=ns.train, functionalize=ns.functionalize
    )
    gm = make_gm()
    try:
        report = reinplace_report(gm, *args)
    except Exception:
        traceback.print_exc()
        name = _describe(ns.model, ns.nodes, ns.train)
        print(f"fxinplace.reinplace_report raised on {name}", file=sys.stderr)
        return 2
    text = report.explain(include_non_candidates=ns.all)
    lines = text.splitlines() if text else []
    for line in lines[: ns.lines]:
        print(line)
    if len(lines) > ns.lines:
        print(f"... ({len(lines) - ns.lines} more lines)")
    actions: dict[str, int] = {}
    for d in report.decisions:
        actions[d.action] = actions.get(d.action, 0) + 1
    print()
    print(f"graph: {_describe(ns.model, ns.nodes, ns.train)}, {len(report.decisions)} nodes")
    print(
        f"reinplaced: {report.num_reinplaced}, scatters removed: {report.num_scatters_removed}, "
        f"scatters to copy_: {report.num_scatters_to_copy}, metadata path: {report.metadata_path}"
    )
    print("decisions: " + ", ".join(f"{k}={v}" for k, v in sorted(actions.items())))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fxinplace", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def graph_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--model",
            choices=["gpt2", "llama", "chain", "view"],
            default="gpt2",
            help="graph to run on: a small transformers model with random weights (default gpt2), "
            "or a synthetic chain / view-mutation graph",
        )
        p.add_argument("--nodes", type=int, default=None, help="size of the chain / view graph (1000)")
        p.add_argument("--train", action="store_true", help="model graphs: forward + backward of a loss")
        p.add_argument(
            "--functionalize",
            choices=("stock", "fxinplace"),
            default="stock",
            help="who records the model graph: torch.func.functionalize or fxinplace.functionalize "
            "(inference graphs)",
        )

    bench = sub.add_parser("bench", help="run both passes on a graph and compare them")
    graph_args(bench)
    bench.add_argument("--no-stock", action="store_true", help="do not run the stock pass")
    bench.add_argument(
        "--stock-timeout",
        type=float,
        default=600.0,
        help="interrupt the stock pass after this many seconds (default 600)",
    )
    bench.add_argument(
        "--repeat", type=int, default=3, help="runs of each pass (fewer past 3 s), median reported (3)"
    )
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    bench.set_defaults(func=cmd_bench)

    explain = sub.add_parser("explain", help="print fxinplace's decision for each candidate node")
    graph_args(explain)
    explain.add_argument("--lines", type=int, default=40, help="how many decision lines to print (40)")
    explain.add_argument("--all", action="store_true", help="include nodes that are not candidates")
    explain.set_defaults(func=cmd_explain)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    ns = _parser().parse_args(argv)
    return ns.func(ns)


if __name__ == "__main__":
    sys.exit(main())
