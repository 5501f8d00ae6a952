"""Corpus of small programs for differential tests of ``functionalize``.

Each ``FunctionalizeCase`` is a plain Python function plus a factory of fresh,
deterministic inputs. ``functionalize_differential.check_functionalize`` runs it
eagerly, under the implementation being tested (eagerly and traced with
``make_fx``) and under ``torch.func.functionalize`` as an oracle.

Conventions:

* ``make_args()`` returns a *fresh* tuple on every call (inputs may be mutated).
  Values are exact (``arange``-based, or seeded ``randn`` rounded to 1/16) so
  results compare exactly in almost all cases.
* Every write is well defined in eager mode: no writes through overlapping
  views (``expand``, overlapping ``as_strided``) and no reads that partially
  overlap the written region.
* ``inference_mode=True``: the harness creates the inputs and runs every call
  inside ``torch.inference_mode()``.
* ``stock_fails``: ``torch.func.functionalize`` itself does not reproduce eager on
  this case (``True`` for both ``remove`` modes, or a tuple of the failing modes);
  ``stock_fails_reason`` says why. The oracle comparison is skipped for it, the
  implementation under test is still checked against eager.

Run ``python functionalize_corpus.py`` to list the cases.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["PROGRAMS", "FunctionalizeCase", "case_by_name"]


@dataclasses.dataclass(frozen=True)
class FunctionalizeCase:
    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], Sequence[Any]]
    # Create the inputs and run every call inside torch.inference_mode().
    inference_mode: bool = False
    # torch.func.functionalize disagrees with eager here (True: both remove modes,
    # or a tuple of the failing remove modes); the reason must be given.
    stock_fails: bool | tuple[str, ...] = False
    stock_fails_reason: str = ""
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.stock_fails and not self.stock_fails_reason:
            raise ValueError(f"case {self.name}: stock_fails needs a stock_fails_reason")


PROGRAMS: list[FunctionalizeCase] = []


def _case(make_args: Callable[[], Sequence[Any]], *tags: str, **options: Any) -> Callable:
    """Register the decorated function as a case named after it."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PROGRAMS.append(FunctionalizeCase(fn.__name__, fn, make_args, tags=tags, **options))
        return fn

    return register


def case_by_name(name: str) -> FunctionalizeCase:
    for c in PROGRAMS:
        if c.name == name:
            return c
    raise KeyError(name)


# --------------------------------------------------------------------------- inputs


def _ar(*shape: int, start: float = 0.0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``arange`` of the right size, reshaped (exact values)."""
    n = 1
    for s in shape:
        n *= s
    return (torch.arange(n, dtype=torch.float64) + start).to(dtype).reshape(shape)


def _rn(*shape: int, seed: int = 0) -> torch.Tensor:
    """Seeded ``randn`` rounded to multiples of 1/16 (exact arithmetic in most ops)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).mul(16).round().div(16)


def _a44():
    return (_ar(4, 4),)


def _a34():
    return (_ar(3, 4),)


def _a234():
    return (_ar(2, 3, 4),)


def _a6():
    return (_ar(6),)


def _r44():
    return (_rn(4, 4),)


def _r44_r44():
    return (_rn(4, 4), _rn(4, 4, seed=1))


def _a34_r4():
    return (_ar(3, 4), _rn(4, seed=2))


# ======================================================================================
# Seed-style examples: in-place on a view updates the base and sibling views; in-place
# on the base updates the views.
# ======================================================================================


@_case(_a44, "seed")
def view_inplace_updates_base(x):
    a = x.clone()
    v = a.view(-1)
    v.add_(1)
    return a


@_case(_a44, "seed")
def view_inplace_updates_siblings(x):
    a = x.clone()
    row = a[0]
    col = a[:, 1]
    row.mul_(2)
    return col, a


@_case(_a34, "seed")
def base_inplace_updates_views(x):
    a = x.clone()
    v = a.t()
    w = a[1:, 2]
    a.add_(1)
    return v, w


@_case(_a44, "seed")
def base_inplace_then_view_chain(x):
    a = x.clone()
    v = a.view(2, 8)[1]
    a.zero_()
    return v + 1


