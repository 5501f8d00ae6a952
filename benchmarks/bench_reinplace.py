"""Stock torch.fx.passes.reinplace.reinplace vs fxinplace.reinplace, in one process.

    python benchmarks/bench_reinplace.py                 # full run (~5-10 min on 2 cores)
    python benchmarks/bench_reinplace.py --quick         # 1k / 10k sizes and the models
    python benchmarks/bench_reinplace.py --sizes 1000 30000 --stock-cap 60

Graphs: a chain of add/mul/relu and a view-mutation program (select / select_scatter)
at each size, and small GPT-2 and Llama configs with random weights (forward, and a
forward + backward training step). For each: node count, each pass's time (the median
of up to 5 runs, fewer once they add up to 3 s), speedup, ops reinplaced and scatter
nodes removed by each pass, gm.recompile() time on the same graph (median of 3) and
fxinplace's time over it, and whether each result computes what the un-reinplaced
graph computes (outputs and the inputs' final values, on fresh copies of the sample
args).

The stock pass is quadratic in graph size. Before each run its time is estimated from
the two largest graphs of the same family it already ran on (power law, exponent 2 to
3; for the smallest size, from two small probe graphs), and it is skipped when the
estimate exceeds --stock-cap; a run that goes over twice the cap anyway is
interrupted ("timed out").

The table is printed and written to benchmarks/results.md.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from fxinplace.testing import graphs
from fxinplace.testing.harness.compare import Comparison, compare, quiet_stock_logs
from fxinplace.testing.tables import (
    fmt_count,
    fmt_match,
    fmt_pass_time,
    fmt_ratio,
    fmt_seconds,
    markdown_table,
)

FULL_SIZES = [1000, 10000, 30000, 100000]
QUICK_SIZES = [1000, 10000]
PROBE_SIZES = [250, 500]
FAMILIES: dict[str, Callable[[int], graphs.GraphBuilder]] = {
    "chain": graphs.chain_graph,
    "view-mutation": graphs.view_mutation_graph,
}
MODELS: list[tuple[str, Callable[[], graphs.GraphBuilder]]] = [
    ("gpt2", lambda: graphs.gpt2_graph()),
    ("llama", lambda: graphs.llama_graph()),
    ("gpt2 train step", lambda: graphs.gpt2_graph(with_training_step=True)),
    ("llama train step", lambda: graphs.llama_graph(with_training_step=True)),
]
RESULTS = Path(__file__).resolve().parent / "results.md"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class StockEstimator:
    """Power-law extrapolation of the stock pass's time within one graph family.

    The exponent comes from the two largest measured graphs, clamped to [2, 3]: the
    stock pass scans the later nodes for every node, so it is quadratic at heart even
    where small graphs look near-linear (the chain measured 1.5 from 1k to 10k nodes,
    then above 2 from 10k to 30k).
    """

    def __init__(self) -> None:
        self.points: list[tuple[int, float]] = []

    def add(self, nodes: int, seconds: float) -> None:
        self.points.append((nodes, seconds))
        self.points.sort()

    def estimate(self, nodes: int) -> float | None:
        if not self.points:
            return None
        if len(self.points) == 1:
            (n1, t1), k = self.points[0], 2.0
        else:
            (n0, t0), (n1, t1) = self.points[-2], self.points[-1]
            k = math.log(max(t1, 1e-6) / max(t0, 1e-6)) / math.log(n1 / n0) if n1 != n0 else 2.0
            k = min(max(k, 2.0), 3.0)
        return t1 * (nodes / n1) ** k


def probe(family: Callable[[int], graphs.GraphBuilder], est: StockEstimator) -> None:
    from torch.fx.passes.reinplace import reinplace

    for n in PROBE_SIZES:
        make_gm, args = family(n)
        gm = make_gm()
        nodes = len(gm.graph.nodes)
        t = time.perf_counter()
        reinplace(gm, *args)
        est.add(nodes, time.perf_counter() - t)


def row(c: Comparison, stock_note: str) -> list[str]:
    native_over_recompile = (
        f"{c.native.seconds / c.recompile_s:.1f}x" if c.recompile_s and c.native.seconds else "-"
    )
    return [
        c.name,
        str(c.nodes),
        fmt_pass_time(c.stock, stock_note),
        fmt_pass_time(c.native),
        fmt_ratio(c.ratio),
        f"{fmt_count(c.stock, 'reinplaced')} / {fmt_count(c.native, 'reinplaced')}",
        f"{fmt_count(c.stock, 'scatters_removed')} / {fmt_count(c.native, 'scatters_removed')}"
        f" (of {c.scatters})",
        fmt_seconds(c.recompile_s),
        native_over_recompile,
        f"{fmt_match(c.stock)} / {fmt_match(c.native)}",
    ]


HEADERS = [
    "graph",
    "nodes",
    "stock",
    "fxinplace",
    "speedup",
    "reinplaced (stock / fx)",
    "scatters removed (stock / fx)",
    "recompile",
    "fx / recompile",
    "matches (stock / fx)",
]


def run_one(
    name: str,
    build: Callable[[], graphs.GraphBuilder],
    est: StockEstimator | None,
    cap: float,
    failures: list[str],
) -> list[str]:
    log(f"[{time.strftime('%H:%M:%S')}] {name}: building")
    t = time.perf_counter()
    make_gm, args = build()
    nodes = len(make_gm().graph.nodes)
    log(f"    {nodes} nodes, built in {time.perf_counter() - t:.1f} s")
    estimate = est.estimate(nodes) if est is not None else None
    run_stock = estimate is None or estimate <= cap
    note = "" if run_stock else f" (> cap; est. {estimate:.0f} s)"
    if estimate is not None:
        log(f"    stock estimate {estimate:.1f} s -> {'run' if run_stock else 'skip'}")

    def step(label: str) -> None:
        log(f"    {label}")

    c = compare(
        name,
        make_gm,
        args,
        run_stock=run_stock,
        stock_limit=2 * cap,
        recompile_runs=3,
        repeats=5,
        step=step,
    )
    if est is not None and c.stock.status == "ok" and c.stock.seconds is not None:
        est.add(c.nodes, c.stock.seconds)
    for label, r in (("stock", c.stock), ("fxinplace", c.native)):
        if r.status == "error":
            failures.append(f"{label} on {name}: {r.error}")
        elif r.status == "ok" and r.mismatch is not None:
            failures.append(f"{label} on {name}: result differs: {r.mismatch}")
    result = row(c, note)
    log("    " + " | ".join(result))
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", help=f"chain / view graph sizes ({FULL_SIZES})")
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES} and the models")
    parser.add_argument(
        "--stock-cap",
        type=float,
        default=120.0,
        help="skip the stock pass where its estimated time exceeds this many seconds (120)",
    )
    parser.add_argument("--no-models", action="store_true", help="synthetic graphs only")
    parser.add_argument("--output", type=Path, default=RESULTS, help="Markdown file to write")
    ns = parser.parse_args(argv)
    sizes = ns.sizes or (QUICK_SIZES if ns.quick else FULL_SIZES)
    quiet_stock_logs()
    torch.manual_seed(0)

    started = time.perf_counter()
    rows: list[list[str]] = []
    failures: list[str] = []
    for family_name, family in FAMILIES.items():
        est = StockEstimator()
        log(f"{family_name}: probing the stock pass at {PROBE_SIZES} nodes")
        probe(family, est)
        for n in sorted(sizes):
            rows.append(
                run_one(
                    f"{family_name} {n // 1000}k" if n % 1000 == 0 else f"{family_name} {n}",
                    lambda n=n, family=family: family(n),
                    est,
                    ns.stock_cap,
                    failures,
                )
            )
    if not ns.no_models:
        for name, build in MODELS:
            rows.append(run_one(name, build, None, ns.stock_cap, failures))
    elapsed = time.perf_counter() - started

    table = markdown_table(HEADERS, rows)
    print(table)
    for f in failures:
        print(f"\nFAILURE: {f}")
    cmd = "python benchmarks/bench_reinplace.py " + " ".join(sys.argv[1:] if argv is None else argv)
    ns.output.write_text(
        "# fxinplace vs torch.fx.passes.reinplace\n\n"
        f"`{cmd.strip()}` on {datetime.date.today().isoformat()}: torch {torch.__version__}, "
        f"Python {platform.python_version()}, {os.cpu_count()} CPU cores, {platform.machine()}; "
        f"stock cap {ns.stock_cap:.0f} s; whole run {elapsed / 60:.1f} min.\n\n"
        f"{table}\n\n"
        "- *stock* / *fxinplace*: wall time of the pass on a fresh copy of the graph, recompile "
        "included (median of up to 5 runs, fewer once they add up to 3 s). *speedup*: stock / "
        "fxinplace.\n"
        "- *skipped (> cap)*: the stock pass's time, extrapolated from smaller graphs of the same "
        "family (power law, exponent 2 to 3), exceeds the cap. *timed out*: it ran, and was "
        "interrupted at twice the cap.\n"
        "- *reinplaced*: nodes of the original graph whose target is in-place (`add_`, ...) after "
        "the pass; inserted `copy_` nodes not counted. *scatters removed*: `*_scatter` nodes before "
        "minus after (removed outright or turned into a view + `copy_`).\n"
        "- *recompile*: `gm.recompile()` on the same graph, median of 3; *fx / recompile*: "
        "fxinplace's time over it (the pass recompiles once itself).\n"
        "- *matches*: the re-inplaced graph's outputs and the inputs' final values equal the "
        "un-reinplaced graph's on fresh copies of the sample args.\n"
        + "".join(f"\n**FAILURE**: {f}\n" for f in failures)
    )
    log(f"wrote {ns.output} ({elapsed / 60:.1f} min)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
