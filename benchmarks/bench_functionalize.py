"""Stock torch.func.functionalize vs fxinplace.functionalize, in one process.

    python benchmarks/bench_functionalize.py                      # full run (~4-5 min on 2 cores)
    python benchmarks/bench_functionalize.py --quick              # smoke test (~15-30 s)
    python benchmarks/bench_functionalize.py --impls stock --ops 2000 --repeat 5
    python benchmarks/bench_functionalize.py --markdown benchmarks/functionalize_results.md

Two measurements, for each implementation in --impls (stock: torch.func.functionalize;
fxinplace: fxinplace.functionalize):

1. Trace time of ``make_fx(impl(f, remove=...))(*args)`` (tracing_mode "real" unless
   said otherwise: the real ops run too, identically for every implementation), median of --repeat runs
   (fewer once one implementation's traces of one program add up to --budget
   seconds), the implementations' runs interleaved so that background load hits them
   alike:
   * GPT-2 small (transformers ``GPT2LMHeadModel(GPT2Config())``, 12 layers, 768 wide,
     eager attention, random weights, eval mode, under ``torch.no_grad()``),
     ``ids -> model(ids, attention_mask=ones).logits`` on a (1, --seq-len) batch;
   * the same model with its parameters as inputs (``torch.func.functional_call``),
     traced with tracing_mode "fake", as compilers trace models;
   * a synthetic program of ~--ops ATen ops on a 4x4 tensor mixing views and in-place
     ops (see ``synthetic_program``); the tensors are tiny, so time is dispatch
     overhead.
   For each: the resulting graph's node count and in-place node count, and whether
   the graph computes what the plain eager program computes (outputs and the inputs'
   final values, on fresh copies of the args).
2. Eager per-op overhead: ``impl(f, remove=...)(*args)`` run directly (eager
   functionalization, no make_fx) on the synthetic program, in microseconds per ATen
   op of the program, next to the plain eager program (no functionalization).

Both tables are printed; --markdown PATH also writes them, with the machine's details.
A run that raises is reported as an error (and the script exits 1); a trace that runs
past --timeout is interrupted and reported as timed out.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._python_dispatch import TorchDispatchMode
from tqdm import tqdm

import fxinplace
from fxinplace.testing.harness.compare import TimeLimitExceeded, time_limit
from fxinplace.testing.harness.oracle import value_difference
from fxinplace.testing.tables import fmt_seconds, markdown_table

REMOVE_CHOICES = ("mutations", "mutations_and_views")
DEFAULT_OPS = 10_000
QUICK_OPS = 500
ROWS = 4  # the synthetic program's tensor is ROWS x ROWS
Functionalize = Callable[..., Callable[..., Any]]
IMPLS: dict[str, Functionalize] = {"stock": torch.func.functionalize, "fxinplace": fxinplace.functionalize}


def log(msg: str) -> None:
    tqdm.write(msg, file=sys.stderr)


# --------------------------------------------------------------------------- helpers


def fmt_ratio(num: float | None, den: float | None) -> str:
    return f"{num / den:.2f}x" if num is not None and den else "-"


def _same(a: Any, b: Any) -> bool:
    fa = torch.utils._pytree.tree_leaves(a)
    fb = torch.utils._pytree.tree_leaves(b)
    return len(fa) == len(fb) and all(
        value_difference(x, y, tolerance=(1e-4, 1e-5)) is None for x, y in zip(fa, fb, strict=True)
    )


class _CountOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


# --------------------------------------------------------------------------- workloads


@dataclasses.dataclass
class Workload:
    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], tuple]  # fresh args for each run (the program may mutate them)
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    ops: int = 0  # ATen ops of one plain eager run
    expected: tuple[Any, tuple] | None = None  # (output, args after) of one plain eager run
    tracing_mode: str = "real"  # make_fx's tracing_mode

    def prepare(self) -> None:
        """Run the plain program once: count its ATen ops, and keep its results."""
        args = self.make_args()
        with self.context():
            counter = _CountOps()
            with counter:
                out = self.fn(*args)
        self.ops = counter.count
        self.expected = (out, args)

    def matches(self, run: Callable[..., Any]) -> bool:
        args = self.make_args()
        with self.context():
            out = run(*args)
        assert self.expected is not None
        return _same(out, self.expected[0]) and _same(args, self.expected[1])


def synthetic_program(n_ops: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """A program of ~n_ops ATen ops (7 an iteration, plus 3) on a ROWS x ROWS tensor.

    Each iteration mutates a view (`row.add_`), a view of a view (`y.t()[r].mul_`, a
    column) and the base itself (`y.mul_`), then reads the view `row` taken before the
    base was mutated (functionalization must regenerate it from the base) in an
    out-of-place op that makes the next base. The last op mutates the *input* through a
    view, so the functionalized program copies the result back into it.
    """
    n_iters = max((n_ops - 3) // 7, 1)

    def f(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        for i in range(n_iters):
            r = i % ROWS
            row = y[r]  # select (view)
            row.add_(1.0)  # in-place on a view
            y.t()[r].mul_(0.5)  # t, select (view of a view), in-place on it
            y.mul_(1.0001)  # in-place on the base: `row` is stale now
            y = y.sub(row, alpha=0.5)  # reads `row`; a new base
        x.diagonal().add_(1.0)  # input mutation through a view
        return y

    return f


def synthetic_workload(n_ops: int) -> Workload:
    x = torch.randn(ROWS, ROWS, generator=torch.Generator().manual_seed(0))
    w = Workload(f"synthetic {n_ops} ops", synthetic_program(n_ops), lambda: (x.clone(),))
    w.prepare()
    w.name = f"synthetic ({w.ops} ops)"
    return w


def _gpt2(seq_len: int, *, tiny: bool) -> tuple[torch.nn.Module, torch.Tensor, str]:
    from transformers import GPT2Config, GPT2LMHeadModel

    from fxinplace.testing.models import tiny_gpt2

    torch.manual_seed(0)
    if tiny:
        model = tiny_gpt2(positions=max(64, seq_len)).eval()
        label = "GPT-2 tiny (2 layers, 64 wide)"
    else:
        config = GPT2Config(attn_implementation="eager")
        config.use_cache = False
        model = GPT2LMHeadModel(config).eval()
        label = "GPT-2 small (12 layers, 768 wide)"
    ids = torch.randint(0, model.config.vocab_size, (1, seq_len), generator=torch.Generator().manual_seed(0))
    return model, ids, label


def gpt2_workload(seq_len: int, *, tiny: bool) -> Workload:
    model, ids, label = _gpt2(seq_len, tiny=tiny)

    def logits(input_ids: torch.Tensor) -> torch.Tensor:
        # Eager attention and an explicit all-ones mask: SDPA attention inspects the mask's
        # values, and without a mask transformers inspects the positions for packed
        # sequences, data-dependent branches make_fx cannot trace.
        return model(input_ids, attention_mask=torch.ones_like(input_ids), use_cache=False).logits

    w = Workload(f"{label}, seq {seq_len}", logits, lambda: (ids.clone(),), context=torch.no_grad)
    w.prepare()
    return w


def gpt2_params_workload(seq_len: int, *, tiny: bool) -> Workload:
    """GPT-2 with its parameters as inputs (torch.func.functional_call), traced with fake
    tensors: the way compilers trace a model, and the setting where make_fx's own per-node
    work is smallest next to functionalization's."""
    model, ids, label = _gpt2(seq_len, tiny=tiny)
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    names = list(state)
    weights = tuple(t.detach() for t in state.values())

    def logits(*flat: torch.Tensor) -> torch.Tensor:
        tensors = dict(zip(names, flat[:-1], strict=True))
        kwargs = {"attention_mask": torch.ones_like(flat[-1]), "use_cache": False}
        return torch.func.functional_call(model, tensors, (flat[-1],), kwargs).logits

    w = Workload(
        f"{label}, seq {seq_len}, parameters as inputs, fake tracing",
        logits,
        lambda: (*weights, ids.clone()),
        context=torch.no_grad,
        tracing_mode="fake",
    )
    w.prepare()
    return w