@_case(_a44, "seed")
def nested_views_two_writes(x):
    a = x.clone()
    b = a.transpose(0, 1)
    c = b[1:3]
    c.fill_(5.0)
    d = a[2]
    d.sub_(1)
    return a, b, c


@_case(_r44, "seed")
def scatter_op_mirror(x):
    # PyTorch's test_fx_reinplace_pass "scatter_op".
    a = x.clone()
    e = a.view(-1)
    b = a.view(-1)
    c = b[0]
    d = c.view(-1)
    d.add_(1)
    return a.view(-1) + e


@_case(_r44, "seed")
def scatter_twice(x):
    a = x.clone()
    b = a[:, 1]
    c = b[1]
    c.add_(1)
    b.mul_(2)
    return a


@_case(_a44, "seed")
def view_read_before_and_after_write(x):
    a = x.clone()
    v = a[1:3, 1:3]
    before = v.sum()
    a.mul_(-1)
    after = v.sum()
    return before, after, v


# ======================================================================================
# Chains of views
# ======================================================================================


@_case(_a44, "view_chain")
def chain_view_reshape_transpose(x):
    a = x.clone()
    b = a.view(2, 8).reshape(4, 2, 2).transpose(1, 2)
    b[:, 0].add_(100)
    return a, b


@_case(_a234, "view_chain")
def chain_permute_unsqueeze_squeeze(x):
    a = x.clone()
    b = a.permute(2, 0, 1).unsqueeze(1).squeeze(1)
    b[..., 0].mul_(-1)
    return a


@_case(lambda: (_ar(5, 6),), "view_chain")
def chain_slice_select_narrow(x):
    a = x.clone()
    b = a[1:, ::2].select(1, 0).narrow(0, 1, 2)
    b.fill_(-7.0)
    return a, b


@_case(_a44, "view_chain")
def chain_diagonal(x):
    a = x.clone()
    a.diagonal().add_(10)
    a.diagonal(offset=1).mul_(0)
    return a


@_case(_a234, "view_chain")
def chain_diagonal_3d(x):
    a = x.clone()
    d = a.diagonal(offset=1, dim1=1, dim2=2)
    d.neg_()
    return a, d


@_case(_a34, "view_chain")
def chain_expand_read_only(x):
    a = x.clone()
    e = a[0:1].expand(3, 4)
    f = a[:, 0:1].expand(3, 5)
    a.add_(1)
    return e + f[:, :4], e.sum()


@_case(_a34, "view_chain")
def chain_t_select(x):
    a = x.clone()
    a.t()[0].add_(1)
    a.t().t()[1].mul_(3)
    return a


@_case(_a234, "view_chain")
def chain_movedim_flatten_unflatten(x):
    a = x.clone()
    b = a.flatten(1).unflatten(1, (3, 4)).movedim(0, 2)
    b[1].sub_(0.5)
    return a


@_case(_a44, "view_chain")
def chain_view_as_and_alias(x):
    a = x.clone()
    b = a.view_as(torch.empty(2, 8))
    c = b.detach()
    c[0].fill_(3.0)
    return a, b


@_case(lambda: (_ar(8),), "view_chain")
def chain_unfold_read_only(x):
    a = x.clone()
    w = a.unfold(0, 3, 2)
    a[::2].mul_(10)
    return w.sum(1), w


@_case(_a234, "view_chain")
def chain_long_then_base_write(x):
    a = x.clone()
    v = a.transpose(0, 2)[1:3].unsqueeze(0)[0, :, 1]
    a[1].fill_(-1.0)
    v2 = v * 2
    return v, v2


# ======================================================================================
# In-place on views of inputs (input mutation)
# ======================================================================================


@_case(_a44, "input_mutation")
def input_add_(x):
    x.add_(1)
    return x * 2


@_case(_a44, "input_mutation")
def input_row_fill(x):
    x[0].fill_(0.0)
    return x.sum()


@_case(_a34, "input_mutation")
def input_transposed_view_mul(x):
    x.t()[1].mul_(3)
    return x + 0


@_case(_r44_r44, "input_mutation")
def input_two_inputs_mutated(x, y):
    x.add_(y)
    y.mul_(2)
    return x + y


