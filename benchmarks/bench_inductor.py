"""Inductor's re-inplacing pass vs fxinplace's native pass in its slot (`fxinplace.inductor`).

    python benchmarks/bench_inductor.py                  # everything, table to stdout
    python benchmarks/bench_inductor.py --save benchmarks/inductor_results.md

Three tables, one run, one machine:

1. Model graphs (the compile programs, captured at the slot): the time of each pass on
   copies of the same graph (offline, best of --repeat), the rewrites each makes
   (`in_place_writes`), and, inside real compiles (each in a fresh process and a fresh
   cache), the time spent in the slot, the whole compile, and the generated kernel count.
2. Big graphs: 20k-op pointwise chains, 28k-node scatter chains (`y = y * 2; y[i % 4] += 1`,
   functionalized), and a 24-layer GPT-2 inference graph captured at the slot: offline pass
   times and rewrites.
Bars (issue 10): >= 3x faster than Inductor's pass on every model graph, >= 20x on the
scatter chains, end-to-end compile time never worse, rewrites >= Inductor's everywhere.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODEL_PROGRAMS = (
    "gpt2_infer",
    "gpt2_train",
    "llama_infer",
    "llama_train",
    "bert_infer",
    "bert_train",
    "t5_infer",
    "t5_train",
    "batchnorm_train",
    "adamw_foreach",
    "kv_cache_decode",
    "cache_update_32mib",
)


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        best = min(best, fn())
    return best


def offline(graphs: list[Any], repeat: int) -> dict[str, Any]:
    """Both passes on copies of each captured graph: seconds (summed over the graphs,
    best of `repeat` each) and rewrites."""
    from fxinplace.testing.harness.inductor_parity import (
        in_place_writes,
        run_native_pass,
        run_stock_pass,
        updater,
    )

    totals = {"nodes": 0, "stock_s": 0.0, "native_s": 0.0, "stock_writes": 0, "native_writes": 0}
    worst_ratio = float("inf")
    for g in graphs:
        totals["nodes"] += len(g.gm.graph.nodes)
        timings = {}
        for key, run in (("stock", run_stock_pass), ("native", run_native_pass)):

            def once(run=run, key=key, g=g, timings=timings) -> float:
                gm = g.copy()
                before, epilogue_before = in_place_writes(gm.graph)
                fake_tensor_updater = updater(gm)  # post_grad makes it before the passes
                start = time.perf_counter()
                run(g, gm, fake_tensor_updater)
                seconds = time.perf_counter() - start
                after, epilogue_after = in_place_writes(gm.graph)
                timings[key + "_writes"] = after - before + epilogue_before - epilogue_after
                return seconds

            timings[key] = _best(once, repeat)
            totals[key + "_s"] += timings[key]
            totals[key + "_writes"] += timings[key + "_writes"]
        worst_ratio = min(worst_ratio, timings["stock"] / timings["native"])
    totals["graphs"] = len(graphs)
    totals["worst_graph_ratio"] = worst_ratio
    return totals


def one_compile(name: str, hook: bool, repeat: int) -> dict[str, Any]:
    """In this (fresh) process: compile and run `name` once with a fresh cache. Without
    the hook, also both passes offline on copies of the graphs that reached the slot."""
    import torch

    from fxinplace.testing.harness.compile_programs import program
    from fxinplace.testing.harness.inductor_parity import compile_and_run

    warm = torch.compile(lambda x: x.sin() + 1)  # imports and first-compile costs, not measured
    warm(torch.randn(4))
    setup = program(name).setup()
    captured: list[Any] | None = None if hook else []
    start = time.perf_counter()
    run = compile_and_run(setup.target, lambda fn: setup.step(fn), hook=hook, capture=captured)
    measured = {"compile_s": time.perf_counter() - start, "slot_s": run.pass_seconds, "kernels": run.kernels}
    if captured is not None:
        measured["offline"] = offline(captured, repeat)
    return measured


def in_fresh_process(name: str, hook: bool, repeat: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--one", name, "--hook", str(int(hook)), "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def model_rows(names: list[str], repeat: int) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        row: dict[str, Any] = {"program": name}
        for hook in (False, True):
            measured = in_fresh_process(name, hook, repeat)
            row.update(measured.pop("offline", {}))
            for k, v in measured.items():
                row[("native_" if hook else "stock_") + k] = v
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def big_rows(chain: int, scatter: int, layers: int, repeat: int) -> list[dict[str, Any]]:
    from fxinplace.testing import graphs
    from fxinplace.testing.harness.inductor_parity import SlotGraph, capture_slot_graphs

    def slot_graph(built: Any) -> SlotGraph:
        """Values of one fake mode, as a compile's graphs have (make_fx's real-mode trace
        records each node's value in a mode of its own)."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        factory, args = built
        gm = factory()
        mode = FakeTensorMode()
        FakeTensorProp(gm, mode).propagate(*[mode.from_tensor(a) for a in args])
        return SlotGraph(gm, mode)

    rows = []
    for label, build in (
        (f"pointwise chain, {chain} ops", lambda: [slot_graph(graphs.chain_graph(chain))]),
        (f"scatter chain, {scatter} nodes", lambda: [slot_graph(graphs.view_mutation_graph(scatter))]),
        (f"GPT-2 inference, {layers} layers", lambda: capture_slot_graphs(*_deep_gpt2(layers))),
    ):
        row = {"program": label, **offline(build(), repeat)}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def _deep_gpt2(layers: int) -> tuple[Any, Any]:
    import torch

    from fxinplace.testing.models import tiny_gpt2

    model = tiny_gpt2(layers=layers).eval()
    ids = torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))

    def run(fn: Any) -> Any:
        with torch.no_grad():
            return fn(input_ids=ids)

    return model, run


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "-"


