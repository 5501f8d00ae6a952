"""In-place ops on views: ``copy_``, ``fill_``, ``zero_``, ``index_put_``, ``masked_fill_``,
``scatter_``, ``clamp_``, setitem, and others."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34, a34_r4, a44, ar, r44, r44_r44


@functionalize_case(a34_r4, "copy")
def copy_broadcast_into_view(x, y):
    a = x.clone()
    a[1:].copy_(y)
    return a


@functionalize_case(lambda: (ar(3, 4),), "copy", "dtype")
def copy_with_dtype_conversion(x):
    i = torch.zeros(3, 4, dtype=torch.int64)
    i.copy_(x * 1.5)
    f = torch.zeros(4, dtype=torch.float64)
    f.copy_(i[1])
    return i, f


@functionalize_case(a34, "fill")
def fill_with_tensor_value(x):
    a = x.clone()
    a[:, 2].fill_(x[2, 3])
    a[0].zero_()
    return a


@functionalize_case(a44, "index_put")
def index_put_accumulate(x):
    a = x.clone()
    idx = torch.tensor([0, 2, 0])
    a.index_put_((idx,), torch.ones(4), accumulate=True)
    return a


@functionalize_case(a44, "index_put", "input_mutation")
def index_put_on_input_view(x):
    rows = torch.tensor([1, 3])
    cols = torch.tensor([0, 2])
    x[1:].index_put_((rows - 1, cols), torch.tensor(-1.0))
    return x


@functionalize_case(r44_r44, "masked_fill")
def masked_fill_on_view(x, y):
    a = x.clone()
    a.t()[1:].masked_fill_(y.t()[1:] > 0, 0.25)
    return a


@functionalize_case(a34, "scatter")
def scatter_variants(x):
    a = torch.zeros(3, 4)
    idx = torch.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])
    a[:2].scatter_(1, idx[:, :3] % 4, x[:2, :3])
    b = x.clone()
    b.scatter_(0, idx, 5.0)
    c = torch.zeros(3, 4)
    c.scatter_add_(0, idx, x[:2])
    return a, b, c


@functionalize_case(r44, "clamp")
def clamp_on_views(x):
    a = x.clone()
    a[0].clamp_(-0.5, 0.5)
    a[:, 1:].clamp_(min=0.0)
    a.diagonal().clamp_(max=-1.0)
    return a


@functionalize_case(a34, "setitem")
def setitem_on_views(x):
    a = x.clone()
    a[1:, 0] = 3.0
    a[..., 1] += x[:, 2]
    a[0, 1:3] = torch.tensor([7.0, 8.0])
    return a


@functionalize_case(r44, "setitem", "index_put")
def setitem_advanced_and_mask(x):
    a = x.clone()
    a[torch.tensor([3, 1])] = 0.5
    a[a < 0] = 0.0
    b = a.t()
    b[:, torch.tensor([0, 2])] *= 2.0
    return a


@functionalize_case(a44, "setitem", "input_mutation")
def setitem_on_input_view(x):
    v = x[1:3]
    v[:, ::2] = -1.0
    v[0] = v[1] * 2
    return x.sum()


@functionalize_case(r44, "misc_inplace")
def misc_inplace_ops(x):
    a = x.clone()
    a[0].exp_()
    a[1].sigmoid_()
    a[2].lerp_(a[3], 0.5)
    a[:, 3].index_fill_(0, torch.tensor([0, 2]), 1.0)
    a.index_add_(0, torch.tensor([3, 3]), torch.ones(2, 4))
    return a


@functionalize_case(r44_r44, "misc_inplace")
def addmm_inplace_on_view(x, y):
    a = torch.zeros(4, 8)
    v = a[:, 2:6]
    v.addmm_(x, y, beta=0.5, alpha=2.0)
    return a
