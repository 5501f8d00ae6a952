"""``python -m corpus.reinplace``: the corpus with the stock pass standing in for fxinplace."""

from fxinplace.testing.harness.reinplace_differential import self_check

from . import PROGRAMS

raise SystemExit(self_check(PROGRAMS))
