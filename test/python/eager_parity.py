"""Helpers shared by the functionalize rule tests: a function's results through
fxinplace.functionalize (eagerly and traced) against eager's own."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import eager_parity_problems


def arange(shape: tuple[int, ...]) -> torch.Tensor:
    """Distinct float values 0, 1, ... laid out in `shape` (every element tells where it came from)."""
    return torch.arange(float(torch.Size(shape).numel())).reshape(shape)


def check(fn, make_args, **kwargs) -> None:
    """Assert that `fn` under fxinplace.functionalize matches eager (functionalize_differential)."""
    problems = eager_parity_problems(fn, make_args, **kwargs)
    assert not problems, "\n".join(problems)
