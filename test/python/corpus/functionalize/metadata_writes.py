"""Writes to a tensor's metadata on intermediates: in-place view ops (``t_``, ``unsqueeze_``,
``as_strided_``, ...) and ``resize_``."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a6, a34, a234, ar


@functionalize_case(lambda: (ar(2, 3),), "inplace_view_op")
def transpose_then_mutate(x):
    a = x.clone()
    a.transpose_(0, 1)
    a[0].add_(1)
    return a


@functionalize_case(lambda: (ar(2, 3),), "inplace_view_op")
def t_unsqueeze_squeeze_(x):
    a = x.clone()
    a.t_()
    a.unsqueeze_(0)
    a.add_(1)
    a.squeeze_(0)
    a[1].mul_(2)
    return a


@functionalize_case(a34, "inplace_view_op")
def inplace_view_op_on_view(x):
    a = x.clone()
    b = a[1:]
    b.t_()
    b[0].fill_(0.0)
    return a, b


@functionalize_case(a6, "inplace_view_op", "as_strided")
def as_strided_inplace_view(x):
    a = x.clone()
    a.as_strided_((2, 2), (1, 2))
    a.add_(1)
    return a


@functionalize_case(a234, "inplace_view_op")
def swapdims_squeeze_dim_(x):
    a = x.clone().unsqueeze(0)
    a.swapdims_(1, 3)
    a.squeeze_(0)
    a[0].sub_(3)
    return a


@functionalize_case(lambda: (ar(3),), "resize")
def resize_empty_then_fill(x):
    a = torch.empty(0).resize_(3)
    a.fill_(2.0)
    return a + x


@functionalize_case(lambda: (ar(2, 3),), "resize")
def resize_then_copy_and_mutate(x):
    a = torch.empty(0)
    a.resize_(2, 3)
    a.copy_(x)
    a[1].add_(1)
    return a


@functionalize_case(lambda: (ar(4),), "resize")
def resize_shrink_intermediate(x):
    a = x.clone() * 2
    a.resize_(2)
    a.add_(1)
    return a
