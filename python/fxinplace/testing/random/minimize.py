"""Shrinking a failing random program: delete statements and returns while the failure persists.

Greedy, to a fixed point: each statement (a guarded eager-rejected line is one statement),
each returned expression and each input ``f`` no longer uses is dropped in turn, and the
smaller program is kept when the same pipeline still reports a finding with the same
signature. Deleting a definition that is still used makes eager raise ``NameError``; the
pipelines then report an expected error, not the failure, so such deletions are rejected by the same test.
"""

from __future__ import annotations

from collections.abc import Callable

from fxinplace.testing.harness.pipelines import PIPELINES, Pipeline, ReinplaceFn, check_program
from fxinplace.testing.random.programs import RandomProgram

__all__ = ["minimize", "shrink", "still_fails"]


def still_fails(
    pipeline: Pipeline, signature: str, reinplace: ReinplaceFn | None = None
) -> Callable[[RandomProgram], bool]:
    """A test: ``pipeline`` still reports ``signature`` on the program."""

    def test(program: RandomProgram) -> bool:
        try:
            report = check_program(program, pipelines=[pipeline], reinplace=reinplace)
        except Exception:  # noqa: BLE001 - a program the harness cannot even run is not the failure
            return False
        return any(f.signature == signature for f in report.results[pipeline.name].findings)

    return test


def _shrink_once(program: RandomProgram, fails: Callable[[RandomProgram], bool]) -> RandomProgram:
    for i in reversed(range(len(program.body))):
        smaller = program.with_parts(program.body[:i] + program.body[i + 1 :], program.returns)
        if fails(smaller):
            program = smaller
    for i in reversed(range(len(program.returns))):
        if len(program.returns) == 1:
            break
        smaller = program.with_parts(program.body, program.returns[:i] + program.returns[i + 1 :])
        if fails(smaller):
            program = smaller
    for name in reversed(program.inputs):
        if len(program.inputs) == 1:
            break
        smaller = program.without_input(name)
        if smaller is not None and fails(smaller):
            program = smaller
    return program


def shrink(
    program: RandomProgram, fails: Callable[[RandomProgram], bool], *, max_rounds: int = 4
) -> RandomProgram:
    """The smallest program found for which ``fails`` holds (any harness's failure test)."""
    if not fails(program):
        return program  # flaky or order-dependent: report it as it was
    for _ in range(max_rounds):
        smaller = _shrink_once(program, fails)
        if smaller == program:
            break
        program = smaller
    return program


def minimize(
    program: RandomProgram,
    pipeline_name: str,
    signature: str,
    *,
    reinplace: ReinplaceFn | None = None,
    max_rounds: int = 4,
) -> RandomProgram:
    """The smallest program found that still fails ``pipeline_name`` with ``signature``."""
    pipeline = next(p for p in PIPELINES if p.name == pipeline_name)
    return shrink(program, still_fails(pipeline, signature, reinplace), max_rounds=max_rounds)
