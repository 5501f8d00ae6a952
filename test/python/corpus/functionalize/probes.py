"""Found by probing in-place ops on views one by one, and by the random generator."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import ar


@functionalize_case(lambda: (ar(3, 3),), "view_dtype", "input_mutation")
def write_through_a_dtype_view(x):
    x.view(torch.int32)[0].zero_()
    return x * 1


@functionalize_case(
    lambda: (ar(3, 3),),
    "unfold",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason="torch.func.functionalize's unfold inverse zeroes the elements no window covers",
)
def write_through_unfold(x):
    x.view(-1).unfold(0, 2, 3).mul_(2)
    return x.sum()


@functionalize_case(
    lambda: (ar(3, 3),),
    "composite_inplace",
    stock_fails=True,
    stock_fails_reason="torch.func.functionalize rejects fill_diagonal_ (a composite in-place op) as an "
    "operator with alias annotations; fxinplace decomposes it first",
)
def fill_diagonal_then_read(x):
    a = x.clone()
    a.fill_diagonal_(5.0)
    return a.t() + 1


@functionalize_case(lambda: (ar(3, 3),), "scatter", "input_mutation")
def scatter_reduce_into_a_row(x):
    x[0].scatter_reduce_(0, torch.tensor([0, 1, 1]), x[1].clone(), "amax")
    return x


@functionalize_case(lambda: (ar(3, 3),), "out", "input_mutation")
def sort_out_into_a_row(x):
    torch.sort(x[0].flip(0), out=(x[1], torch.empty(3, dtype=torch.long)))
    return x


@functionalize_case(lambda: (ar(3, 3),), "chunk", "input_mutation")
def cumsum_on_a_chunk(x):
    x.chunk(3, 1)[2].cumsum_(0)
    return x.t()


@functionalize_case(lambda: (ar(2, 3, 4),), "layout")
def view_of_a_pure_result_of_a_permuted_view(x):
    # Random seed 3213: with copied views, `where` of a permuted view has a value
    # laid out unlike eager's result; a later view that is legal in eager must
    # still work.
    t = x.permute(0, 2, 1)
    w = torch.where(t < 3, t, t * 2)
    v = w[:, 0].view(6, 1, 1)
    v[1::3].add_(2.0)
    return w, v


@functionalize_case(lambda: (torch.complex(ar(2, 3), ar(2, 3, start=1.0)),), "complex", "input_mutation")
def write_through_real_and_imag(z):
    z.real.mul_(2)
    z.imag[0].zero_()
    return torch.view_as_real(z) + 1
