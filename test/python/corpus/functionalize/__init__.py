"""The functionalization corpus: small programs checked by
``fxinplace.testing.harness.functionalize_differential.check_functionalize`` (eager vs the
implementation, eagerly and traced with ``make_fx``, and ``torch.func.functionalize``).

Each case is a function registered with ``@functionalize_case(make_args, *tags, ...)`` in
the module of its theme (see ``FunctionalizeCase`` for the options). Conventions:

* ``make_args()`` returns a *fresh* tuple on every call (inputs may be mutated). Values
  are exact (``ar``, ``rn`` in ``corpus.inputs``) so results compare exactly in almost
  all cases.
* Every write is well defined in eager mode: no writes through overlapping views
  (``expand``, overlapping ``as_strided``) and no reads that partially overlap the
  written region.

``python -m corpus.functionalize`` (from ``test/python``) lists the cases.
"""

from __future__ import annotations

from fxinplace.testing.harness.cases import collect
from fxinplace.testing.harness.functionalize_differential import FunctionalizeCase

from . import (
    aliased_inputs,
    as_strided,
    composites,
    containers_and_args,
    copy_or_alias,
    dtypes,
    factories,
    inference_mode,
    input_mutations,
    metadata_writes,
    multi_views,
    out_ops,
    outputs,
    probes,
    seed,
    view_chains,
    write_ops,
)

__all__ = ["PROGRAMS", "THEMES", "FunctionalizeCase", "case_by_name"]

THEMES = (
    seed,
    view_chains,
    input_mutations,
    multi_views,
    metadata_writes,
    as_strided,
    factories,
    inference_mode,
    outputs,
    out_ops,
    write_ops,
    dtypes,
    composites,
    copy_or_alias,
    containers_and_args,
    probes,
    aliased_inputs,
)
PROGRAMS: list[FunctionalizeCase] = collect(FunctionalizeCase, THEMES)


def case_by_name(name: str) -> FunctionalizeCase:
    for c in PROGRAMS:
        if c.name == name:
            return c
    raise KeyError(name)
