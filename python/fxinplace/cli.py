"""`python -m fxinplace`: the native pass next to the stock one, on your graphs or ours.

    python -m fxinplace bench                           # GPT-2 (small config, random weights)
    python -m fxinplace bench --model llama --train
    python -m fxinplace bench --model chain --nodes 10000
    python -m fxinplace bench --program saved.pt2       # a torch.export.save'd program
    python -m fxinplace explain --function mypkg.mod:f --inputs 4x4,4:int64
    python -m fxinplace memory --model llama --train --plot live.png

`bench` runs torch.fx.passes.reinplace.reinplace and fxinplace.reinplace on fresh
copies of the functional graph and prints what each did, how long each took,
whether fxinplace's code is the stock pass's (the drop-in claim) and whether each
result computes what the un-rewritten graph and the eager program compute.
Exit status: 0 when everything matches, 1 on a mismatch, 2 when a pass raised.
`explain` prints fxinplace's decision, and its reason, for every candidate node.
`memory` runs the functional graph (as aot_eager runs its graphs), the graph re-inplaced as
the compile backend does it, and the same with the memory plan, and prints the bytes each
holds at each node (and draws them with --plot, which needs matplotlib: `fxinplace[plot]`).

The built-in models need `pip install fxinplace[bench]` (transformers).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from fxinplace.testing import sources, tables
from fxinplace.testing.harness.compare import compare


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive integer")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def _source(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> sources.GraphSource:
    """The graph the command runs on; argparse errors for arguments that do not fit together."""
    if ns.program and ns.function:
        parser.error("give --program or --function, not both")
    if ns.inputs and not ns.function:
        parser.error("--inputs goes with --function")
    if (ns.program or ns.function) and (ns.model or ns.nodes or ns.train or ns.functionalize != "stock"):
        parser.error("--model/--nodes/--train/--functionalize are for the built-in graphs")
    model = ns.model or "gpt2"
    if ns.nodes is not None and model not in ("chain", "view"):
        parser.error("--nodes is for the chain and view graphs")
    if ns.train and model not in ("gpt2", "llama"):
        parser.error("--train is for the gpt2 and llama graphs")
    if ns.functionalize == "fxinplace" and (ns.train or model not in ("gpt2", "llama")):
        parser.error("--functionalize fxinplace records the gpt2/llama inference graphs (not --train)")
    try:
        if ns.program:
            return sources.from_exported(ns.program)
        if ns.function:
            return sources.from_function(ns.function, ns.inputs or "")
        return sources.builtin(model, ns.nodes, train=ns.train, functionalize=ns.functionalize)
    except ModuleNotFoundError as e:
        if e.name == "transformers":
            parser.error("the built-in models need transformers: pip install 'fxinplace[bench]'")
        parser.error(f"cannot import {e.name}: {e}")
    except (OSError, ValueError, AttributeError, RuntimeError, IndexError, TypeError) as e:
        what = ns.program or ns.function or model
        parser.error(f"cannot get the graph of {what}: {type(e).__name__}: {e}")


@contextlib.contextmanager
def _progress(total: int, name: str) -> Iterator[Callable[[str], None]]:
    """step(label) as each step starts; a bar on stderr only when it is a terminal and tqdm is there."""
    bar: Any = None
    if sys.stderr.isatty():
        try:
            from tqdm import tqdm

            bar = tqdm(total=total, file=sys.stderr, leave=False, unit="step")
        except ImportError:
            bar = None
    started: list[str] = []

    def step(label: str) -> None:
        if bar is not None:
            if started:
                bar.update(1)
            bar.set_description(f"{name}: {label}")
        started.append(label)

    try:
        yield step
    finally:
        if bar is not None:
            bar.close()


def cmd_bench(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    run_stock = not ns.no_stock
    with _progress(5 if run_stock else 4, "bench") as step:
        step("tracing")
        src = _source(ns, parser)
        c = compare(
            src.name,
            src.make_gm,
            src.args,
            run_stock=run_stock,
            stock_limit=ns.stock_timeout,
            recompile_runs=3,
            repeats=ns.repeat,
            step=step,
            eager=src.eager,
        )
    same_code = {None: "-", True: "yes", False: "no"}[c.same_code]
    runs = (c.stock, c.native)
    rows = [
        ["nodes", str(c.nodes), str(c.nodes)],
        ["scatter nodes before", str(c.scatters), str(c.scatters)],
        ["ops reinplaced", *(tables.fmt_count(run, "reinplaced") for run in runs)],
        ["scatters removed", *(tables.fmt_count(run, "scatters_removed") for run in runs)],
        ["pass time", *map(tables.fmt_pass_time, runs)],
        ["speedup (stock / fxinplace)", "", tables.fmt_ratio(c.ratio)],
        ["gm.recompile() (median of 3)", "", tables.fmt_seconds(c.recompile_s)],
        ["same code as the stock pass", "", same_code],
        [
            "results match " + ("the graph and eager" if c.eager_checked else "the graph"),
            *map(tables.fmt_match, runs),
        ],
    ]
    print(f"## {c.name}\n")
    print(f"torch {torch.__version__}; " + "; ".join(f"{k}: {v}" for k, v in src.details.items()) + "\n")
    print(tables.markdown_table(["", "stock", "fxinplace"], rows))
    if c.report is not None:
        print(
            f"\nfxinplace: {c.report.num_reinplaced} reinplaced, {c.report.num_scatters_removed} scatters "
            f"removed, {c.report.num_scatters_to_copy} scatters turned into copy_, "
            f"metadata path: {c.report.metadata_path}"
        )
    for label, run in (("stock", c.stock), ("native", c.native)):
        if run.status == "error":
            print(f"\n{label} pass raised on {c.name}: {run.error}", file=sys.stderr)
        elif run.mismatch or run.eager_mismatch:
            print(
                f"\n{label} pass result does not match on {c.name}: {run.mismatch or run.eager_mismatch}",
                file=sys.stderr,
            )
    if c.native.status == "error":
        return 2
    return 0 if c.matches else 1


def cmd_explain(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from fxinplace import reinplace_report

    src = _source(ns, parser)
    try:
        report = reinplace_report(src.make_gm(), *src.args)
    except Exception:
        traceback.print_exc()
        print(f"fxinplace.reinplace_report raised on {src.name}", file=sys.stderr)
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
    print(f"graph: {src.name}, {len(report.decisions)} nodes")
    print(
        f"reinplaced: {report.num_reinplaced}, scatters removed: {report.num_scatters_removed}, "
        f"scatters to copy_: {report.num_scatters_to_copy}, metadata path: {report.metadata_path}"
    )
    print("decisions: " + ", ".join(f"{k}={v}" for k, v in sorted(actions.items())))
    return 0


_MEMORY_VARIANTS = (
    ("functional", None),
    ("fxinplace", {"policy": "compile"}),
    ("fxinplace+plan", {"policy": "compile", "memory_plan": True}),
)


def cmd_memory(ns: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from fxinplace import reinplace
    from fxinplace.testing.harness.live_bytes import live_bytes

    if ns.plot:
        try:
            import matplotlib
        except ModuleNotFoundError:
            parser.error("--plot needs matplotlib: pip install 'fxinplace[plot]'")
        matplotlib.use("Agg")
    src = _source(ns, parser)
    timelines = {}
    for label, options in _MEMORY_VARIANTS:
        gm = src.make_gm()
        try:
            if options is not None:
                reinplace(gm, *src.args, **options)
            timelines[label] = live_bytes(gm, tuple(sources.fresh_args(src.args)))
        except Exception:
            traceback.print_exc()
            print(f"{label} raised on {src.name}", file=sys.stderr)
            return 2
    want = torch.utils._pytree.tree_leaves(timelines["functional"].result)
    same = {
        label: all(
            torch.equal(w, g) if isinstance(w, torch.Tensor) else w == g
            for w, g in zip(want, torch.utils._pytree.tree_leaves(t.result), strict=True)
        )
        for label, t in timelines.items()
    }
    print(f"graph: {src.name}, {len(timelines['functional'].names)} call nodes (the inputs are not counted)")
    rows = [
        [label, _mib(t.peak), _mib(t.allocated_bytes), str(t.allocations), "yes" if same[label] else "NO"]
        for label, t in timelines.items()
    ]
    print(tables.markdown_table(["graph", "peak MiB", "allocated MiB", "allocations", "= functional"], rows))
    print(f"\nbytes held at each node ({ns.width} columns, each the most held in its stretch of nodes):")
    top = max(t.peak for t in timelines.values()) or 1
    for label, t in timelines.items():
        print(f"{label:>15} |{_bars(t.live, ns.width, top)}|")
    if ns.plot:
        _plot(timelines, src.name, ns.plot)
        print(f"\nwrote {ns.plot}")
    return 0 if all(same.values()) else 1


def _mib(n: int) -> str:
    return f"{n / 2**20:.3f}"


def _bars(values: list[int], width: int, top: int) -> str:
    """One character per stretch of nodes, its height the stretch's maximum against `top`."""
    levels = " ▁▂▃▄▅▆▇█"
    if not values:
        return ""
    width = min(width, len(values))
    out = []
    for k in range(width):
        stretch = values[
            k * len(values) // width : max((k + 1) * len(values) // width, k * len(values) // width + 1)
        ]
        out.append(levels[round(max(stretch) / top * (len(levels) - 1))])
    return "".join(out)


