"""``as_strided`` as the first view of a base: written through, read after a write to the base."""

from __future__ import annotations

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a6, ar


@functionalize_case(a6, "as_strided")
def as_strided_write(x):
    a = x.clone()
    v = a.as_strided((2, 2), (1, 2))
    v.mul_(3)
    return a, v


@functionalize_case(a6, "as_strided")
def as_strided_read_after_base_write(x):
    a = x.clone()
    v = a.as_strided((3, 2), (2, 1), 0)
    a.add_(10)
    return v.sum(1)


@functionalize_case(lambda: (ar(8),), "as_strided", "input_mutation")
def as_strided_on_input_written(x):
    v = x.as_strided((2, 3), (3, 1), 2)
    v.add_(1)
    return v.sum()


@functionalize_case(a6, "as_strided")
def as_strided_overlapping_read_only(x):
    a = x.clone()
    w = a.as_strided((3, 3), (1, 1))
    a[1:3].fill_(0.0)
    return w * 1
