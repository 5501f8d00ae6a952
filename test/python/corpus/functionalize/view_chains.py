"""Chains of views (view, reshape, transpose, permute, slice, select, diagonal, expand, unfold,
...) written through, or read after a write to the base."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34, a44, a234, ar


@functionalize_case(a44, "view_chain")
def chain_view_reshape_transpose(x):
    a = x.clone()
    b = a.view(2, 8).reshape(4, 2, 2).transpose(1, 2)
    b[:, 0].add_(100)
    return a, b


@functionalize_case(a234, "view_chain")
def chain_permute_unsqueeze_squeeze(x):
    a = x.clone()
    b = a.permute(2, 0, 1).unsqueeze(1).squeeze(1)
    b[..., 0].mul_(-1)
    return a


@functionalize_case(lambda: (ar(5, 6),), "view_chain")
def chain_slice_select_narrow(x):
    a = x.clone()
    b = a[1:, ::2].select(1, 0).narrow(0, 1, 2)
    b.fill_(-7.0)
    return a, b


@functionalize_case(a44, "view_chain")
def chain_diagonal(x):
    a = x.clone()
    a.diagonal().add_(10)
    a.diagonal(offset=1).mul_(0)
    return a


@functionalize_case(a234, "view_chain")
def chain_diagonal_3d(x):
    a = x.clone()
    d = a.diagonal(offset=1, dim1=1, dim2=2)
    d.neg_()
    return a, d


@functionalize_case(a34, "view_chain")
def chain_expand_read_only(x):
    a = x.clone()
    e = a[0:1].expand(3, 4)
    f = a[:, 0:1].expand(3, 5)
    a.add_(1)
    return e + f[:, :4], e.sum()


@functionalize_case(a34, "view_chain")
def chain_t_select(x):
    a = x.clone()
    a.t()[0].add_(1)
    a.t().t()[1].mul_(3)
    return a


@functionalize_case(a234, "view_chain")
def chain_movedim_flatten_unflatten(x):
    a = x.clone()
    b = a.flatten(1).unflatten(1, (3, 4)).movedim(0, 2)
    b[1].sub_(0.5)
    return a


@functionalize_case(a44, "view_chain")
def chain_view_as_and_alias(x):
    a = x.clone()
    b = a.view_as(torch.empty(2, 8))
    c = b.detach()
    c[0].fill_(3.0)
    return a, b


@functionalize_case(lambda: (ar(8),), "view_chain")
def chain_unfold_read_only(x):
    a = x.clone()
    w = a.unfold(0, 3, 2)
    a[::2].mul_(10)
    return w.sum(1), w


@functionalize_case(a234, "view_chain")
def chain_long_then_base_write(x):
    a = x.clone()
    v = a.transpose(0, 2)[1:3].unsqueeze(0)[0, :, 1]
    a[1].fill_(-1.0)
    v2 = v * 2
    return v, v2
