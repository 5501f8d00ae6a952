"""Re-inplacing with the independent checker on: the one entry point the test
harnesses and random runs use, so every rewrite they make is also proved by
`fxinplace.check_reinplaced` (a failure raises `fxinplace.ReinplaceCheckError`
naming the node)."""

from __future__ import annotations

from typing import Any

from torch.fx import GraphModule

import fxinplace
from fxinplace._checker import check_reinplaced, copy_functional
from fxinplace._reinplace import run_reinplace
from fxinplace._reinplace.report import ReinplaceReport


def reinplace(gm: GraphModule, *sample_args: Any) -> GraphModule:
    """`fxinplace.reinplace(gm, *sample_args, check=True)`."""
    return fxinplace.reinplace(gm, *sample_args, check=True)


def reinplace_report(gm: GraphModule, *sample_args: Any, metadata: str = "auto") -> ReinplaceReport:
    """`fxinplace.reinplace_report(..., check=True)`; metadata="fake" forces the
    pass's FakeTensor metadata path (as the differential harness does to explain
    differences from the stock pass), checked the same way."""
    if metadata == "auto":
        return fxinplace.reinplace_report(gm, *sample_args, check=True)
    functional = copy_functional(gm)
    report = run_reinplace(gm, tuple(sample_args), metadata=metadata)
    if functional is not None:
        check_reinplaced(functional, gm, *sample_args)
    return report
