"""The re-inplacing corpus: small programs checked by
``fxinplace.testing.harness.reinplace_differential.check_program`` (eager vs
``make_fx(functionalize(fn))`` re-inplaced by the stock pass and by fxinplace).

Each case is a function registered with ``@reinplace_case(make_args, ...)`` in the module
of its theme (see ``Program`` for the options). ``python -m corpus.reinplace`` (from
``test/python``) checks the corpus with the stock pass standing in for fxinplace.
"""

from __future__ import annotations

from fxinplace.testing.harness.cases import collect
from fxinplace.testing.harness.reinplace_differential import Program

from . import (
    composites,
    indexing,
    input_mutations,
    linear_algebra,
    outputs,
    pointwise,
    scatters,
    shapes_and_dtypes,
    stock_mirrors,
    stock_unsound,
    views,
)

__all__ = ["PROGRAMS", "THEMES", "Program"]

THEMES = (
    stock_mirrors,
    scatters,
    pointwise,
    linear_algebra,
    views,
    input_mutations,
    outputs,
    shapes_and_dtypes,
    indexing,
    composites,
    stock_unsound,
)
PROGRAMS: list[Program] = collect(Program, THEMES)
