"""Random programs and real training code through both ``torch.compile`` paths (issue 15).

Each seed is a program from ``fxinplace.testing.random.programs`` (``compile_pipelines.program_for``:
without lines eager rejects) with the statements compiled programs are made of: KV-cache
writes at tensor positions, ``_foreach_*`` lists, custom mutable ops on views and dtype
views, writes through dtype views, flips, rolls and transposes read next to writes of the
same buffer. It runs through

* the backend path, ``torch.compile(f, backend="fxinplace", options={"check": True})``,
  compared bitwise with ``backend="aot_eager"`` (every seed also with ``dynamic=True``);
* the hook path, Inductor with ``fxinplace.inductor.installed(check=True)``, compared with
  Inductor whose re-inplacing pass does nothing (every third seed also with ``dynamic=True``).

A wrong result or internal error attributed to fxinplace fails the test; findings that are
torch's own (the oracle differs from eager, or raises where eager does not) do not. Then the
optimizers of ``torch.optim`` with ``foreach=True`` and activation checkpointing
(``compile_families``) through both paths. Nothing here is marked as known: a failure stays
visible until its fix lands.

``FXINPLACE_COMPILE_BACKEND_COUNT`` / ``FXINPLACE_COMPILE_HOOK_COUNT`` set the number of seeds
(defaults 25 and 15: about three minutes on two cores with the families). For thousands of
programs, use ``benchmarks/run_random_compile.py``.
"""

from __future__ import annotations

import os

import pytest
from random_program_checks import assert_features_covered, failure_text

from fxinplace.testing.harness import compile_runs
from fxinplace.testing.harness.broken_passes import broken_compile_backend
from fxinplace.testing.harness.compile_families import CHECKPOINTS, OPTIMIZERS, Case, check_case
from fxinplace.testing.harness.compile_pipelines import (
    COMPILE_PIPELINES,
    check_compiled,
    compile_failures,
    pipelines_for,
    program_for,
)
from fxinplace.testing.harness.pipelines import (
    INTERNAL,
    LIMITATION,
    WRONG,
    PipelineResult,
    ProgramReport,
)
from fxinplace.testing.random.programs import RandomProgram

BACKEND_COUNT = int(os.environ.get("FXINPLACE_COMPILE_BACKEND_COUNT", "25"))
HOOK_COUNT = int(os.environ.get("FXINPLACE_COMPILE_HOOK_COUNT", "15"))
# The hook path compiles with Inductor three times per case (oracle, hook, stock for memory):
# the optimizers that broke it (issue 15) and one plain one.
HOOK_OPTIMIZERS = ("AdamW(amsgrad)", "RAdam", "SGD(momentum)")


def _check(seed: int, paths: tuple[str, ...]) -> None:
    program = program_for(seed)
    report = check_compiled(program, pipelines=pipelines_for(seed, paths))
    failures = compile_failures(report)
    if failures:
        pytest.fail(failure_text(seed, failures, program.source, detail_lines=14), pytrace=False)


@pytest.mark.parametrize("seed", range(BACKEND_COUNT))
def test_backend_path(seed: int) -> None:
    _check(seed, ("backend",))


@pytest.mark.parametrize("seed", range(HOOK_COUNT))
def test_hook_path(seed: int) -> None:
    _check(seed, ("hook",))


def _case_failures(result: PipelineResult) -> str:
    return "\n".join(
        f"{f.kind} ({f.half}): {f.signature}\n    " + "\n    ".join(f.detail.splitlines()[-10:])
        for f in result.findings
        if f.kind in (WRONG, INTERNAL)
    )


def _by_name(cases: tuple[Case, ...], names: tuple[str, ...] | None = None) -> list[Case]:
    return [c for c in cases if names is None or c.name in names]


@pytest.mark.parametrize("case", _by_name(OPTIMIZERS), ids=lambda c: c.name)
def test_optimizer_backend(case: Case) -> None:
    result = check_case(case, "backend")
    assert result.ran and result.status not in (WRONG, INTERNAL), _case_failures(result)


@pytest.mark.parametrize("case", _by_name(OPTIMIZERS, HOOK_OPTIMIZERS), ids=lambda c: c.name)
def test_optimizer_hook(case: Case) -> None:
    """Equal to Inductor without re-inplacing and to eager, and no more bytes per step than
    stock Inductor."""
    result = check_case(case, "hook")
    assert result.ran and result.status not in (WRONG, INTERNAL), _case_failures(result)


@pytest.mark.parametrize("path", ["backend", "hook"])
@pytest.mark.parametrize("case", _by_name(CHECKPOINTS), ids=lambda c: c.name)
def test_checkpoint(case: Case, path: str) -> None:
    result = check_case(case, path)
    assert result.ran and result.status not in (WRONG, INTERNAL), _case_failures(result)


# --------------------------------------------------------------------------- the harness itself

# What the compile statements promise; each must appear in the first 200 programs.
_REQUIRED_FEATURES = (
    "compile:kv_cache",
    "input:position tensor",
    "compile:input index write",
    "compile:foreach",
    "compile:foreach list of 2",
    "compile:foreach result used",
    "compile:foreach RAdam pattern",
    "compile:custom op",
    "compile:custom op on a dtype view",
    "compile:dtype view write",
    "compile:flip read next to a write",
    "compile:roll read next to a write",
    "compile:transpose read next to a write",
    "compile:near write out_neg",
    "compile:near write index_put",
    "compile:near write foreach_add",
    "compile:near write foreach_copy_add",
)