@_case(_a44, "input_mutation", "output_aliases_input")
def input_view_chain_zero_returned(x):
    v = x.view(-1)[2:6]
    v.zero_()
    return v


@_case(lambda: (_ar(3, 4).t(),), "input_mutation")
def input_noncontiguous_mutated(x):
    x.add_(1)
    x[0].mul_(2)
    return x.sum(0)


@_case(_a34_r4, "input_mutation")
def input_mutated_only_one_read(x, y):
    x[1:].sub_(y)
    return y.sum()


@_case(_a44, "input_mutation")
def input_mutation_no_tensor_output(x):
    x.diagonal().fill_(1.0)
    return x.shape[0]


@_case(_a44, "input_mutation")
def input_two_overlapping_views_written(x):
    x.view(-1)[0:6].add_(1)
    x[1].mul_(2)
    return x.clone()


@_case(_a44, "input_mutation")
def input_mutation_then_read_via_old_view(x):
    v = x[:, 0]
    x.mul_(2)
    return v + 1


@_case(lambda: (_ar(2, 3),), "input_mutation", "inplace_view_op")
def input_metadata_t_(x):
    x.t_()
    x[0].add_(1)
    return x * 1


@_case(lambda: (_ar(4), _ar(3)), "input_mutation", "inplace_view_op")
def input_metadata_unsqueeze_(x, y):
    x.unsqueeze_(0)
    y.add_(1)
    x[0, 1:].mul_(2)
    return x + 1


@_case(lambda: (_ar(4),), "input_mutation", "resize")
def input_resize_grow(x):
    x.resize_(6)
    x[4:].fill_(1.0)
    return x * 1


# ======================================================================================
# split / unbind / chunk with in-place on one piece
# ======================================================================================


@_case(lambda: (_ar(6, 2),), "multi_view")
def split_inplace_piece(x):
    a = x.clone()
    p = a.split(2)
    p[1].add_(1)
    return a, p[0], p[2]


@_case(_a34, "multi_view")
def unbind_inplace(x):
    a = x.clone()
    r = a.unbind(1)
    r[0].mul_(0)
    r[3].add_(r[1])
    return a


@_case(_a44, "multi_view", "input_mutation")
def chunk_on_input(x):
    c = x.chunk(2, dim=1)
    c[1].fill_(7.0)
    return c[0] * 1


@_case(_a44, "multi_view")
def split_with_sizes_returned_list(x):
    a = x.clone()
    pieces = a.split([1, 3], dim=0)
    pieces[1].sub_(1)
    return list(pieces)


@_case(lambda: (_ar(2, 6),), "multi_view")
def tensor_split_and_unbind(x):
    a = x.clone()
    parts = torch.tensor_split(a, 3, dim=1)
    rows = parts[2].unbind(0)
    rows[1].neg_()
    return parts[2], a


# ======================================================================================
# In-place view ops on intermediates
# ======================================================================================


@_case(lambda: (_ar(2, 3),), "inplace_view_op")
def transpose_then_mutate(x):
    a = x.clone()
    a.transpose_(0, 1)
    a[0].add_(1)
    return a


@_case(lambda: (_ar(2, 3),), "inplace_view_op")
def t_unsqueeze_squeeze_(x):
    a = x.clone()
    a.t_()
    a.unsqueeze_(0)
    a.add_(1)
    a.squeeze_(0)
    a[1].mul_(2)
    return a


@_case(_a34, "inplace_view_op")
def inplace_view_op_on_view(x):
    a = x.clone()
    b = a[1:]
    b.t_()
    b[0].fill_(0.0)
    return a, b


@_case(_a6, "inplace_view_op", "as_strided")
def as_strided_inplace_view(x):
    a = x.clone()
    a.as_strided_((2, 2), (1, 2))
    a.add_(1)
    return a


@_case(_a234, "inplace_view_op")
def swapdims_squeeze_dim_(x):
    a = x.clone().unsqueeze(0)
    a.swapdims_(1, 3)
    a.squeeze_(0)
    a[0].sub_(3)
    return a


