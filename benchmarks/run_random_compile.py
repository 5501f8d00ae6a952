"""Random programs through both torch.compile paths, without pytest: totals and failure groups.

    python benchmarks/run_random_compile.py --count 2000 --path both --jobs 2
    python benchmarks/run_random_compile.py --count 200 --path hook --minimize   # minimal repros
    python benchmarks/run_random_compile.py --count 100 --path backend --backend broken  # self-check
    python benchmarks/run_random_compile.py --count 500 --path hook --device cuda --no-families

For every seed, ``fxinplace.testing.harness.compile_pipelines.program_for(seed)`` (the random
generator's program, without lines eager rejects) runs through

* the **backend** path: ``torch.compile(f, backend="fxinplace", options={"check": True})``,
  compared bitwise with ``backend="aot_eager"``;
* the **hook** path: Inductor with ``fxinplace.inductor.installed(check=True)``, compared
  with Inductor whose re-inplacing pass does nothing;

each also at ``dynamic=True`` (compiled at the first size, called at the second) for every
``--dynamic-every``-th seed. Then (unless ``--no-families``) the optimizers of ``torch.optim``
with ``foreach=True`` and activation checkpointing run through the same paths
(``fxinplace.testing.harness.compile_families``).

Prints, per pipeline: programs, ok, wrong results attributed to fxinplace, internal errors,
clear errors, torch findings (the compiler wrong or raising without fxinplace: listed, not
failed) and skipped programs; then the failure groups with the smallest seed and its source
(minimised with ``--minimize``), and the torch findings. Exits non-zero on any failure
attributed to fxinplace. ``--backend broken`` plugs a deliberately unsound pass into the
backend path: the run must then report wrong results.
"""

from __future__ import annotations

import argparse
import functools
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:
    import fxinplace  # noqa: F401
except ImportError:  # not installed: use the source tree
    sys.path.insert(0, str(ROOT / "python"))

from fxinplace.testing.harness import campaign as sweep  # noqa: E402
from fxinplace.testing.harness.compile_families import CHECKPOINTS, OPTIMIZERS, check_family_case  # noqa: E402
from fxinplace.testing.harness.compile_pipelines import check_seed, minimized, program_for  # noqa: E402
from fxinplace.testing.harness.pipelines import CLEAR, LIMITATION, NOTE, SKIPPED  # noqa: E402


def _programs(args: argparse.Namespace, paths: tuple[str, ...]) -> sweep.Campaign:
    from fxinplace.testing.harness.broken_passes import broken_compile_backend

    backend = broken_compile_backend() if args.backend == "broken" else None
    check = functools.partial(
        check_seed,
        paths=paths,
        dynamic_every={"backend": args.dynamic_every_backend, "hook": args.dynamic_every_hook},
        backend=backend,
        device=args.device,
    )
    seeds = range(args.start, args.start + args.count)
    print(
        f"random programs: seeds {seeds.start}..{seeds.stop - 1}, paths {paths}, jobs={args.jobs}", flush=True
    )
    return sweep.run_seeds(
        seeds,
        jobs=args.jobs,
        check=check,
        progress=sweep.progress_printer(len(seeds)),
        progress_every=args.progress,
        time_limit=args.time_limit,
    )


def _families(args: argparse.Namespace, paths: tuple[str, ...]) -> sweep.Campaign:
    cases = (*OPTIMIZERS, *CHECKPOINTS)
    print(f"families: {len(OPTIMIZERS)} optimizers, {len(CHECKPOINTS)} checkpointed models", flush=True)
    check = functools.partial(check_family_case, cases=cases, paths=paths)
    campaign = sweep.run_seeds(range(len(cases)), jobs=args.jobs, check=check)
    campaign.case_names = {i: c.name for i, c in enumerate(cases)}  # type: ignore[attr-defined]
    return campaign


def _print_programs(campaign: sweep.Campaign, args: argparse.Namespace) -> None:
    stopped = " (stopped at --time-limit)" if campaign.stopped_early else ""
    print(
        f"\n{campaign.programs} programs in {campaign.seconds:.0f}s{stopped}; "
        f"slowest: seed {campaign.slowest[1]}"
    )
    print(campaign.totals_table() + "\n")

    def repro(group) -> str:
        if args.minimize:
            program = minimized(group.smallest_seed, group.pipeline_of_smallest, group.signature)
        else:
            program = program_for(group.smallest_seed)
        return program.source

    print(campaign.signatures_text(sweep.FAILURE_KINDS, "FAILURES (attributed to fxinplace)", repro=repro))
    print(
        "\n"
        + campaign.signatures_text(
            [LIMITATION], "TORCH FINDINGS (the compiler without fxinplace; not failed)"
        )
    )
    print("\n" + campaign.signatures_text([CLEAR], "CLEAR ERRORS"))
    if args.details:
        print("\n" + campaign.signatures_text([SKIPPED], "SKIPPED"))
        print("\n" + campaign.signatures_text([NOTE], "NOTES"))


def _print_families(campaign: sweep.Campaign) -> None:
    names = campaign.case_names  # type: ignore[attr-defined]
    print(f"\nfamilies: {campaign.programs} cases in {campaign.seconds:.0f}s (a case's 'seed' is its index)")
    print(campaign.totals_table() + "\n")
    for title, kinds in (
        ("FAILURES", sweep.FAILURE_KINDS),
        ("TORCH FINDINGS", [LIMITATION]),
        ("CLEAR ERRORS", [CLEAR]),
    ):
        groups = campaign.by_signature(kinds)
        print(f"{title}: {len(groups)}")
        for g in groups:
            cases = ", ".join(names[i] for i in sorted(g.seeds))
            print(f"- [{g.half}] {g.kind}: {g.signature}")
            print(f"    cases: {cases}; pipelines: {', '.join(g.pipelines)}")
            print("      " + "\n      ".join(g.detail.splitlines()[-6:]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_seed_arguments(ap, count=2000, progress=50)
    ap.add_argument("--path", choices=("backend", "hook", "both"), default="both")
    ap.add_argument(
        "--dynamic-every-backend", type=int, default=1, help="dynamic=True for every Nth seed (0: none)"
    )
    ap.add_argument(
        "--dynamic-every-hook", type=int, default=3, help="dynamic=True for every Nth seed (0: none)"
    )
    ap.add_argument(
        "--no-families", action="store_true", help="skip the optimizer and checkpointing families"
    )
    ap.add_argument("--minimize", action="store_true", help="print a minimised program per failure signature")
    ap.add_argument("--backend", choices=("fxinplace", "broken"), default="fxinplace")
    ap.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="stop taking programs after this many seconds and report those done (a lent machine's limit)",
    )
    ap.add_argument(
        "--device",
        default=None,
        help="run the random programs on this device (e.g. cuda: Inductor then generates Triton); "
        "inputs are moved with their aliasing kept",
    )
    ap.add_argument("--details", action="store_true", help="also list skipped programs and notes")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    paths = ("backend", "hook") if args.path == "both" else (args.path,)
    failures = 0
    if args.count:
        campaign = _programs(args, paths)
        _print_programs(campaign, args)
        failures += len(campaign.failures)
    if not args.no_families:
        families = _families(args, paths)
        _print_families(families)
        failures += len(families.failures)
    print(f"\n{failures} failure groups attributed to fxinplace" if failures else "\nno failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