def test_generator_makes_what_compiled_programs_do() -> None:
    assert_features_covered(program_for, 200, _REQUIRED_FEATURES)


def test_harness_flags_a_broken_backend() -> None:
    """A pass that makes one op in-place unchecked, plugged into the backend path, must give
    wrong results: otherwise the harness or the generator is blind."""
    backend = broken_compile_backend()
    pipeline = [p for p in COMPILE_PIPELINES if p.name == "backend"]
    reports = [check_compiled(program_for(s), pipelines=pipeline, backend=backend) for s in range(10)]
    wrong = [r.seed for r in reports if any(f.kind == WRONG for _, f in compile_failures(r))]
    assert len(wrong) >= 2, [{k: v.status for k, v in r.results.items()} for r in reports]


def _program(body: list[str], returns: list[str], make_args: str) -> RandomProgram:
    return RandomProgram(
        seed=-1, make_args_source=make_args, inputs=("x0", "pos0"), body=tuple(body), returns=tuple(returns)
    )


_ARGS = (
    "def make_args(n):\n"
    "    x0 = torch.arange(2.0 * (n + 1)).reshape(2, n + 1)\n"
    "    pos0 = torch.tensor([0])\n"
    "    return (x0, pos0)\n"
)


def test_harness_flags_stock_inductor_where_its_pass_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stock Inductor's own re-inplacing pass, standing in for the hook, is wrong on a write
    fused with a read of the same buffer at other elements (issue 15's f4, pytorch issue
    198033): the hook path must flag it, so it can flag the hook making the same mistake."""
    monkeypatch.setitem(compile_runs.OURS, "hook", "inductor-stock")
    program = _program(["torch._foreach_add_([x0], [x0.flip(0)])"], ["x0"], _ARGS)
    report = check_compiled(program, pipelines=[p for p in COMPILE_PIPELINES if p.name == "hook"])
    assert any(f.kind == WRONG for _, f in compile_failures(report)), report.results["hook"].findings


def test_a_compiler_wrong_without_fxinplace_is_a_torch_finding() -> None:
    """Writing one window of an unfold is defined in eager, but AOTAutograd's functionalization
    refuses the overlap: both paths' oracles raise, which is torch's finding, not a failure."""
    program = _program(["x0.unfold(0, 2, 1)[pos0] = 1.0"], ["x0"], _ARGS)
    report: ProgramReport = check_compiled(program, pipelines=COMPILE_PIPELINES[:1])
    result = report.results["backend"]
    assert result.status == LIMITATION, result.findings
    assert all(f.half == "torch" for f in result.findings)


def test_a_correct_program_passes_both_paths_at_both_sizes() -> None:
    program = _program(
        ["x0.index_copy_(1, pos0, x0.narrow(1, 1, 1) * 2)", "torch._foreach_add_([x0], [x0.flip(0)])"],
        ["x0.sum(0)", "x0"],
        _ARGS,
    )
    report = check_compiled(program, pipelines=COMPILE_PIPELINES)
    assert not compile_failures(report), report
    assert all(r.ran for r in report.results.values())


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_campaign_past_its_time_limit_reports_what_it_did(jobs: int) -> None:
    """run_random_compile.py --time-limit: the totals of the programs done, not a killed run."""
    import time

    from fxinplace.testing.harness.campaign import run_seeds

    def slow_ok(seed: int) -> ProgramReport:
        time.sleep(0.2)
        return ProgramReport(seed, {"backend": PipelineResult([])}, frozenset(), 0.2)

    campaign = run_seeds(range(50), jobs=jobs, check=slow_ok, time_limit=0.5)
    assert campaign.stopped_early and 1 <= campaign.programs < 50
    assert campaign.status["backend"]["ok"] == campaign.programs
    whole = run_seeds(range(3), jobs=jobs, check=slow_ok, time_limit=60)
    assert not whole.stopped_early and whole.programs == 3


def test_a_program_that_kills_its_worker_is_reported_not_waited_for() -> None:
    """A segfault in a worker is an internal error of that seed; the campaign goes on (a
    multiprocessing.Pool loses the dead worker's task and waits for it forever)."""
    import os
    import signal

    from fxinplace.testing.harness.campaign import run_seeds

    def dies_on_3(seed: int) -> ProgramReport:
        if seed == 3:
            os.kill(os.getpid(), signal.SIGSEGV)
        return ProgramReport(seed, {"backend": PipelineResult([])}, frozenset(), 0.0)

    campaign = run_seeds(range(8), jobs=2, check=dies_on_3)
    assert campaign.programs == 8 and campaign.status["backend"]["ok"] == 7
    assert campaign.status["worker"]["internal"] == 1
    (group,) = [g for g in campaign.failures if g.pipeline == "worker"]
    assert group.seeds == [3] and "SIGSEGV" in group.signature


@pytest.mark.parametrize("stage, kind", [("inductor-noop", "limitation"), ("inductor+fxinplace", "internal")])
def test_a_crash_is_blamed_on_the_compiler_that_was_running(stage: str, kind: str) -> None:
    """The oracle crashing (Inductor's own code, without fxinplace) is a torch finding; our path
    crashing is an internal error of fxinplace."""
    import os
    import signal

    from fxinplace.testing.harness.campaign import run_seeds
    from fxinplace.testing.harness.worker_pool import note_stage

    def dies_in(seed: int) -> ProgramReport:
        note_stage(stage)
        os.kill(os.getpid(), signal.SIGSEGV)
        raise AssertionError("unreachable")

    campaign = run_seeds(range(1), jobs=2, check=dies_in)
    assert campaign.status["worker"][kind] == 1
