"""Programs calling the custom mutable ops of ``fxinplace.testing.harness.afv2``, shared by
the tests of re-inplacing (``test_reinplace_auto_functionalized.py``) and of the checker."""

from __future__ import annotations

from fxinplace.testing.harness.afv2 import add_one_


def add_one_to_a_slice_of_a_clone(x):
    """A clone of x, add_one_ on its slice [1:], the clone returned: traced by
    dispatch_functionalize, an auto_functionalized_v2 node with a slice encoding."""
    c = x.clone()
    add_one_(c[1:])
    return c