# --------------------------------------------------------------------------- measurements


@dataclasses.dataclass
class Cell:
    """One implementation on one workload: its timed runs and what they produced."""

    times: list[float] = dataclasses.field(default_factory=list)
    status: str = "ok"  # ok | timeout | error | not run
    error: str | None = None
    nodes: int | None = None
    inplace_nodes: int | None = None
    match: bool | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times and self.status == "ok" else None

    def text(self, per_op: int | None = None, runs_of: int | None = None) -> str:
        """The median (per op, with per_op); '(n runs)' where n < runs_of."""
        if self.status == "timeout":
            return f"timed out ({self.error})"
        if self.status == "error":
            return "error"
        if self.status == "not run" or self.median is None:
            return "-"
        text = f"{self.median / per_op * 1e6:.2f} us" if per_op else fmt_seconds(self.median)
        if runs_of is not None and len(self.times) < runs_of:
            text += f" ({len(self.times)} run{'s' if len(self.times) > 1 else ''})"
        return text

    def match_text(self) -> str:
        return "-" if self.match is None else ("yes" if self.match else "NO")


# Implementations by name, and what each did on one workload; None: no functionalization.
Impls = dict[str | None, Functionalize | None]
Cells = dict[str | None, Cell]


def _inplace_nodes(gm: torch.fx.GraphModule) -> int:
    return sum(
        1
        for n in gm.graph.nodes
        if n.op == "call_function"
        and isinstance(n.target, torch._ops.OpOverload)
        and n.target._schema.is_mutable
    )


