"""What the tests of random programs share (``test_random_pipelines.py``,
``test_random_compile.py``): the failure text of a program, and the check that the features
a generator promises turn up in its first programs."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from typing import Any


def failure_text(seed: int, failures: list[tuple[str, Any]], source: str, *, detail_lines: int) -> str:
    """The findings of the program of `seed` (name, kind, half, signature and the last
    `detail_lines` lines of each one's detail), then its source."""
    lines = [f"seed {seed}: {len(failures)} failures"]
    for name, f in failures:
        lines.append(f"- [{name}] {f.kind} ({f.half}): {f.signature}")
        lines.extend("    " + line for line in f.detail.splitlines()[-detail_lines:])
    lines.append(f"---- program (seed {seed}) ----\n{source}")
    return "\n".join(lines)


def assert_features_covered(generate: Callable[[int], Any], count: int, required: Iterable[str]) -> None:
    """Each of `required` is among the features of at least one of generate(0), ...,
    generate(count - 1)."""
    seen = collections.Counter()
    for seed in range(count):
        seen.update(generate(seed).features)
    missing = [f for f in required if not seen[f]]
    assert not missing, f"features no program in {count} used: {missing}"
