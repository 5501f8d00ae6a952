"""The hand-written corpora of the differential tests, one module a theme.

* ``corpus.reinplace``: programs for ``fxinplace.reinplace`` against the stock pass and eager
  (``fxinplace.testing.harness.reinplace_differential``; run by ``test_conformance.py``).
* ``corpus.functionalize``: programs for ``fxinplace.functionalize`` against eager and
  ``torch.func.functionalize`` (``fxinplace.testing.harness.functionalize_differential``; run by
  ``test_functionalize_corpus.py``).

A case is a function in the module of its theme, registered by the decorator right above
it (``@reinplace_case(make_args, ...)`` or ``@functionalize_case(make_args, *tags, ...)``)
with its inputs (factories in ``corpus.inputs``) and expectations. Adding a case touches
that one place; a new theme module is also listed in its package's ``THEMES``.
"""
