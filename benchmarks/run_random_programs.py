"""Run the random-program differential check over many seeds, without pytest.

    python benchmarks/run_random_programs.py --count 10000 --start 0
    python benchmarks/run_random_programs.py --count 2000 --native stock   # self-check

For every seed, ``fxinplace.testing.random.stock_programs.generate(seed)`` gives a program the
stock implementations get right, and ``fxinplace.testing.harness.reinplace_differential.check_program``
compares the native pass against eager and against the stock pass (exactly what
``test/python/reinplace/test_random_programs.py`` does per seed). Prints progress every 500 programs
and a summary; exits non-zero if the native pass ever disagrees with eager, if its code differs from
the stock pass's where the stock pass is sound, or if a program could not be
checked at all (a generator or harness failure).

``--native stock`` uses the stock pass as the "native" pass: code always
matches, and native mismatches are exactly the programs where the stock pass
is unsound.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

try:
    import fxinplace  # noqa: F401
except ImportError:  # not installed: use the source tree
    sys.path.insert(0, str(ROOT / "python"))

from fxinplace.testing.harness import reinplace_differential as differential  # noqa: E402
from fxinplace.testing.harness.campaign import add_seed_arguments  # noqa: E402
from fxinplace.testing.harness.oracle import format_exc  # noqa: E402
from fxinplace.testing.random.stock_programs import generate  # noqa: E402

# Problems reported by check_program that are about the program itself (the
# un-reinplaced functionalized graph disagrees with eager), not about a pass.
_ORACLE_PREFIX = ("un-reinplaced graph",)


@dataclasses.dataclass
class Result:
    seed: int
    stock_sound: bool = False
    native_ok: bool = False
    code_match: bool | None = None
    divergence: str | None = None  # explained, deliberate difference from stock's code
    invalid_program: bool = False  # generator/functionalize/harness failure
    problems: list[str] = dataclasses.field(default_factory=list)
    stock_problems: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0


_NATIVE: Callable[..., Any] | None = None
_MAX_STMTS = 10


def _init_worker(native: str, max_stmts: int) -> None:
    global _NATIVE, _MAX_STMTS
    # The stock pass tries view replays that fail by design; FakeTensor logs
    # each failure at ERROR level (same as test/python/conftest.py).
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)
    if native == "stock":
        _NATIVE = differential.stock_reinplace
    else:
        import fxinplace

        _NATIVE = fxinplace.reinplace
    _MAX_STMTS = max_stmts


def _check_seed(seed: int) -> Result:
    t0 = time.perf_counter()
    res = Result(seed=seed)
    try:
        program = generate(seed, max_stmts=_MAX_STMTS)
        outcome = differential.check_program(
            program.fn, program.make_args, name=f"seed {seed}", native=_NATIVE
        )
    except Exception as exc:  # generate, eager run or tracing failed
        res.invalid_program = True
        res.problems.append("could not check: " + format_exc(exc))
    else:
        res.stock_sound = outcome.stock_sound
        res.native_ok = outcome.native_ok
        res.code_match = outcome.code_match
        res.divergence = outcome.divergence
        res.problems = list(outcome.problems)
        res.stock_problems = list(outcome.stock_problems)
        res.invalid_program = any(p.startswith(_ORACLE_PREFIX) for p in outcome.problems)
    res.seconds = time.perf_counter() - t0
    return res


def _run(seeds: range, native: str, jobs: int, max_stmts: int) -> Iterator[Result]:
    if jobs <= 1:
        _init_worker(native, max_stmts)
        yield from map(_check_seed, seeds)
        return
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    with ctx.Pool(jobs, initializer=_init_worker, initargs=(native, max_stmts)) as pool:
        yield from pool.imap(_check_seed, seeds, chunksize=4)


def _print_examples(title: str, results: list[Result], show: int, max_stmts: int) -> None:
    if not results:
        return
    seeds = [r.seed for r in results]
    listed = ", ".join(str(s) for s in seeds[:50]) + (" ..." if len(seeds) > 50 else "")
    print(f"\n{title}: {len(results)} (seeds: {listed})")
    for r in results[:show]:
        print(f"\n---- seed {r.seed} ----")
        for p in r.problems[:4]:
            print("  problem: " + _clip(p))
        if not r.problems and r.stock_problems:
            for p in r.stock_problems[:2]:
                print("  stock problem: " + _clip(p))
        print(generate(r.seed, max_stmts=max_stmts).source.rstrip())


def _clip(text: str, limit: int = 1500) -> str:
    text = text.rstrip()
    return text if len(text) <= limit else text[:limit] + " [...]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_seed_arguments(ap, count=10000, progress=500)
    ap.add_argument(
        "--native",
        choices=("fxinplace", "stock"),
        default="fxinplace",
        help="pass under test: fxinplace.reinplace (default) or the stock pass as a stand-in",
    )
    ap.add_argument("--max-stmts", type=int, default=10, help="generator max_stmts (default 10)")
    ap.add_argument("--show", type=int, default=3, help="programs printed per failure category")
    args = ap.parse_args(argv)

    seeds = range(args.start, args.start + args.count)
    print(
        f"checking {len(seeds)} programs (seeds {seeds.start}..{seeds.stop - 1}), "
        f"native={args.native}, jobs={args.jobs}, max_stmts={args.max_stmts}",
        flush=True,
    )
    t0 = time.perf_counter()
    results: list[Result] = []
    for res in _run(seeds, args.native, args.jobs, args.max_stmts):
        results.append(res)
        n = len(results)
        if args.progress > 0 and (n % args.progress == 0 or n == len(seeds)):
            bad = sum(1 for r in results if not r.native_ok)
            diff = sum(1 for r in results if r.code_match is False and r.divergence is None)
            print(
                f"  [{n}/{len(seeds)}] {time.perf_counter() - t0:.1f}s  "
                f"native mismatches={bad}  code mismatches (stock sound)={diff}",
                flush=True,
            )
    elapsed = time.perf_counter() - t0

    invalid = [r for r in results if r.invalid_program]
    native_bad = [r for r in results if not r.native_ok and not r.invalid_program]
    stock_unsound = [r for r in results if not r.stock_sound and not r.invalid_program]
    stock_sound = [r for r in results if r.stock_sound]
    code_same = [r for r in stock_sound if r.code_match is True]
    code_diff = [r for r in stock_sound if r.code_match is False and r.divergence is None]
    explained = [r for r in stock_sound if r.code_match is False and r.divergence is not None]
    slowest = max(results, key=lambda r: r.seconds) if results else None

    print("\n==== summary ====")
    print(f"programs:                               {len(results)}")
    print(
        f"time:                                   {elapsed:.1f}s ({elapsed / max(1, len(results)):.3f}s each)"
    )
    if slowest is not None:
        print(f"slowest program:                        seed {slowest.seed} ({slowest.seconds:.2f}s)")
    print(f"invalid programs (generator/harness):   {len(invalid)}")
    print(f"native mismatches vs eager:             {len(native_bad)}")
    print(f"stock unsound:                          {len(stock_unsound)}")
    print(f"stock sound:                            {len(stock_sound)}")
    print(f"  code matches where stock sound:       {len(code_same)}")
    print(f"  explained divergences (stock gap):    {len(explained)}")
    print(f"  code mismatches where stock sound:    {len(code_diff)}")
    kinds: dict[str, list[int]] = {}
    for r in explained:
        kind = r.divergence.split("; ")[-1] if "; " in r.divergence else r.divergence
        kinds.setdefault(kind, []).append(r.seed)
    for kind, seeds_of_kind in sorted(kinds.items()):
        print(f"    {len(seeds_of_kind):5d}  {kind}  (e.g. seeds {', '.join(map(str, seeds_of_kind[:5]))})")

    _print_examples("INVALID PROGRAMS", invalid, args.show, args.max_stmts)
    _print_examples("NATIVE MISMATCHES VS EAGER", native_bad, args.show, args.max_stmts)
    _print_examples("CODE MISMATCHES WHERE STOCK IS SOUND", code_diff, args.show, args.max_stmts)
    if args.native == "fxinplace":
        _print_examples("stock unsound (informational)", stock_unsound, min(args.show, 1), args.max_stmts)
    else:
        seeds_txt = ", ".join(str(r.seed) for r in stock_unsound[:50])
        print(f"\nstock unsound seeds: {seeds_txt}{' ...' if len(stock_unsound) > 50 else ''}")

    failed = bool(invalid or native_bad or code_diff)
    print("\nFAIL" if failed else "\nOK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