# ======================================================================================
# as_strided (as the first view of a base)
# ======================================================================================


@_case(_a6, "as_strided")
def as_strided_write(x):
    a = x.clone()
    v = a.as_strided((2, 2), (1, 2))
    v.mul_(3)
    return a, v


@_case(_a6, "as_strided")
def as_strided_read_after_base_write(x):
    a = x.clone()
    v = a.as_strided((3, 2), (2, 1), 0)
    a.add_(10)
    return v.sum(1)


@_case(lambda: (_ar(8),), "as_strided", "input_mutation")
def as_strided_on_input_written(x):
    v = x.as_strided((2, 3), (3, 1), 2)
    v.add_(1)
    return v.sum()


@_case(_a6, "as_strided")
def as_strided_overlapping_read_only(x):
    a = x.clone()
    w = a.as_strided((3, 3), (1, 1))
    a[1:3].fill_(0.0)
    return w * 1


# ======================================================================================
# resize_ on intermediates
# ======================================================================================


@_case(lambda: (_ar(3),), "resize")
def resize_empty_then_fill(x):
    a = torch.empty(0).resize_(3)
    a.fill_(2.0)
    return a + x


@_case(lambda: (_ar(2, 3),), "resize")
def resize_then_copy_and_mutate(x):
    a = torch.empty(0)
    a.resize_(2, 3)
    a.copy_(x)
    a[1].add_(1)
    return a


@_case(lambda: (_ar(4),), "resize")
def resize_shrink_intermediate(x):
    a = x.clone() * 2
    a.resize_(2)
    a.add_(1)
    return a


# ======================================================================================
# Factories inside the region; torch.tensor literals
# ======================================================================================


@_case(_a34, "factory")
def zeros_slice_write(x):
    z = torch.zeros(3, 4)
    z[:, 1:3] = x[:, :2]
    return z


@_case(_a34, "factory")
def ones_mul_by_view(x):
    o = torch.ones(4, 3)
    o.mul_(x.t())
    return o.sum(0), o


@_case(_a34, "factory")
def arange_view_mutation(x):
    r = torch.arange(12, dtype=torch.float32).view(3, 4)
    r.t()[2].add_(x[:, 0])
    return r


@_case(_a34, "factory")
def empty_fill_then_add(x):
    e = torch.empty(3, 4).fill_(0.5)
    e.add_(x)
    return e


@_case(_a34, "factory")
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


@_case(lambda: (_ar(3),), "factory")
def eye_diagonal(x):
    e = torch.eye(3)
    e.diagonal().mul_(x)
    return e


@_case(lambda: (_ar(3),), "tensor_literal")
def tensor_literal_mutated(x):
    t = torch.tensor([1.0, 2.0, 3.0])
    t.add_(x)
    return t


@_case(lambda: (_ar(4, 3),), "tensor_literal")
def tensor_literal_int_index(x):
    idx = torch.tensor([2, 0])
    idx.add_(1)
    return x[idx], idx


@_case(lambda: (_ar(2, 2),), "tensor_literal")
def tensor_literal_2d_view_write(x):
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    t.t()[0].mul_(x[0])
    return t, t.sum()


# ======================================================================================
# Inference mode (inputs created and calls run inside torch.inference_mode())
# ======================================================================================


@_case(_a44, "inference_mode", inference_mode=True)
def inference_view_mutation(x):
    a = x.clone()
    a.view(-1)[::3].add_(1)
    return a


@_case(_r44_r44, "inference_mode", "input_mutation", inference_mode=True)
def inference_input_mutation(x, y):
    x[1:].mul_(2)
    y.t()[0].copy_(x[0])
    return x + y


@_case(_a34, "inference_mode", "factory", inference_mode=True)
def inference_factory_and_views(x):
    z = torch.zeros(4, 3)
    z.t()[1].fill_(1.0)
    return x @ z, z


@_case(_a6, "inference_mode", "output_aliases_input", inference_mode=True)
def inference_returns_input_view(x):
    x[2:].zero_()
    return x[1:4], x.view(2, 3)


# ======================================================================================
# Mixed mutation of inputs and intermediates
# ======================================================================================


