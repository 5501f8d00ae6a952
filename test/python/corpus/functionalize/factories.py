"""Factories inside the region (``zeros``, ``ones``, ``arange``, ``empty``, ``*_like``, ``eye``)
and ``torch.tensor`` literals, mutated."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34, ar


@functionalize_case(a34, "factory")
def zeros_slice_write(x):
    z = torch.zeros(3, 4)
    z[:, 1:3] = x[:, :2]
    return z


@functionalize_case(a34, "factory")
def ones_mul_by_view(x):
    o = torch.ones(4, 3)
    o.mul_(x.t())
    return o.sum(0), o


@functionalize_case(a34, "factory")
def arange_view_mutation(x):
    r = torch.arange(12, dtype=torch.float32).view(3, 4)
    r.t()[2].add_(x[:, 0])
    return r


@functionalize_case(a34, "factory")
def empty_fill_then_add(x):
    e = torch.empty(3, 4).fill_(0.5)
    e.add_(x)
    return e


@functionalize_case(a34, "factory")
def like_factories(x):
    a = torch.zeros_like(x)
    b = torch.ones_like(x)
    c = torch.full((3, 4), 2.0)
    d = torch.empty_like(x).copy_(x)
    a[0].fill_(1.0)
    b.sub_(a)
    c.mul_(b)
    d.add_(c)
    return d


@functionalize_case(lambda: (ar(3),), "factory")
def eye_diagonal(x):
    e = torch.eye(3)
    e.diagonal().mul_(x)
    return e


@functionalize_case(lambda: (ar(3),), "tensor_literal")
def tensor_literal_mutated(x):
    t = torch.tensor([1.0, 2.0, 3.0])
    t.add_(x)
    return t


@functionalize_case(lambda: (ar(4, 3),), "tensor_literal")
def tensor_literal_int_index(x):
    idx = torch.tensor([2, 0])
    idx.add_(1)
    return x[idx], idx


@functionalize_case(lambda: (ar(2, 2),), "tensor_literal")
def tensor_literal_2d_view_write(x):
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    t.t()[0].mul_(x[0])
    return t, t.sum()
