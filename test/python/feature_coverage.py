"""A check the tests of the random program generators share: the features they promise
turn up in their first programs."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from typing import Any


def assert_features_covered(generate: Callable[[int], Any], count: int, required: Iterable[str]) -> None:
    """Each of `required` is among the features of at least one of generate(0), ...,
    generate(count - 1)."""
    seen = collections.Counter()
    for seed in range(count):
        seen.update(generate(seed).features)
    missing = [f for f in required if not seen[f]]
    assert not missing, f"features no program in {count} used: {missing}"