@_case(_r44_r44, "mixed")
def mixed_input_and_intermediate(x, y):
    a = x * 2
    a[0].add_(y[0])
    x[1].copy_(a[0])
    y.mul_(a.sum())
    return a


@_case(_a34_r4, "mixed")
def mixed_intermediate_from_input_view(x, y):
    v = x[1:]
    a = v.clone()
    a.add_(y)
    v.sub_(a)
    return a, v


@_case(_r44, "mixed")
def mixed_write_input_via_intermediate_chain(x):
    a = x.t().contiguous()
    a[0].fill_(9.0)
    x.copy_(a)
    return x.view(-1)[:5]


# ======================================================================================
# Outputs that are views of mutated tensors / outputs that alias inputs
# ======================================================================================


@_case(_a44, "output_view")
def output_views_of_mutated(x):
    a = x.clone()
    a.mul_(2)
    return a.view(2, 8), a[1], a.t(), a


@_case(_a44, "output_view")
def output_view_then_base_mutated(x):
    a = x.clone()
    v = a[1:3]
    a.add_(1)
    return v


@_case(_a44, "output_aliases_input")
def output_identity(x):
    return x


@_case(_a34, "output_aliases_input")
def output_view_of_unmutated_input(x):
    return x.t(), x[0]


@_case(_a34, "output_aliases_input", "input_mutation")
def output_mutated_input(x):
    x.add_(1)
    return x, x[1]


@_case(_a34_r4, "output_aliases_input")
def output_mixed_aliasing(x, y):
    a = x + 1
    a[0].copy_(y)
    return a, y, x.view(-1)


# ======================================================================================
# out= ops
# ======================================================================================


@_case(_r44_r44, "out")
def out_into_fresh(x, y):
    c = torch.empty(4, 4)
    torch.add(x, y, out=c)
    return c


@_case(_r44_r44, "out", "input_mutation")
def out_into_input(x, y):
    torch.mul(x, 2, out=y)
    return y.sum()


@_case(lambda: (_ar(3),), "out", "resize")
def out_resizes_empty(x):
    c = torch.empty(0)
    torch.add(x, 1, out=c)
    return c


@_case(_a44, "out")
def out_into_view(x):
    a = torch.zeros(4, 4)
    torch.sub(x[0], 1, out=a[2])
    torch.mul(x[:, 1], 2, out=a[:, 0])
    return a


@_case(_r44_r44, "out")
def out_mm_and_sum(x, y):
    m = torch.empty(4, 4)
    torch.mm(x, y, out=m)
    s = torch.empty(())
    torch.sum(m, dim=(0, 1), out=s)
    return m, s


@_case(
    _r44_r44,
    "out",
    stock_fails=True,
    stock_fails_reason=(
        "aten::matmul.out is CompositeImplicitAutograd with an out= alias annotation; "
        "functionalization refuses it ('Found a custom (non-ATen) operator whose output has "
        "alias annotations'), eager runs it fine"
    ),
)
def out_matmul_composite(x, y):
    m = torch.empty(4, 4)
    torch.matmul(x, y, out=m)
    return m


# ======================================================================================
# copy_, fill_, zero_, index_put_, masked_fill_, scatter_, clamp_, setitem
# ======================================================================================


@_case(_a34_r4, "copy")
def copy_broadcast_into_view(x, y):
    a = x.clone()
    a[1:].copy_(y)
    return a


@_case(lambda: (_ar(3, 4),), "copy", "dtype")
def copy_with_dtype_conversion(x):
    i = torch.zeros(3, 4, dtype=torch.int64)
    i.copy_(x * 1.5)
    f = torch.zeros(4, dtype=torch.float64)
    f.copy_(i[1])
    return i, f


@_case(_a34, "fill")
def fill_with_tensor_value(x):
    a = x.clone()
    a[:, 2].fill_(x[2, 3])
    a[0].zero_()
    return a


@_case(_a44, "index_put")
def index_put_accumulate(x):
    a = x.clone()
    idx = torch.tensor([0, 2, 0])
    a.index_put_((idx,), torch.ones(4), accumulate=True)
    return a


