"""Many random programs through every pipeline: totals, coverage and failure groups.

``run_seeds(seeds)`` checks each program (optionally in worker processes) and returns a
``Campaign``; ``Campaign.report()`` prints per-pipeline totals (programs, ok, wrong
results, internal errors, clear documented errors, torch limitations), the generator's
feature coverage (how many programs used each dtype, view kind, input kind, write kind,
eager-rejected line, out= form) and how often each pipeline actually compared a
re-inplaced graph, and the failure groups: one per (pipeline, signature) with its count
and smallest seed, optionally with that seed's program minimised.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import signal
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from fxinplace.testing.harness.pipelines import (
    CLEAR,
    INTERNAL,
    LIMITATION,
    NOTE,
    OK,
    PIPELINES,
    SKIPPED,
    TORCH_STAGES,
    WRONG,
    Finding,
    PipelineResult,
    ProgramReport,
    ReinplaceFn,
    check_program,
)
from fxinplace.testing.harness.worker_pool import map_in_workers
from fxinplace.testing.random.minimize import minimize
from fxinplace.testing.random.programs import generate

__all__ = [
    "NOTE",
    "Campaign",
    "Group",
    "SeedCheck",
    "SignatureGroup",
    "add_seed_arguments",
    "iter_reports",
    "minimized_source",
    "progress_printer",
    "run_seeds",
]

FAILURE_KINDS = (WRONG, INTERNAL)


def add_seed_arguments(
    ap: argparse.ArgumentParser, *, count: int, jobs: bool = True, progress: int | None = None
) -> None:
    """What every random-program runner takes: ``--count``, ``--start``, ``--jobs`` and ``--progress``."""
    ap.add_argument("--count", type=int, default=count, help=f"number of programs (default {count})")
    ap.add_argument("--start", type=int, default=0, help="first seed (default 0)")
    if jobs:
        ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    if progress is not None:
        ap.add_argument(
            "--progress", type=int, default=progress, help=f"progress line every N programs ({progress})"
        )


def progress_printer(total: int) -> Callable[[Campaign], None]:
    """A ``run_seeds(progress=...)`` callback printing a line: programs done, seconds since
    this call, the failing programs (their first seeds) and the wrong (program, pipeline) pairs."""
    started = time.perf_counter()

    def report(c: Campaign) -> None:
        wrong = sum(s[WRONG] for s in c.status.values())
        failing = sorted({seed for g in c.failures for seed in g.seeds})
        seeds = f" (seeds {', '.join(map(str, failing[:10]))})" if failing else ""
        print(
            f"  [{c.programs}/{total}] {time.perf_counter() - started:.0f}s  "
            f"failing programs={len(failing)}{seeds}  wrong (program, pipeline) pairs={wrong}",
            flush=True,
        )

    return report


@dataclasses.dataclass
class Group:
    pipeline: str
    kind: str
    half: str
    signature: str
    seeds: list[int] = dataclasses.field(default_factory=list)
    detail: str = ""  # of the smallest seed

    @property
    def smallest_seed(self) -> int:
        return min(self.seeds)


@dataclasses.dataclass
class Campaign:
    programs: int = 0
    seconds: float = 0.0
    status: dict[str, collections.Counter] = dataclasses.field(
        default_factory=lambda: collections.defaultdict(collections.Counter)
    )
    ran: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    expected_errors: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    features: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    groups: dict[tuple[str, str, str], Group] = dataclasses.field(default_factory=dict)
    slowest: tuple[float, int] = (0.0, -1)
    reports: list[ProgramReport] = dataclasses.field(default_factory=list)  # with run_seeds(keep=True)
    stopped_early: bool = False  # run_seeds(time_limit=...) ran out of time

    def add(self, report: ProgramReport) -> None:
        self.programs += 1
        self.seconds += report.seconds
        self.slowest = max(self.slowest, (report.seconds, report.seed))
        self.features.update(report.features)
        for name, result in report.results.items():
            self.status[name][result.status] += 1
            self.ran[name] += result.ran
            self.expected_errors[name] += result.expected_error
            seen = set()
            for f in result.findings:
                key = (name, f.kind, f.signature)
                if key in seen:
                    continue
                seen.add(key)
                group = self.groups.setdefault(key, Group(name, f.kind, f.half, f.signature))
                if not group.seeds or report.seed < group.smallest_seed:
                    group.detail = f.detail
                group.seeds.append(report.seed)

    def pipeline_names(self) -> list[str]:
        """The pipelines seen: the make_fx pipelines in their order, then others (the compile
        paths) in the order they were first reported."""
        known = [p.name for p in PIPELINES if p.name in self.status]
        return known + [name for name in self.status if name not in known]

    def groups_of(self, kinds: Sequence[str]) -> list[Group]:
        found = [g for g in self.groups.values() if g.kind in kinds]
        order = {name: i for i, name in enumerate(self.pipeline_names())}
        return sorted(found, key=lambda g: (order.get(g.pipeline, 99), -len(g.seeds), g.signature))

    @property
    def failures(self) -> list[Group]:
        return self.groups_of(FAILURE_KINDS)

    # ---- text ---------------------------------------------------------------

    def totals_table(self) -> str:
        skipped = any(s[SKIPPED] for s in self.status.values())
        head = f"{'pipeline':<18}{'programs':>9}{'ok':>7}{'(err ok)':>9}{'wrong':>7}{'internal':>9}"
        head += (
            f"{'clear':>7}{'torch lim':>10}" + (f"{'skipped':>9}" if skipped else "") + f"{'compared':>10}"
        )
        lines = [head]
        for name in self.pipeline_names():
            s = self.status[name]
            lines.append(
                f"{name:<18}{sum(s.values()):>9}{s[OK]:>7}{self.expected_errors[name]:>9}{s[WRONG]:>7}"
                f"{s[INTERNAL]:>9}{s[CLEAR]:>7}{s[LIMITATION]:>10}"
                + (f"{s[SKIPPED]:>9}" if skipped else "")
                + f"{self.ran[name]:>10}"
            )
        lines.append(
            "ok: no failure ((err ok): of which eager raised and so did the pipeline); wrong: a wrong result "
            "(or no error where eager raises); internal: an exception not naming fxinplace; clear: "
            "ReinplaceInputError or a RuntimeError naming fxinplace; torch lim: torch.func.functionalize "
            "or make_fx could not, or the compiler is wrong without fxinplace (not ours); "
            + (
                "skipped: the pipeline cannot run the program (eager raises, Dynamo cannot compile it); "
                if skipped
                else ""
            )
            + "compared: a re-inplaced graph (or eager result) was compared."
        )
        return "\n".join(lines)

    def coverage_table(self) -> str:
        lines = [f"feature coverage over {self.programs} programs (programs using each):"]
        by_prefix: dict[str, list[tuple[str, int]]] = collections.defaultdict(list)
        for feature, count in self.features.items():
            prefix = feature.split(":", 1)[0] if ":" in feature else "other"
            by_prefix[prefix].append((feature, count))
        for prefix in sorted(by_prefix):
            items = sorted(by_prefix[prefix])
            lines.append(f"  {prefix}: " + ", ".join(f"{f.split(':', 1)[-1].strip()}={c}" for f, c in items))
        return "\n".join(lines)

    def groups_text(
        self, kinds: Sequence[str], title: str, *, annotate: Callable[[Group], str | None] | None = None
    ) -> str:
        groups = self.groups_of(kinds)
        lines = [f"{title}: {len(groups)} groups"]
        for g in groups:
            seeds = sorted(set(g.seeds))
            note = annotate(g) if annotate else None
            lines.append(
                f"- [{g.pipeline}] {g.kind} ({g.half}): {g.signature}\n"
                f"    {len(seeds)} programs, smallest seed {seeds[0]}"
                + (f" (seeds {', '.join(map(str, seeds[:8]))}{' ...' if len(seeds) > 8 else ''})")
                + (f"\n    known: {note}" if note else "")
            )
        return "\n".join(lines)

    def by_signature(self, kinds: Sequence[str]) -> list[SignatureGroup]:
        """The groups of ``kinds`` merged across pipelines: one per (kind, half, signature)."""
        merged: dict[tuple[str, str, str], SignatureGroup] = {}
        for g in self.groups_of(kinds):
            key = (g.kind, g.half, g.signature)
            entry = merged.setdefault(key, SignatureGroup(g.kind, g.half, g.signature))
            entry.pipelines[g.pipeline] = len(set(g.seeds))
            # Groups come in pipeline order (eager checks first, the cheapest to minimise):
            # the first pipeline with the smallest seed keeps it.
            if not entry.seeds or g.smallest_seed < entry.smallest_seed:
                entry.pipeline_of_smallest, entry.detail = g.pipeline, g.detail
            entry.seeds |= set(g.seeds)
        return sorted(merged.values(), key=lambda e: (e.half, e.kind, -len(e.seeds), e.signature))

    def signatures_text(
        self,
        kinds: Sequence[str],
        title: str,
        *,
        repro: Callable[[SignatureGroup], str] | None = None,
        annotate: Callable[[SignatureGroup], str | None] | None = None,
    ) -> str:
        entries = self.by_signature(kinds)
        lines = [f"{title}: {len(entries)}"]
        for i, e in enumerate(entries, 1):
            pipes = ", ".join(f"{name} ({count})" for name, count in e.pipelines.items())
            lines.append(f"{i}. [{e.half}] {e.kind}: {e.signature}")
            lines.append(f"   {len(e.seeds)} programs, smallest seed {e.smallest_seed}; pipelines: {pipes}")
            note = annotate(e) if annotate else None
            if note:
                lines.append(f"   known: {note}")
            if repro is not None:
                lines.extend("   | " + line for line in repro(e).rstrip().splitlines())
        return "\n".join(lines)


@dataclasses.dataclass
class SignatureGroup:
    kind: str
    half: str
    signature: str
    pipelines: dict[str, int] = dataclasses.field(default_factory=dict)
    seeds: set[int] = dataclasses.field(default_factory=set)
    pipeline_of_smallest: str | None = None
    detail: str = ""

    @property
    def smallest_seed(self) -> int:
        return min(self.seeds)


def minimized_source(group: Group | SignatureGroup, reinplace: ReinplaceFn | None = None) -> str:
    """The smallest seed's program, minimised for the group's failure."""
    pipeline = group.pipeline if isinstance(group, Group) else group.pipeline_of_smallest
    program = generate(group.smallest_seed)
    return minimize(program, pipeline, group.signature, reinplace=reinplace).source


# --------------------------------------------------------------------------- running

#: ``check(seed)``: the report of one seed (default: its program through the make_fx pipelines).
SeedCheck = Callable[[int], ProgramReport]

_WORKER_REINPLACE: ReinplaceFn | None = None
_WORKER_CHECK: SeedCheck | None = None


def _check_pipelines(seed: int) -> ProgramReport:
    return check_program(generate(seed), reinplace=_WORKER_REINPLACE)


def _check_seed(seed: int) -> ProgramReport:
    try:
        return (_WORKER_CHECK or _check_pipelines)(seed)
    except Exception as exc:  # noqa: BLE001 - the generator itself failed: report, don't stop
        finding = Finding(INTERNAL, "harness", f"generator raised {type(exc).__name__}: {exc}"[:120])
        return ProgramReport(seed, {"generator": PipelineResult([finding])}, frozenset())


def _init_worker(reinplace: ReinplaceFn | None, check: SeedCheck | None = None) -> None:
    global _WORKER_REINPLACE, _WORKER_CHECK
    _WORKER_REINPLACE = reinplace
    _WORKER_CHECK = check


def iter_reports(
    seeds: Iterable[int],
    *,
    jobs: int = 1,
    reinplace: ReinplaceFn | None = None,
    check: SeedCheck | None = None,
) -> Iterator[ProgramReport]:
    """Reports of ``seeds`` in order; ``check`` replaces the make_fx pipelines (worker processes
    are forked, so it need not be picklable)."""
    seeds = list(seeds)
    _init_worker(reinplace, check)  # forked workers inherit it
    if jobs <= 1:
        yield from map(_check_seed, seeds)
        return
    # Not multiprocessing.Pool: a program that kills its worker (a segfault) would hang it.
    yield from map_in_workers(_check_seed, seeds, jobs=jobs, on_crash=_crash_report)


#: Compilers that are oracles (compile_runs.COMPILERS without fxinplace in them): a crash
#: while one of them runs is torch's, like an oracle raising.
_ORACLE_COMPILERS = ("eager", "aot_eager", "inductor-noop", "inductor-stock")


def _crash_report(seed: int, exitcode: int | None, stage: str | None) -> ProgramReport:
    """A program whose worker process died: an internal error of the run (never skipped),
    or a torch finding where the stage the worker last noted was an oracle compiler."""
    if exitcode is not None and exitcode < 0:
        how = f"signal {signal.Signals(-exitcode).name}"
    else:
        how = f"exit code {exitcode}"
    if stage in _ORACLE_COMPILERS or stage in TORCH_STAGES:
        finding = Finding(LIMITATION, "torch", f"{stage} crashed the process ({how}) without fxinplace")
    else:
        where = f" in {stage}" if stage else ""
        finding = Finding(INTERNAL, "crash", f"the process running the program died{where} ({how})")
    return ProgramReport(seed, {"worker": PipelineResult([finding])}, frozenset())


def run_seeds(
    seeds: Iterable[int],
    *,
    jobs: int = 1,
    reinplace: ReinplaceFn | None = None,
    check: SeedCheck | None = None,
    progress: Callable[[Campaign], None] | None = None,
    progress_every: int = 100,
    keep: bool = False,
    time_limit: float | None = None,
) -> Campaign:
    """Check every seed's program; ``keep`` also keeps each ``ProgramReport`` in ``reports``;
    ``check(seed)`` replaces the make_fx pipelines (the compile paths, the families). Past
    ``time_limit`` seconds no further report is taken (the workers stop) and the campaign is
    marked ``stopped_early``: its totals are those of the programs done, in seed order."""
    campaign = Campaign()
    started = time.perf_counter()
    reports = iter_reports(seeds, jobs=jobs, reinplace=reinplace, check=check)
    with contextlib.closing(reports):  # closing the generator ends the worker pool
        for report in reports:
            campaign.add(report)
            if keep:
                campaign.reports.append(report)
            if progress is not None and campaign.programs % progress_every == 0:
                progress(campaign)
            if time_limit is not None and time.perf_counter() - started > time_limit:
                campaign.stopped_early = True
                break
    campaign.seconds = time.perf_counter() - started
    return campaign