def tables(models: list[dict[str, Any]], big: list[dict[str, Any]]) -> str:
    lines = [
        "### Model graphs (captured at Inductor's re-inplacing slot)",
        "",
        "| program | graphs | nodes | Inductor pass | fxinplace | speed-up (worst graph) | rewrites "
        "Inductor / fxinplace | in-compile slot: Inductor / fxinplace | compile: Inductor / with hook | "
        "kernels: Inductor / with hook |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in models:
        lines.append(
            f"| {r['program']} | {r['graphs']} | {r['nodes']} | {r['stock_s'] * 1e3:.1f} ms | "
            f"{r['native_s'] * 1e3:.1f} ms | {_ratio(r['stock_s'], r['native_s'])} "
            f"({r['worst_graph_ratio']:.1f}x) | {r['stock_writes']} / {r['native_writes']} | "
            f"{r['stock_slot_s'] * 1e3:.1f} / {r['native_slot_s'] * 1e3:.1f} ms | "
            f"{r['stock_compile_s']:.1f} / {r['native_compile_s']:.1f} s | "
            f"{r['stock_kernels']} / {r['native_kernels']} |"
        )
    lines += [
        "",
        "### Big graphs (offline, best of the repeats)",
        "",
        "| graph | nodes | Inductor pass | fxinplace | speed-up | rewrites Inductor / fxinplace |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in big:
        lines.append(
            f"| {r['program']} | {r['nodes']} | {r['stock_s']:.3f} s | {r['native_s']:.3f} s | "
            f"{_ratio(r['stock_s'], r['native_s'])} | {r['stock_writes']} / {r['native_writes']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--programs", nargs="*", default=list(MODEL_PROGRAMS))
    parser.add_argument("--chain", type=int, default=20000, help="ops in the pointwise chain")
    parser.add_argument("--scatter", type=int, default=28000, help="nodes in the scatter chain")
    parser.add_argument("--layers", type=int, default=24, help="layers of the deep GPT-2")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-big", action="store_true", help="skip the big graphs")
    parser.add_argument("--save", type=Path, help="also write the tables to this file")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--hook", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_compile(args.one, bool(args.hook), args.repeat)))
        return 0
    models = model_rows(args.programs, args.repeat)
    big = [] if args.no_big else big_rows(args.chain, args.scatter, args.layers, args.repeat)
    text = tables(models, big)
    print(text)
    if args.save:
        args.save.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