@_case(_a44, "index_put", "input_mutation")
def index_put_on_input_view(x):
    rows = torch.tensor([1, 3])
    cols = torch.tensor([0, 2])
    x[1:].index_put_((rows - 1, cols), torch.tensor(-1.0))
    return x


@_case(_r44_r44, "masked_fill")
def masked_fill_on_view(x, y):
    a = x.clone()
    a.t()[1:].masked_fill_(y.t()[1:] > 0, 0.25)
    return a


@_case(_a34, "scatter")
def scatter_variants(x):
    a = torch.zeros(3, 4)
    idx = torch.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])
    a[:2].scatter_(1, idx[:, :3] % 4, x[:2, :3])
    b = x.clone()
    b.scatter_(0, idx, 5.0)
    c = torch.zeros(3, 4)
    c.scatter_add_(0, idx, x[:2])
    return a, b, c


@_case(_r44, "clamp")
def clamp_on_views(x):
    a = x.clone()
    a[0].clamp_(-0.5, 0.5)
    a[:, 1:].clamp_(min=0.0)
    a.diagonal().clamp_(max=-1.0)
    return a


@_case(_a34, "setitem")
def setitem_on_views(x):
    a = x.clone()
    a[1:, 0] = 3.0
    a[..., 1] += x[:, 2]
    a[0, 1:3] = torch.tensor([7.0, 8.0])
    return a


@_case(_r44, "setitem", "index_put")
def setitem_advanced_and_mask(x):
    a = x.clone()
    a[torch.tensor([3, 1])] = 0.5
    a[a < 0] = 0.0
    b = a.t()
    b[:, torch.tensor([0, 2])] *= 2.0
    return a


@_case(_a44, "setitem", "input_mutation")
def setitem_on_input_view(x):
    v = x[1:3]
    v[:, ::2] = -1.0
    v[0] = v[1] * 2
    return x.sum()


@_case(_r44, "misc_inplace")
def misc_inplace_ops(x):
    a = x.clone()
    a[0].exp_()
    a[1].sigmoid_()
    a[2].lerp_(a[3], 0.5)
    a[:, 3].index_fill_(0, torch.tensor([0, 2]), 1.0)
    a.index_add_(0, torch.tensor([3, 3]), torch.ones(2, 4))
    return a


@_case(_r44_r44, "misc_inplace")
def addmm_inplace_on_view(x, y):
    a = torch.zeros(4, 8)
    v = a[:, 2:6]
    v.addmm_(x, y, beta=0.5, alpha=2.0)
    return a


# ======================================================================================
# Python scalars (wrapped numbers), integer and bool tensors
# ======================================================================================


@_case(_a34, "scalar")
def scalar_inplace_ops(x):
    a = x.clone()
    a.add_(2)
    a.mul_(0.5)
    a[0].sub_(1, alpha=3)
    a[1] /= 4
    a[2] **= 2
    return a


@_case(lambda: (torch.arange(12).reshape(3, 4),), "int")
def int_tensor_mutations(x):
    a = x.clone()
    a[0] += 5
    a[1].mul_(-3)
    a.t()[2].floor_divide_(2)
    a.remainder_(7)
    return a, a.sum(), a.max()


@_case(lambda: (torch.arange(12, dtype=torch.int32).reshape(3, 4), _ar(3, 4)), "int", "input_mutation")
def int_input_mutated_float_from_int(i, f):
    i[1:].add_(10)
    f.add_(i)
    return f, i.float() / 2


@_case(_r44, "bool")
def bool_tensor_mutations(x):
    m = x > 0
    m[0] = False
    m.t()[1].logical_not_()
    m[2].bitwise_and_(x[3] < 0.5)
    return m, x.masked_fill(m, 0.0), m.sum()


@_case(lambda: (_rn(4, 4) > 0, _rn(4, 4, seed=3)), "bool", "input_mutation")
def bool_input_mutated(m, x):
    m[:, 0].fill_(True)
    m.logical_and_(x > -1.0)
    return torch.where(m, x, -x)


# ======================================================================================
# cat / stack of views of mutated tensors; matmul / linear with a mutated weight view
# ======================================================================================


