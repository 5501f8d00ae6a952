"""torch.compile backends on programs users compile: memory, step time, compile time.

    python benchmarks/bench_compile.py                      # eager, aot_eager, fxinplace
    python benchmarks/bench_compile.py --inductor           # and inductor, for reference (slow)
    python benchmarks/bench_compile.py --programs cache_update_32mib gpt2_train

For each program of ``fxinplace.testing.harness.compile_programs`` and each backend, in one process
on fresh, equal state: two warm-up steps (compiling both input sizes), then one measured
step: the peak of bytes live during the step, the bytes allocated and the number of
allocations (``fxinplace.testing.harness.memory``: the profiler's allocation records), and the
step time (median of --repeat steps). ``fxinplace+plan`` is the backend with
``memory_plan=True`` (dead buffers reused through out= kernels). For fxinplace, the time of
the pass itself against AOTAutograd's own time (its tracing and partitioning, the pass
excluded). Every compiled step is checked against eager (values of outputs, gradients,
buffers, optimizer state).

Bars (issue 9): on the cache update, fxinplace's bytes allocated <= 10% of the cache;
bytes allocated <= 0.7x aot_eager on every training step; peak <= aot_eager's on every
program; the pass <= 10% of AOTAutograd's time. The table is printed and written to
benchmarks/compile_results.md.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import platform
import statistics
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

import fxinplace.compile as fx_compile
from fxinplace.testing.harness.compile_programs import PROGRAMS, WIDE_PROGRAMS, CompileProgram
from fxinplace.testing.harness.memory import MemoryStats, measure
from fxinplace.testing.tables import markdown_table

OUT = Path(__file__).resolve().parent / "compile_results.md"


class _CompileClock:
    """Seconds in AOTAutograd (aot_module_simplified, compilers included) and in the pass."""

    def __init__(self) -> None:
        self.aot = 0.0
        self.fxinplace_pass = 0.0

    def _timed(self, fn: Callable[..., Any], counter: str) -> Callable[..., Any]:
        """`fn`, adding the seconds each call takes to `self.<counter>`."""

        def timed(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                setattr(self, counter, getattr(self, counter) + time.perf_counter() - t)

        return timed

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import torch._dynamo.backends.common as common

        aot, report = common.aot_module_simplified, fx_compile.reinplace_report
        timed_aot, timed_pass = self._timed(aot, "aot"), self._timed(report, "fxinplace_pass")
        common.aot_module_simplified, fx_compile.reinplace_report = timed_aot, timed_pass
        try:
            yield
        finally:
            common.aot_module_simplified, fx_compile.reinplace_report = aot, report


def aot_nop():
    """AOTAutograd as the fxinplace backend runs it, without the pass: isolates the pass.
    (aot_eager runs its graphs through torch's DebugInterpreter, which checks every node's
    metadata at run time: its step times are not the graphs' own.)"""
    return fx_compile.make_backend(policy="none")


def _matches(want: dict[str, torch.Tensor], got: dict[str, torch.Tensor]) -> bool:
    return want.keys() == got.keys() and all(
        torch.allclose(want[k], got[k], rtol=1e-4, atol=1e-5, equal_nan=True) for k in want
    )


def run_backend(p: CompileProgram, backend: str, repeat: int) -> dict[str, Any]:
    torch._dynamo.reset()
    reference = p.setup()
    want = [reference.step(reference.target) for _ in range(3)]
    s = p.setup()
    clock = _CompileClock()
    # Inductor draws dropout's random numbers from ATen's generator, as eager does.
    random: Any = contextlib.nullcontext()
    if backend == "inductor":
        from torch._inductor import config as inductor_config

        random = inductor_config.patch(fallback_random=True)
    with clock.installed(), random:
        compiled_by: Any = backend
        if backend == "aot_nop":
            compiled_by = aot_nop()
        elif backend == "fxinplace+plan":
            compiled_by = fx_compile.make_backend(memory_plan=True)
        fn = s.target if backend == "eager" else torch.compile(s.target, backend=compiled_by)
        t = time.perf_counter()
        got = [s.step(fn) for _ in range(2)]
        first_steps = time.perf_counter() - t
    stats, last = measure(lambda: s.run(fn))
    got.append(s.observe(last))
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        s.step(fn)
        times.append(time.perf_counter() - t)
    return {
        "stats": stats,
        "step_s": statistics.median(times),
        "first_steps_s": first_steps,
        "aot_s": clock.aot - clock.fxinplace_pass,
        "pass_s": clock.fxinplace_pass,
        "correct": all(_matches(w, g) for w, g in zip(want, got, strict=True)),
    }


def _mib(n: int) -> str:
    return f"{n / 2**20:.2f}"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--programs",
        nargs="+",
        choices=[p.name for p in (*PROGRAMS, *WIDE_PROGRAMS)],
        help="default: every program but the mid-size (512-wide) ones, which take minutes",
    )
    parser.add_argument("--inductor", action="store_true", help="also run inductor (slow to compile)")
    parser.add_argument("--repeat", type=int, default=5, help="timed steps per backend (median)")
    parser.add_argument("--no-write", action="store_true", help=f"do not write {OUT.name}")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    backends = ["eager", "aot_eager", "aot_nop", "fxinplace", "fxinplace+plan"]
    backends += ["inductor"] if args.inductor else []
    programs = [
        p for p in (*PROGRAMS, *WIDE_PROGRAMS) if p.name in (args.programs or [q.name for q in PROGRAMS])
    ]
    rows, bars = [], []
    for p in programs:
        results = {b: run_backend(p, b, args.repeat) for b in backends}
        aot, ours = results["aot_eager"], results["fxinplace"]
        for b, r in results.items():
            st: MemoryStats = r["stats"]
            rows.append(
                [
                    p.name,
                    b,
                    _mib(st.peak_live_bytes),
                    _mib(st.allocated_bytes),
                    str(st.allocations),
                    f"{r['step_s'] * 1e3:.2f}",
                    _ratio(st.allocated_bytes, aot["stats"].allocated_bytes) if b != "aot_eager" else "1.00x",
                    f"{r['pass_s']:.3f} / {r['aot_s']:.2f}" if b.startswith("fxinplace") else "",
                    "yes" if r["correct"] else "NO",
                ]
            )
        o, a = ours["stats"], aot["stats"]
        bars.append((p.name, "peak <= aot_eager", o.peak_live_bytes <= a.peak_live_bytes))
        bars.append((p.name, "pass <= 10% of AOTAutograd", ours["pass_s"] <= 0.1 * ours["aot_s"]))
        if p.kind == "train":
            bars.append((p.name, "allocated <= 0.7x aot_eager", o.allocated_bytes <= 0.7 * a.allocated_bytes))
        if p.name.startswith("cache_update"):
            cache = 32 * 2**20
            bars.append((p.name, "allocated <= 10% of the cache", o.allocated_bytes <= 0.1 * cache))
        print(f"{p.name}: done", flush=True)
    header = [
        "program",
        "backend",
        "peak MiB",
        "allocated MiB",
        "allocations",
        "step ms",
        "allocated / aot_eager",
        "pass s / AOT s",
        "= eager",
    ]
    table = markdown_table(header, rows)
    bar_table = markdown_table(
        ["program", "bar", "met"], [[n, b, "yes" if ok else "NO"] for n, b, ok in bars]
    )
    text = (
        f"# torch.compile backends ({datetime.date.today()}, torch {torch.__version__}, "
        f"{platform.machine()}, {torch.get_num_threads()} threads)\n\n{table}\n\n## Bars\n\n{bar_table}\n"
    )
    print(text)
    if not args.no_write:
        OUT.write_text(text)
    return 0 if all(ok for _, _, ok in bars) else 1


if __name__ == "__main__":
    raise SystemExit(main())