def _plot(timelines: dict, title: str, path: str) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    for label, t in timelines.items():
        ax.step(range(len(t.live)), [b / 2**20 for b in t.live], where="post", label=label)
    ax.set_xlabel("node")
    ax.set_ylabel("MiB held")
    ax.set_title(f"{title}: bytes held at each node")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fxinplace", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def graph_args(p: argparse.ArgumentParser) -> None:
        g = p.add_argument_group("the graph (default: the built-in gpt2)")
        g.add_argument("--program", metavar="FILE.pt2", help="a program saved with torch.export.save")
        g.add_argument("--function", metavar="MODULE:FUNCTION", help="a function to trace (with --inputs)")
        g.add_argument("--inputs", metavar="SHAPES", help="its inputs, e.g. 4x4,8:int64,scalar:float64")
        g.add_argument(
            "--model",
            choices=["gpt2", "llama", "chain", "view"],
            help="a built-in graph: a small transformers model with random weights (gpt2, llama), "
            "or a synthetic chain / view-mutation graph",
        )
        g.add_argument("--nodes", type=_positive_int, help="size of the chain / view graph (1000)")
        g.add_argument("--train", action="store_true", help="gpt2/llama: forward + backward of a loss")
        g.add_argument(
            "--functionalize",
            choices=("stock", "fxinplace"),
            default="stock",
            help="who records a built-in model graph: torch.func.functionalize or fxinplace.functionalize",
        )

    bench = sub.add_parser("bench", help="run both passes on a graph and compare them")
    graph_args(bench)
    bench.add_argument("--no-stock", action="store_true", help="do not run the stock pass")
    bench.add_argument(
        "--stock-timeout",
        type=_positive_float,
        default=600.0,
        help="interrupt the stock pass after this many seconds (default 600)",
    )
    bench.add_argument(
        "--repeat",
        type=_positive_int,
        default=3,
        help="runs of each pass (fewer past 3 s), median reported (3)",
    )
    bench.set_defaults(func=cmd_bench)

    explain = sub.add_parser("explain", help="print fxinplace's decision for each candidate node")
    graph_args(explain)
    explain.add_argument("--lines", type=_positive_int, default=40, help="how many decision lines (40)")
    explain.add_argument("--all", action="store_true", help="include nodes that are not candidates")
    explain.set_defaults(func=cmd_explain)

    memory = sub.add_parser(
        "memory", help="bytes held at each node: the functional graph, re-inplaced, and with the memory plan"
    )
    graph_args(memory)
    memory.add_argument("--width", type=_positive_int, default=60, help="columns of the text timeline (60)")
    memory.add_argument("--plot", metavar="OUT.png", help="also draw the three timelines (needs matplotlib)")
    memory.set_defaults(func=cmd_memory)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    ns = parser.parse_args(argv)
    return ns.func(ns, parser)


if __name__ == "__main__":
    sys.exit(main())