@_case(_a44, "cat")
def cat_views_of_mutated(x):
    a = x.clone()
    a[1].add_(100)
    return torch.cat([a[0], a[1], a[:, 0]]), a


@_case(_r44_r44, "cat", "input_mutation")
def stack_views_after_input_mutation(x, y):
    x.t()[0].mul_(2)
    return torch.stack([x[0], y[1], x[:, 0]], dim=1)


@_case(lambda: (_rn(3, 4), _rn(5, 4, seed=1), _rn(5, seed=2)), "matmul")
def linear_with_mutated_weight_view(x, w, b):
    wc = w.clone()
    wc[0].mul_(2)
    wc.t()[1].zero_()
    return F.linear(x, wc, b), x @ wc.t()


@_case(lambda: (_rn(3, 4), _rn(5, 4, seed=1)), "matmul", "input_mutation")
def matmul_with_mutated_input_weight(x, w):
    w[1:3].add_(1.0)
    y = torch.mm(x, w.t())
    w[0].zero_()
    return y, torch.matmul(x, w[:2].t())


@_case(
    lambda: (_rn(2, 3, 4), _rn(4, 2, seed=1)),
    "matmul",
    stock_fails=("mutations_and_views",),
    stock_fails_reason=(
        "aten::matmul with a >2-d operand decomposes (CompositeImplicitAutograd) into "
        "expand/view + bmm, and torch.func.functionalize leaves those aten.view/aten.expand "
        "nodes in the graph with remove='mutations_and_views' (values are right)"
    ),
)
def matmul_batched_views(x, w):
    a = x.clone()
    a[:, 0].mul_(2)
    return torch.matmul(a, w), a


# ======================================================================================
# .contiguous(), .to(dtype), reductions, containers, non-tensor arguments
# ======================================================================================


@_case(_a34, "contiguous")
def contiguous_alias_on_contiguous(x):
    a = x.clone()
    c = a.contiguous()  # an alias: a is contiguous
    c[0].fill_(-2.0)
    d = a[1:].contiguous()  # also an alias (a row slice is contiguous)
    d.mul_(2)
    return a, c


@_case(
    _a34,
    "contiguous",
    stock_fails=("mutations_and_views",),
    stock_fails_reason=(
        "with remove='mutations_and_views' the functional wrapper of a.t() takes its strides "
        "from t_copy (contiguous), so .contiguous() returns an alias instead of a copy and the "
        "writes through it reach a; eager copies"
    ),
)
def contiguous_of_transposed_is_copy(x):
    a = x.clone()
    b = a.t().contiguous()  # a copy in eager
    b[0].fill_(-1.0)
    return a, b


@_case(_a34, "to_dtype")
def to_dtype_copy_vs_alias(x):
    a = x.clone()
    d = a.to(torch.float64)  # a copy
    s = a.to(torch.float32)  # an alias: same dtype
    d.add_(0.5)
    s[1].mul_(3)
    return a, d, a.to(torch.int64)


@_case(_r44, "reduction")
def reductions_after_mutation(x):
    a = x.clone()
    a[1:3].mul_(4)
    return a.sum(), a.mean(0), a.amax(1), a.argmax(), a.std(), a.norm()


@_case(_a44, "container")
def returns_dict_and_lists(x):
    a = x.clone()
    v = a[1]
    v.add_(1)
    return {"a": a, "views": [v, a.t()], "pair": (a.sum(), v.sum())}


@_case(lambda: (_ar(4, 3), 2), "non_tensor_arg")
def int_arg_passthrough(x, n):
    a = x.clone()
    a[:n].add_(n)
    return a, n * 2


@_case(lambda: (_ar(3, 4), 1, 0.5), "non_tensor_arg", "input_mutation")
def scalar_args_and_input_mutation(x, dim, s):
    x.select(dim, 2).mul_(s)
    return x.sum(dim)


@_case(lambda: ([_ar(2, 2), _ar(2, 2, start=4.0)],), "container")
def list_input_mutated(xs):
    xs[0].add_(xs[1])
    xs[1][0].zero_()
    return xs[0] + xs[1]


# Found by probing in-place ops on views one by one.