def _record_error(cell: Cell, label: str, e: BaseException, failures: list[str]) -> None:
    if isinstance(e, TimeLimitExceeded):
        cell.status, cell.error = "timeout", str(e)
    else:
        cell.status, cell.error = "error", f"{type(e).__name__}: {e}"
        failures.append(f"{label}: {cell.error}")
    log(f"    {label}: {cell.status} ({cell.error})")


def trace_once(impl: Functionalize | None, w: Workload, remove: str, timeout: float | None) -> tuple:
    """One timed make_fx trace (impl None: make_fx of the plain program)."""
    args = w.make_args()
    gc.collect()
    with w.context(), time_limit(timeout):
        t = time.perf_counter()
        gm = make_fx(w.fn if impl is None else impl(w.fn, remove=remove), tracing_mode=w.tracing_mode)(*args)
        return time.perf_counter() - t, gm


def eager_once(impl: Functionalize | None, w: Workload, remove: str) -> float:
    fn = w.fn if impl is None else impl(w.fn, remove=remove)
    args = w.make_args()
    gc.collect()
    with w.context():
        t = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t


def measure_trace(w: Workload, impls: Impls, ns: argparse.Namespace, bar: tqdm, failures: list[str]) -> Cells:
    cells: Cells = {name: Cell() for name in impls}
    for r in range(ns.repeat):
        for name, impl in impls.items():
            cell, label = cells[name], f"trace {name or 'make_fx alone'} on {w.name}"
            bar.set_description(f"trace {w.name[:24]} {name or 'plain'} {r + 1}/{ns.repeat}")
            if cell.status == "ok" and sum(cell.times) < ns.budget:
                try:
                    seconds, gm = trace_once(impl, w, ns.remove, ns.timeout)
                    cell.times.append(seconds)
                    if r == 0:
                        cell.nodes, cell.inplace_nodes = len(gm.graph.nodes), _inplace_nodes(gm)
                        cell.match = w.matches(gm)
                        if not cell.match:
                            failures.append(f"{label}: the graph's results differ from plain eager")
                    del gm
                except Exception as e:
                    _record_error(cell, label, e, failures)
            bar.update(1)
    for name, cell in cells.items():
        if cell.status == "ok":
            log(f"    {w.name}, {name or 'make_fx alone'}: {cell.text()} {[round(t, 3) for t in cell.times]}")
    return cells


def measure_eager(w: Workload, impls: Impls, ns: argparse.Namespace, bar: tqdm, failures: list[str]) -> Cells:
    cells: Cells = {name: Cell() for name in impls}
    for name, impl in impls.items():
        if impl is None:
            continue
        label = f"eager {name} on {w.name}"
        try:
            fn = impl(w.fn, remove=ns.remove)
            cells[name].match = w.matches(fn)
            if not cells[name].match:
                failures.append(f"{label}: results differ from plain eager")
        except Exception as e:
            _record_error(cells[name], label, e, failures)
    for r in range(ns.eager_repeat):
        for name, impl in impls.items():
            cell = cells[name]
            bar.set_description(f"eager {name or 'plain'} {r + 1}/{ns.eager_repeat}")
            if cell.status == "ok":
                try:
                    cell.times.append(eager_once(impl, w, ns.remove))
                except Exception as e:
                    _record_error(cell, f"eager {name or 'plain'} on {w.name}", e, failures)
            bar.update(1)
    for name, cell in cells.items():
        if cell.status == "ok":
            log(f"    eager {name or 'plain'}: {cell.text(per_op=w.ops)} per op ({cell.text()} a run)")
    return cells


