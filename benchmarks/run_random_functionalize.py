"""Run the random-program check of ``fxinplace.functionalize`` over many seeds, without pytest.

    python benchmarks/run_random_functionalize.py --count 2000 --start 0

For every seed and both ``remove`` modes, the program from
``fxinplace.testing.random.stock_programs.generate(seed)`` goes through
``fxinplace.testing.harness.functionalize_differential.check_functionalize`` (what
``test/python/functionalize/test_functionalize_random.py`` does per seed): eager outputs and
input mutations, no mutating op but the trailing write-backs in the ``make_fx``
graph (real and fake tracing), no view op with ``mutations_and_views``, and the
graph agreeing with eager. Exits non-zero if any program fails.
"""

from __future__ import annotations

import argparse
import sys
import time

import fxinplace
from fxinplace.testing.harness.campaign import add_seed_arguments
from fxinplace.testing.harness.functionalize_differential import (
    REMOVE_MODES,
    FunctionalizeCase,
    check_functionalize,
    format_problems,
)
from fxinplace.testing.random.stock_programs import generate


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_seed_arguments(ap, count=1000, jobs=False)
    ap.add_argument("--show", type=int, default=3, help="failing programs printed in full")
    args = ap.parse_args(argv)

    started = time.perf_counter()
    failures = 0
    for seed in range(args.start, args.start + args.count):
        program = generate(seed)
        case = FunctionalizeCase(f"gen_seed_{seed}", program.fn, program.make_args)
        for remove in REMOVE_MODES:
            problems = check_functionalize(case, fxinplace.functionalize, remove, check_stock=False)
            if problems:
                failures += 1
                if failures <= args.show:
                    print(format_problems(case, remove, problems, extra=program.source))
        done = seed - args.start + 1
        if done % 250 == 0:
            print(f"{done} programs, {failures} failures, {time.perf_counter() - started:.0f} s", flush=True)
    print(f"seeds {args.start}..{args.start + args.count - 1}: {failures} failing (program, mode) pairs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