@_case(lambda: (_ar(3, 3),), "view_dtype", "input_mutation")
def write_through_a_dtype_view(x):
    x.view(torch.int32)[0].zero_()
    return x * 1


@_case(
    lambda: (_ar(3, 3),),
    "unfold",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason="torch.func.functionalize's unfold inverse zeroes the elements no window covers",
)
def write_through_unfold(x):
    x.view(-1).unfold(0, 2, 3).mul_(2)
    return x.sum()


@_case(
    lambda: (_ar(3, 3),),
    "composite_inplace",
    stock_fails=True,
    stock_fails_reason="torch.func.functionalize rejects fill_diagonal_ (a composite in-place op) as an "
    "operator with alias annotations; fxinplace decomposes it first",
)
def fill_diagonal_then_read(x):
    a = x.clone()
    a.fill_diagonal_(5.0)
    return a.t() + 1


@_case(lambda: (_ar(3, 3),), "scatter", "input_mutation")
def scatter_reduce_into_a_row(x):
    x[0].scatter_reduce_(0, torch.tensor([0, 1, 1]), x[1].clone(), "amax")
    return x


@_case(lambda: (_ar(3, 3),), "out", "input_mutation")
def sort_out_into_a_row(x):
    torch.sort(x[0].flip(0), out=(x[1], torch.empty(3, dtype=torch.long)))
    return x


@_case(lambda: (_ar(3, 3),), "chunk", "input_mutation")
def cumsum_on_a_chunk(x):
    x.chunk(3, 1)[2].cumsum_(0)
    return x.t()


@_case(lambda: (_ar(2, 3, 4),), "layout")
def view_of_a_pure_result_of_a_permuted_view(x):
    # Random seed 3213: with copied views, `where` of a permuted view has a value
    # laid out unlike eager's result; a later view that is legal in eager must
    # still work.
    t = x.permute(0, 2, 1)
    w = torch.where(t < 3, t, t * 2)
    v = w[:, 0].view(6, 1, 1)
    v[1::3].add_(2.0)
    return w, v


@_case(lambda: (torch.complex(_ar(2, 3), _ar(2, 3, start=1.0)),), "complex", "input_mutation")
def write_through_real_and_imag(z):
    z.real.mul_(2)
    z.imag[0].zero_()
    return torch.view_as_real(z) + 1


# Inputs that share memory: eager's writes through one are seen through the
# others. torch.func.functionalize treats them as separate tensors.
_ALIASED_INPUTS_REASON = "torch.func.functionalize treats inputs that share memory as separate tensors"


@_case(
    lambda: (lambda x: (x, x))(_ar(2, 3)),
    "aliased_inputs",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason=_ALIASED_INPUTS_REASON,
)
def same_tensor_twice_written_through_one(a, b):
    a.add_(1)
    return b * 2


@_case(
    lambda: (lambda x: (x, x[1:]))(_ar(3, 2)),
    "aliased_inputs",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason=_ALIASED_INPUTS_REASON,
)
def input_and_its_slice_written_through_the_slice(a, b):
    b.mul_(3)
    return a + 0


@_case(
    lambda: (lambda x: (x[:2], x[1:]))(_ar(3, 2)),
    "aliased_inputs",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason=_ALIASED_INPUTS_REASON,
)
def overlapping_input_slices_both_written(a, b):
    a[0].zero_()
    b.add_(a.sum())
    return a.clone(), b.clone()


@_case(
    lambda: (lambda x: (x.t(), x[:, 1]))(_ar(3, 2)),
    "aliased_inputs",
    "input_mutation",
    stock_fails=True,
    stock_fails_reason=_ALIASED_INPUTS_REASON,
)
def transposed_input_and_a_column_of_it(a, b):
    a[0].zero_()
    b.add_(a.sum())
    return a * 1, b * 1


if __name__ == "__main__":  # pragma: no cover
    for c in PROGRAMS:
        mark = f"  [stock fails: {c.stock_fails_reason}]" if c.stock_fails else ""
        print(f"{c.name:45s} {','.join(c.tags)}{mark}")
    print(f"{len(PROGRAMS)} cases")
