"""``split`` / ``unbind`` / ``chunk`` with an in-place op on one piece."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34, a44, ar


@functionalize_case(lambda: (ar(6, 2),), "multi_view")
def split_inplace_piece(x):
    a = x.clone()
    p = a.split(2)
    p[1].add_(1)
    return a, p[0], p[2]


@functionalize_case(a34, "multi_view")
def unbind_inplace(x):
    a = x.clone()
    r = a.unbind(1)
    r[0].mul_(0)
    r[3].add_(r[1])
    return a


@functionalize_case(a44, "multi_view", "input_mutation")
def chunk_on_input(x):
    c = x.chunk(2, dim=1)
    c[1].fill_(7.0)
    return c[0] * 1


@functionalize_case(a44, "multi_view")
def split_with_sizes_returned_list(x):
    a = x.clone()
    pieces = a.split([1, 3], dim=0)
    pieces[1].sub_(1)
    return list(pieces)


@functionalize_case(lambda: (ar(2, 6),), "multi_view")
def tensor_split_and_unbind(x):
    a = x.clone()
    parts = torch.tensor_split(a, 3, dim=1)
    rows = parts[2].unbind(0)
    rows[1].neg_()
    return parts[2], a