def warm_up(impls: dict[str, Functionalize], remove: str) -> None:
    """Trace and run a small synthetic program once with each implementation (untimed):
    first-call costs (lazy imports, op registration, caches) stay out of the timings."""
    w = synthetic_workload(70)
    for name, impl in impls.items():
        try:
            trace_once(impl, w, remove, None)
            eager_once(impl, w, remove)
        except Exception as e:
            log(f"    warm-up of {name} raised {type(e).__name__}: {e}")
    trace_once(None, w, remove, None)


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--impls", nargs="+", choices=list(IMPLS), default=list(IMPLS), help="implementations (both)"
    )
    parser.add_argument(
        "--ops", type=int, help=f"ATen ops of the synthetic program ({DEFAULT_OPS}; --quick {QUICK_OPS})"
    )
    parser.add_argument(
        "--repeat", type=int, help="traces per implementation and program, median (3; --quick 1)"
    )
    parser.add_argument(
        "--eager-repeat",
        type=int,
        help="eager runs of the synthetic program per implementation, median (7; --quick 3)",
    )
    parser.add_argument("--seq-len", type=int, default=64, help="GPT-2 input length (64)")
    parser.add_argument("--no-gpt2", action="store_true", help="synthetic program only")
    parser.add_argument(
        "--remove", choices=REMOVE_CHOICES, default="mutations", help="functionalize's remove= (mutations)"
    )
    parser.add_argument(
        "--trace-baseline",
        action="store_true",
        help="also time make_fx of the plain (unfunctionalized) programs, for reference",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=180.0,
        help="interrupt a single trace after this many seconds; later repeats of it are skipped (180)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=90.0,
        help="no further traces of one implementation on one program once its traces add up to "
        "this many seconds (90: the 10k-op program gets 3 traces where one takes under 45 s)",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"smoke test: tiny GPT-2, {QUICK_OPS} ops, 1 trace each"
    )
    parser.add_argument("--markdown", type=Path, help="also write the tables to this Markdown file")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    ns = parser.parse_args(argv)
    ns.ops = ns.ops or (QUICK_OPS if ns.quick else DEFAULT_OPS)
    ns.repeat = ns.repeat or (1 if ns.quick else 3)
    ns.eager_repeat = ns.eager_repeat or (3 if ns.quick else 7)

    started = time.perf_counter()
    failures: list[str] = []
    impls = {name: IMPLS[name] for name in ns.impls}
    traced: Impls = dict(impls)
    if ns.trace_baseline:
        traced = {None: None, **traced}
    eager: Impls = {None: None, **impls}

    log(f"torch {torch.__version__}, {os.cpu_count()} CPU cores; implementations: {', '.join(impls)}")
    log("warming up")
    warm_up(impls, ns.remove)
    workloads: list[Workload] = []
    if not ns.no_gpt2:
        t = time.perf_counter()
        workloads.append(gpt2_workload(ns.seq_len, tiny=ns.quick))
        workloads.append(gpt2_params_workload(ns.seq_len, tiny=ns.quick))
        log(f"built GPT-2 ({workloads[-1].name}) and ran it twice in {time.perf_counter() - t:.1f} s")
    synthetic = synthetic_workload(ns.ops)
    workloads.append(synthetic)
    log(f"synthetic program: {synthetic.ops} ATen ops")

    trace_rows: list[list[str]] = []
    total = len(workloads) * ns.repeat * len(traced) + ns.eager_repeat * len(eager)
    with tqdm(total=total, file=sys.stderr, disable=True if ns.no_progress else None, leave=False) as bar:
        for w in workloads:
            cells = measure_trace(w, traced, ns, bar, failures)
            all_cells = {name: cells.get(name, Cell(status="not run")) for name in IMPLS}
            stock, fx = all_cells["stock"], all_cells["fxinplace"]
            row = [w.name, str(w.ops)]
            if ns.trace_baseline:
                row.append(cells[None].text(runs_of=ns.repeat))
            row += [
                stock.text(runs_of=ns.repeat),
                fx.text(runs_of=ns.repeat),
                fmt_ratio(fx.median, stock.median),
                f"{stock.nodes or '-'} / {fx.nodes or '-'}",
                f"{'-' if stock.inplace_nodes is None else stock.inplace_nodes}"
                f" / {'-' if fx.inplace_nodes is None else fx.inplace_nodes}",
                f"{stock.match_text()} / {fx.match_text()}",
            ]
            trace_rows.append(row)
        ecells = measure_eager(synthetic, eager, ns, bar, failures)
    elapsed = time.perf_counter() - started

    trace_headers = ["program", "ATen ops"]
    if ns.trace_baseline:
        trace_headers.append("make_fx alone")
    trace_headers += [
        "stock",
        "fxinplace",
        "fx / stock",
        "nodes (stock / fx)",
        "in-place nodes (stock / fx)",
        "matches (stock / fx)",
    ]
    plain = ecells[None]
    e_all = {name: ecells.get(name, Cell(status="not run")) for name in IMPLS}
    e_stock, e_fx = e_all["stock"], e_all["fxinplace"]

    def overhead(c: Cell) -> str:
        if c.median is None or plain.median is None:
            return "-"
        return f"{(c.median - plain.median) / synthetic.ops * 1e6:.2f} us"

    eager_headers = [
        "program",
        "ATen ops",
        "plain eager",
        "stock",
        "fxinplace",
        "fx / stock",
        "added over plain (stock / fx)",
        "matches (stock / fx)",
    ]
    eager_rows = [
        [
            synthetic.name,
            str(synthetic.ops),
            plain.text(per_op=synthetic.ops),
            e_stock.text(per_op=synthetic.ops),
            e_fx.text(per_op=synthetic.ops),
            fmt_ratio(e_fx.median, e_stock.median),
            f"{overhead(e_stock)} / {overhead(e_fx)}",
            f"{e_stock.match_text()} / {e_fx.match_text()}",
        ]
    ]
    trace_table = markdown_table(trace_headers, trace_rows)
    eager_table = markdown_table(eager_headers, eager_rows)
    missing = [name for name in ns.impls if name not in impls]
    runs = (
        "1 run"
        if ns.repeat == 1
        else f"median of up to {ns.repeat}, fewer once they add up to {ns.budget:.0f} s"
    )
    print(f"## Trace time: make_fx(functionalize(f)) ({runs})\n\n{trace_table}\n")
    print(f"## Eager functionalization, per ATen op (median of {ns.eager_repeat})\n\n{eager_table}")
    for name in missing:
        print(f"\n{name}: not available, not measured")
    for f in failures:
        print(f"\nFAILURE: {f}")

    if ns.markdown is not None:
        cmd = "python benchmarks/bench_functionalize.py " + " ".join(sys.argv[1:] if argv is None else argv)
        ns.markdown.write_text(
            "# fxinplace.functionalize vs torch.func.functionalize\n\n"
            f"`{cmd.strip()}` on {datetime.date.today().isoformat()}: torch {torch.__version__}, "
            f"Python {platform.python_version()}, {os.cpu_count()} CPU cores "
            f"({torch.get_num_threads()} torch threads), {platform.machine()}; remove={ns.remove!r}; "
            f"whole run {elapsed / 60:.1f} min."
            + "".join(f" {name}: not available, not measured." for name in missing)
            + f"\n\n## Trace time: `make_fx(functionalize(f))(*args)` ({runs})\n\n"
            f"{trace_table}\n\n"
            "- tracing_mode 'real': the real ops run during the trace as well (for GPT-2 small "
            "that is part of the time, the same for every implementation). Runs of the "
            "implementations are interleaved; each starts after `gc.collect()`.\n"
            "- *ATen ops*: ops one plain eager run of the program dispatches. *fx / stock*: "
            "fxinplace's time over stock's (below 1: fxinplace is faster).\n"
            "- *nodes*: nodes of the traced graph (placeholders and output included); *in-place "
            "nodes*: those whose op has a mutable schema (`copy_` into a mutated input, ...).\n"
            "- *matches*: the graph's output and the inputs' final values equal the plain eager "
            "program's on fresh copies of the args.\n"
            "- The synthetic program, each iteration on a 4x4 tensor `y`: `row = y[r]; "
            "row.add_(1); y.t()[r].mul_(0.5); y.mul_(1.0001); y = y.sub(row, alpha=0.5)` "
            "(in-place ops on a view, a view of a view and the base, and a read of a view made "
            "stale by the base's mutation), after `y = x.clone()` and before "
            "`x.diagonal().add_(1)` (an input mutation).\n"
            f"\n## Eager functionalization, per ATen op (median of {ns.eager_repeat})\n\n"
            f"{eager_table}\n\n"
            "- `impl(f, remove=...)(*args)` run directly (no make_fx) on the synthetic program; "
            "time of a run over its ATen op count. *plain eager*: the program itself, no "
            "functionalization. *added over plain*: (impl - plain) per op.\n"
            + "".join(f"\n**FAILURE**: {f}\n" for f in failures)
        )
        log(f"wrote {ns.markdown}")
    log(f"whole run {elapsed / 60:.1f} min")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
