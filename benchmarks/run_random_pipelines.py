"""Random programs through every pipeline, without pytest: totals, coverage, failure groups.

    python benchmarks/run_random_pipelines.py --count 10000 --jobs 2
    python benchmarks/run_random_pipelines.py --count 500 --minimize          # with minimal repros
    python benchmarks/run_random_pipelines.py --count 200 --reinplace broken  # self-check
    python benchmarks/run_random_pipelines.py --count 200 --functionalize broken  # self-check
    python benchmarks/run_random_pipelines.py --count 50 --functionalize bakes-size  # self-check
    python benchmarks/run_random_pipelines.py --seeds 49 275 549              # just these programs

For every seed, ``fxinplace.testing.random.programs.generate(seed)`` builds a program and
``fxinplace.testing.harness.pipelines.check_program`` runs it through every pipeline (eager
``fxinplace.functionalize``; ``torch.func.functionalize`` / ``fxinplace.functionalize`` traced
by ``make_fx``, with and without dead-code elimination, ``remove="mutations_and_views"``,
real and symbolic tracing; each re-inplaced and compared with its oracle; some graphs also
re-inplaced with ``policy="compile"`` and ``policy="inductor"``). Prints the
per-pipeline totals, the generator's feature coverage, the failures per pipeline and
per signature (with the smallest seed; ``--minimize`` adds a minimised program for each
signature), then clear errors, torch limitations and notes. Failures listed in
``fxinplace.testing.random.known_failures`` are marked "known". Exits non-zero on any
failure that is not known.

``--functionalize broken`` swaps in ``broken_passes.functionalize_ignoring_input_aliasing`` (blind to
inputs that share memory) for ``fxinplace.functionalize``: the run must report wrong results too.
``--functionalize bakes-size`` swaps in ``broken_passes.functionalize_baking_the_trace_size`` (its
symbolic traces keep the trace size without a guard): the symbolic pipelines must report wrong
results at the second size.
``--reinplace broken`` swaps in ``fxinplace.testing.harness.broken_passes.inplace_first_candidate``
(re-inplaces one op without checking): the run must report wrong results, or the
generator and harness are blind.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
try:
    import fxinplace  # noqa: F401
except ImportError:  # not installed: use the source tree
    sys.path.insert(0, str(ROOT / "python"))

from fxinplace.testing.harness import campaign as sweep  # noqa: E402
from fxinplace.testing.harness.broken_passes import (  # noqa: E402
    functionalize_baking_the_trace_size,
    functionalize_ignoring_input_aliasing,
    inplace_first_candidate,
)
from fxinplace.testing.harness.pipelines import CLEAR, LIMITATION, NOTE, ProgramReport, check_program  # noqa: E402
from fxinplace.testing.random.known_failures import known_issue  # noqa: E402
from fxinplace.testing.random.programs import generate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_seed_arguments(ap, count=10000, progress=250)
    ap.add_argument("--seeds", type=int, nargs="+", help="exactly these seeds (instead of --start/--count)")
    ap.add_argument("--minimize", action="store_true", help="print a minimised program per failure signature")
    ap.add_argument("--reinplace", choices=("fxinplace", "broken"), default="fxinplace")
    ap.add_argument(
        "--functionalize",
        choices=("fxinplace", "broken", "bakes-size"),
        default="fxinplace",
        help="broken: a functionalization blind to inputs that share memory; bakes-size: one that "
        "keeps the trace size in its outputs without a guard (self-checks)",
    )
    ap.add_argument("--details", action="store_true", help="also list clear errors, limitations and notes")
    ap.add_argument("--save", metavar="FILE", help="write every finding as a JSON line (seed, pipeline, ...)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    reinplace = inplace_first_candidate if args.reinplace == "broken" else None
    seeds = sorted(set(args.seeds)) if args.seeds else list(range(args.start, args.start + args.count))
    print(f"checking {len(seeds)} programs (seeds {seeds[0]}..{seeds[-1]}), jobs={args.jobs}", flush=True)
    check = None
    if args.functionalize != "fxinplace":
        broken = {
            "broken": functionalize_ignoring_input_aliasing,
            "bakes-size": functionalize_baking_the_trace_size,
        }[args.functionalize]

        def check(seed: int) -> ProgramReport:
            return check_program(generate(seed), reinplace=reinplace, functionalize=broken)

    campaign = sweep.run_seeds(
        seeds,
        jobs=args.jobs,
        reinplace=reinplace,
        check=check,
        progress=sweep.progress_printer(len(seeds)),
        progress_every=args.progress,
        keep=args.save is not None,
    )
    if args.save:
        with open(args.save, "w") as out:
            for report in campaign.reports:
                for name, result in report.results.items():
                    for f in result.findings:
                        row = {"seed": report.seed, "pipeline": name, "kind": f.kind, "half": f.half}
                        out.write(json.dumps({**row, "signature": f.signature}) + "\n")
    seconds, slowest = campaign.seconds, campaign.slowest
    print(
        f"\n{campaign.programs} programs in {seconds:.0f}s ({seconds / max(1, campaign.programs):.2f}s each)"
    )
    print(f"slowest program: seed {slowest[1]} ({slowest[0]:.1f}s)\n")
    print(campaign.totals_table() + "\n")
    print(campaign.coverage_table() + "\n")

    sources: dict[int, str] = {}

    def source(seed: int) -> str:
        if seed not in sources:
            sources[seed] = generate(seed).source
        return sources[seed]

    def annotate(group) -> str | None:
        """The known issue(s) covering every program of the group, or None."""
        issues = set()
        for seed in sorted(set(group.seeds)):
            issue = known_issue(group.half, group.signature, source(seed), getattr(group, "pipeline", None))
            if issue is None:
                return None
            issues.add(issue)
        return " | ".join(sorted(issues))

    print(campaign.groups_text(sweep.FAILURE_KINDS, "FAILURES by pipeline", annotate=annotate) + "\n")

    def repro(group) -> str:
        return sweep.minimized_source(group, reinplace) if args.minimize else ""

    print(
        campaign.signatures_text(sweep.FAILURE_KINDS, "FAILURES by signature", repro=repro, annotate=annotate)
    )
    if args.details:
        print("\n" + campaign.signatures_text([CLEAR], "CLEAR, DOCUMENTED ERRORS (not failures)"))
        print("\n" + campaign.signatures_text([LIMITATION], "TORCH LIMITATIONS (not ours)"))
        print("\n" + campaign.signatures_text([NOTE], "NOTES"))
    unknown = [g for g in campaign.failures if annotate(g) is None]
    if not unknown:
        print("\nno unknown failures")
        return 0
    print(f"\n{len(unknown)} failure groups not (entirely) known; the programs no known issue covers:")
    for g in unknown:
        seeds = [
            s for s in sorted(set(g.seeds)) if known_issue(g.half, g.signature, source(s), g.pipeline) is None
        ]
        print(f"- [{g.pipeline}] {g.kind} ({g.half}): {g.signature}\n    seeds {seeds[:12]}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
