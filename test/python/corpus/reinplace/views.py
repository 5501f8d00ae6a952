"""In-place ops on views of intermediates, and views returned."""

from __future__ import annotations

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import randn, x44


@reinplace_case(x44)
def view_t_add_(x):
    a = x + 1
    a.t().add_(1)
    return a


@reinplace_case(lambda: (randn(2, 3, 4),))
def view_transpose_mul_(x):
    a = x + 0
    a.transpose(0, 2).mul_(2)
    return a


@reinplace_case(lambda: (randn(2, 3, 4), randn(4, 2, 3, seed=1)))
def view_permute_copy_(x, y):
    a = x * 1
    a.permute(2, 0, 1).copy_(y)
    return a


@reinplace_case(lambda: (randn(4, 4), randn(4, seed=1)))
def view_select_add_(x, y):
    a = x.clone()
    a.select(1, 2).add_(y)
    return a


@reinplace_case(x44)
def view_slice_clamp_(x):
    a = x * 2
    a[:, 1:3].clamp_(-0.5, 0.5)
    return a


@reinplace_case(x44)
def view_narrow_zero_(x):
    a = x + 0
    a.narrow(0, 1, 2).zero_()
    return a


@reinplace_case(x44)
def view_diagonal_mul_(x):
    a = x.clone()
    a.diagonal(offset=1).mul_(3)
    return a


@reinplace_case(lambda: (randn(4, 1),))
def view_expand_read(x):
    a = x.clone()
    b = a.expand(4, 4)
    c = b * 2
    return c.add(1)


@reinplace_case(lambda: (randn(4), randn(1, 4, seed=1)))
def view_unsqueeze_add_(x, y):
    a = x + 1
    a.unsqueeze(0).add_(y)
    return a


@reinplace_case(lambda: (randn(4, 1, 4),))
def view_squeeze_fill_(x):
    a = x.clone()
    a.squeeze(1).fill_(1)
    return a


@reinplace_case(x44)
def view_split_inplace(x):
    a = x + 1
    p, q = a.split(2)
    p.add_(1)
    q.mul_(2)
    return a


@reinplace_case(x44)
def view_chunk_mul_(x):
    a = x - 2
    a.chunk(2, dim=1)[0].mul_(0)
    return a


@reinplace_case(x44)
def view_unbind_fill_(x):
    a = x + 1
    rows = a.unbind(0)
    rows[1].fill_(0)
    return a, rows[2]


@reinplace_case(x44)
def view_as_strided_fill_(x):
    a = x.clone()
    a.as_strided((2, 2), (4, 1), 1).fill_(7)
    return a


@reinplace_case(x44)
def view_flat_slice_add_(x):
    a = x + 1
    a.view(-1)[3:6].add_(1)
    return a


@reinplace_case(x44)
def view_output_chain(x):
    a = x * 2
    return a.view(16)[2:8].view(2, 3)


@reinplace_case(x44)
def view_mutate_after_view_output(x):
    a = x + 1
    b = a.view(-1)
    a.mul_(2)
    return b


@reinplace_case(x44)
def view_output_then_clone_and_mutate(x):
    a = x + 1
    v = a[0]
    v2 = v.clone()
    a.add_(1)
    return v, v2, a
