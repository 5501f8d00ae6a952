"""Writes under fxinplace.functionalize follow eager's memory rules for the written tensor.

Eager rejects a write into memory that several elements occupy (expand, overlapping
windows, as_strided repeats) unless the op writes each element once, a write that
partially overlaps another argument ("some elements ... refer to a single memory
location"), and indexing ops that read the memory they write; it allows an elementwise
op reading exactly its own elements. Meta kernels check none of this, so
fxinplace.functionalize does (csrc/functionalize/eager_write_rules.cpp). Each case runs
eagerly and through make_fx (real and symbolic shapes), in both remove modes, against
eager (functionalize_differential). The dtype and shape rules are in
test_functionalize_write_rules.py.
"""

from __future__ import annotations

import pytest
import torch
from eager_parity import arange as _arange
from eager_parity import check as _check
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace


def _writing_a_clone(write):
    """A function that writes into a clone of its input with `write` and returns the clone."""

    def f(x):
        y = x.clone()
        write(y)
        return y

    return f


@pytest.mark.parametrize(
    "write",
    [
        lambda e: e.add_(1),
        lambda e: e.copy_(torch.ones(3, 4)),
        lambda e: e.uniform_(),
        lambda e: e.fill_(torch.tensor(2.0)),
    ],
    ids=["add_", "copy_", "uniform_", "fill_tensor"],
)
def test_write_into_a_tensor_with_internal_overlap_raises(write) -> None:
    def f(x):
        write(x.expand(3, 4))
        return x

    _check(f, lambda: (torch.ones(4),), error=r"fxinplace.*more than one element of the written-to tensor")


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.float64])
def test_index_put_through_expand_writes_the_element(dtype: torch.dtype) -> None:
    # Eager allows index_put_ (and fill_, masked_fill_, index_fill_) on an expanded
    # tensor: the element takes the written value; it is not summed over the copies.
    def f(x):
        x.expand(3)[torch.tensor([0, 2])] = 5
        return x

    _check(f, lambda: (torch.tensor([1], dtype=dtype),))


@pytest.mark.parametrize(
    "write",
    [
        lambda e: e.fill_(2),
        lambda e: e.zero_(),
        lambda e: e.masked_fill_(torch.tensor([[False, True, False, False]] * 3), 7.0),
        lambda e: e.index_fill_(1, torch.tensor([3]), -1.0),
        lambda e: e.index_put_((torch.tensor([0, 2]),), torch.tensor(5.0), accumulate=True),
    ],
    ids=["fill_", "zero_", "masked_fill_", "index_fill_", "index_put_accumulate"],
)
def test_writes_eager_allows_through_expand(write) -> None:
    def f(x):
        write(x.expand(3, 4))
        return x

    _check(f, lambda: (torch.arange(4.0),))


@pytest.mark.parametrize("row", [0, 2])
def test_write_through_a_row_of_an_expanded_tensor(row: int) -> None:
    # The written row repeats no memory; the other rows are the old copies.
    def f(x):
        x.expand(3, 4)[row].add_(1)
        return x

    _check(f, lambda: (torch.arange(4.0),))


def test_write_through_expand_of_a_narrower_dtype_view_keeps_each_copys_bytes() -> None:
    # Copy 0 writes the low half of x[:, 0], copy 1 its high half: the fold
    # takes each byte's written copy, not one copy per float32 element.
    def f(x):
        x.expand(3, 3, 4).view(torch.float16).diagonal(0, 2, 0).fill_(1)
        return x

    _check(f, lambda: (torch.arange(12.0).reshape(3, 4) / 7,))


def test_negative_zero_written_through_expand_is_kept() -> None:
    def f(x):
        x.expand(3, 3).diagonal().copy_(torch.tensor([-0.0, 2.0, -0.0]))
        return x

    got = fxinplace.functionalize(f)(torch.zeros(3))
    assert torch.signbit(got).tolist() == torch.signbit(f(torch.zeros(3))).tolist() == [True, False, True]


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x[1:].add_(x[:-1]),
        lambda x: x[1:].copy_(x[:-1]),
        lambda x: x.view(2, 3).add_(x.view(2, 3)[0]),
        lambda x: torch.cumsum(x[:3], 0, out=x[1:4]),
    ],
    ids=["add_shifted", "copy_shifted", "add_row", "cumsum_out"],
)
def test_write_partially_overlapping_an_input_raises(write) -> None:
    def f(x):
        write(x)
        return x

    _check(
        f, lambda: (torch.arange(6.0),), error=r"fxinplace.*some elements of the input tensor and the written"
    )


@pytest.mark.parametrize(
    ("write", "error"),
    [
        (lambda x: x[:1].expand(3).copy_(torch.ones(5)), "more than one element of the written-to tensor"),
        (lambda x: x[1:4].copy_(x[:2]), "some elements of the input tensor and the written"),
    ],
    ids=["expanded_self", "partial_overlap"],
)
def test_refused_write_raises_eagers_error_before_computing(write, error: str) -> None:
    # Eager checks overlap before shapes, so the overlap error wins over the
    # broadcast error the functional op would raise. And a function that catches
    # it traces a graph with no node for the refused write (make_fx records a node
    # before running it; one that raised would stay in the graph and raise there).
    def f(x):
        try:
            write(x)
        except RuntimeError as e:
            assert error in str(e), str(e)
        return x + 1

    with pytest.raises(RuntimeError, match=error):
        write(torch.arange(6.0))
    f(torch.arange(6.0))  # eager
    fxinplace.functionalize(f)(torch.arange(6.0))
    gm = torch.fx.experimental.proxy_tensor.make_fx(fxinplace.functionalize(f))(torch.arange(6.0))
    assert torch.ops.aten.copy.default not in [n.target for n in gm.graph.nodes]
    torch.testing.assert_close(gm(torch.arange(6.0)), torch.arange(6.0) + 1)


_ROWS_SWAPPED = [[1, 0, 1, 0], [0, 1, 0, 1]]


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.index_put_((torch.tensor([1, 0]),), x),
        lambda x: x.index_put_((torch.tensor([1, 0]),), x, accumulate=True),
        lambda x: x[0].index_put_((torch.tensor([1, 0, 2, 3]),), x[0]),
        lambda x: x.index_copy_(0, torch.tensor([1, 0]), x),
        lambda x: x.index_add_(0, torch.tensor([1, 0]), x),
        lambda x: x.scatter_(0, torch.tensor(_ROWS_SWAPPED), x),
        lambda x: x.scatter_add_(0, torch.tensor(_ROWS_SWAPPED), x),
        lambda x: x.view(-1).put_(torch.arange(8).flip(0), x.view(-1)),
        lambda x: torch.gather(x, 0, torch.tensor(_ROWS_SWAPPED), out=x),
        lambda x: torch.index_select(x, 0, torch.tensor([1, 0]), out=x),
        lambda x: torch.take(x, torch.tensor(_ROWS_SWAPPED), out=x),
    ],
    ids=[
        "index_put_values_self",
        "index_put_accumulate",
        "index_put_row_into_itself",
        "index_copy_source_self",
        "index_add_source_self",
        "scatter_src_self",
        "scatter_add_src_self",
        "put_source_self",
        "gather_out_self",
        "index_select_out_self",
        "take_out_self",
    ],
)
def test_an_indexing_op_reading_exactly_what_it_writes_raises(write) -> None:
    """Random pipelines seed 158026: `t[i] = t` raises in eager. Indexing kernels check their
    source (and out= their input) with assert_no_overlap, which rejects the same elements too,
    not only a partial overlap as elementwise kernels do."""

    def f(x):
        write(x)
        return x

    _check(
        f,
        lambda: (torch.arange(8.0).view(2, 4),),
        error=r"fxinplace.*some elements of the input tensor and the written",
    )


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.index_fill_(0, torch.tensor([1]), x[0, 0]),
        lambda x: x.masked_fill_(x > 2, x[0, 1]),
        lambda x: x.fill_(x[1, 1]),
    ],
    ids=["index_fill_value_an_element", "masked_fill_value_an_element", "fill_value_an_element"],
)
def test_writes_reading_their_own_memory_that_eager_allows(write) -> None:
    """fill_, masked_fill_ and index_fill_ read a 0-d value as a number before writing: an
    element of self is fine (index_fill_ was refused)."""

    def f(x):
        write(x)
        return x

    _check(f, lambda: (torch.arange(8.0).view(2, 4),))


def test_masked_scatter_from_its_own_memory_is_a_clear_error() -> None:
    """Eager's masked_scatter_ checks no overlap and consumes its source while it writes:
    from self, it reads elements it has already overwritten ([0, 1, 2, 0, 1, 2, 0, 1] where
    the old source gives [..., 3, 4]). Functionalization cannot express the kernel's order."""

    def f(x):
        x.masked_scatter_(x > 2, x)
        return x

    with pytest.raises(RuntimeError, match=r"fxinplace.*masked_scatter_.*refer to a single memory location"):
        fxinplace.functionalize(f)(torch.arange(8.0).view(2, 4))


def test_write_reading_exactly_self_is_fine() -> None:
    def f(x):
        x.mul_(x)
        x[1:].add_(x[1:].clone())
        return x

    _check(f, lambda: (torch.arange(6.0),))


def test_op_specific_dtype_rule_of_an_in_place_op_raises() -> None:
    # abs of a complex tensor is real, which casts back to complex; eager's abs_
    # refuses complex self anyway. Its meta kernel says so, symbolic shapes included.
    def f(z):
        z.abs_()
        return z

    _check(
        f,
        lambda: (torch.tensor([3 + 4j, -1j, 2]),),
        error=r"fxinplace.*abs_ is rejected by eager PyTorch",
        tracing_modes=("real", "fake", "symbolic"),
    )


@pytest.mark.parametrize(
    "write",
    [lambda x: x.unfold(0, 2, 1).add_(1), lambda x: x.as_strided((3, 2), (1, 1)).mul_(2)],
    ids=["unfold", "as_strided"],
)
def test_write_into_overlapping_windows_is_a_clear_error(write) -> None:
    # Eager adds twice where windows overlap (kernel order); no functional value says that.
    f = _writing_a_clone(write)
    with pytest.raises(RuntimeError, match=r"fxinplace.*writes a tensor whose elements may share memory"):
        fxinplace.functionalize(f)(torch.arange(6.0))


def test_write_into_an_empty_expanded_tensor() -> None:
    def f(x):
        x.expand(3, 0).add_(1)
        return x

    _check(f, lambda: (torch.zeros(0),))


@pytest.mark.parametrize(
    "write",
    [lambda x: x[:0].add_(1), lambda x: x.narrow(0, 1, 0).zero_()],
    ids=["slice", "narrow"],
)
def test_write_of_no_elements_of_an_expanded_input(write) -> None:
    # Nothing is written, so there is nothing to write back into the expanded input.
    def f(x):
        write(x)
        return x * 1

    _check(f, lambda: (torch.ones(1).expand(3),))


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.unfold(0, 2, 1).fill_(3.0),
        lambda x: x.unfold(0, 3, 1).zero_(),
        lambda x: x.unfold(0, 2, 1)[1:].fill_(torch.tensor(4.0)),
        lambda x: x.as_strided((3, 2), (1, 1)).fill_(-1.0),
    ],
    ids=["unfold_fill", "unfold_zero", "unfold_slice_fill_tensor", "as_strided_fill"],
)
def test_fill_into_overlapping_windows(write) -> None:
    # Every copy of a location gets the one value, whatever the kernel's order.
    f = _writing_a_clone(write)
    _check(f, lambda: (torch.arange(6.0),))


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.expand(3)[:2].unfold(0, 1, 1)[:, -1].zero_(),
        lambda x: x.expand(2, 3)[:, 1:].unfold(1, 1, 1).fill_(5),
    ],
    ids=["expand_unfold_zero", "expand_unfold_fill"],
)
def test_fill_through_expand_then_windows(write) -> None:
    # The fill folds straight back past expand() (the later views only pick elements), into
    # memory that the written elements share through the stride-0 dim: one copy per location
    # is scattered (seed 3682).
    def f(x):
        y = x.clone()
        write(y)
        return y, x.view(torch.float32)

    _check(f, lambda: (torch.tensor([3], dtype=torch.int32),))


@pytest.mark.parametrize(
    "write",
    [
        lambda y: y.as_strided((3, 2), (0, 1)).masked_fill_(
            torch.tensor([[1, 0], [0, 1], [0, 0]]).bool(), 7.0
        ),
        lambda y: y.as_strided((3, 2), (0, 1)).index_put_(
            (torch.tensor([0, 2]),), torch.tensor(5.0), accumulate=True
        ),
        lambda y: y.as_strided((2, 3), (1, 0))[:, 1:].fill_(-2.0),
    ],
    ids=["masked_fill_", "index_put_accumulate", "fill_"],
)
def test_writes_through_as_strided_repeating_memory(write) -> None:
    # A stride-0 as_strided is an expand() of the memory it repeats: the copies of each
    # location fold as through expand() (the copy written; the changes summed).
    f = _writing_a_clone(write)
    _check(f, lambda: (torch.arange(4.0),))


def test_writing_an_expanded_input_is_a_clear_error() -> None:
    def f(x):
        x.zero_()
        return x * 1

    with pytest.raises(
        RuntimeError, match=r"fxinplace.*zero_ writes a tensor whose underlying tensor has elements"
    ):
        fxinplace.functionalize(f)(torch.ones(1).expand(3))


def test_written_base_keeps_its_layout() -> None:
    # masked_fill (the functional variant) lays a channels_last tensor out
    # contiguously; eager writes into x, which stays channels_last.
    def f(x):
        x.masked_fill_(x > 3, 0.0)
        return x * 1

    _check(f, lambda: (torch.arange(12.0).reshape(1, 3, 2, 2).contiguous(memory_format=torch.channels_last),))


def test_as_strided_after_views_reads_the_storage() -> None:
    def f(x):
        v = x.view(-1).narrow(0, 1, 4).as_strided((2,), (1,), 1)
        v.zero_()
        return x, v * 1

    _check(f, lambda: (torch.arange(6).reshape(2, 3),))


def test_write_through_an_injective_view_of_overlapping_windows() -> None:
    # The written diagonal repeats no memory, but the windows it was taken from
    # do: scattering them back would let unchanged copies overwrite the write, so
    # the diagonal scatters straight into the windows' input.
    def f(x):
        y = x.clone()
        y.unfold(1, 2, 1).diagonal().fill_(0)
        return y

    _check(f, lambda: (torch.arange(12.0).reshape(3, 4),))


def test_write_folded_through_overlapping_windows_and_a_dtype_view_is_a_clear_error() -> None:
    # After view(dtype) the written elements' place in the windows' input is not
    # measured: folding back goes through the windows, which must not overlap.
    def f(x):
        y = x.clone()
        y.unfold(0, 2, 1).view(torch.int32)[:, 1].add_(1)
        return y

    with pytest.raises(
        RuntimeError, match=r"fxinplace.*writes through a view made by aten::unfold whose elements"
    ):
        fxinplace.functionalize(f)(torch.arange(6.0))


def _sum_0d(x):
    torch.sum(x, 0, out=x)
    return x


def _amax_keepdim(x):
    torch.amax(x, 0, keepdim=True, out=x)
    return x


def _mm_square(x):
    torch.mm(x, x, out=x)
    return x


@pytest.mark.parametrize(
    "fn, shape", [(_sum_0d, ()), (_amax_keepdim, (1, 5)), (_mm_square, (3, 3))], ids=["sum", "amax", "mm"]
)
def test_reduction_or_product_into_its_own_input_is_a_clear_error(fn, shape) -> None:
    # Random pipelines' known failure: same shape, so no resize; eager's kernel
    # fills the output (the input) before reading it (sum of a 0-d 3. gives 0.).
    x = _arange(shape) + 1
    for remove in ("mutations", "mutations_and_views"):
        with pytest.raises(RuntimeError, match=r"fxinplace.*the out= argument is also an input"):
            fxinplace.functionalize(fn, remove=remove)(x.clone())


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: torch.cumsum(x, 0, out=x),
        lambda x: torch.where(x > 0, x, x * 2, out=x),
        lambda x: torch.floor_divide(x, 2, out=x),
        lambda x: torch.sort(x, out=(x, torch.empty(x.shape, dtype=torch.long)))[0],
    ],
    ids=["cumsum", "where", "floor_divide", "sort"],
)
def test_scans_and_elementwise_ops_into_their_own_input_match_eager(fn) -> None:
    _check(fn, lambda: (torch.randn(7, generator=torch.Generator().manual_seed(4)),))


@pytest.mark.parametrize(
    ("src", "self_dtype"),
    [
        (torch.tensor([-32768, 5, 0], dtype=torch.int16), torch.float16),
        (torch.tensor([200, 1, 0], dtype=torch.uint8), torch.float32),
        (torch.tensor([-(2**31), 7, -1], dtype=torch.int32), torch.int64),
    ],
    ids=["int16_min_to_half", "uint8_to_float", "int32_min_to_int64"],
)
def test_copy_from_a_negative_view_of_another_dtype_negates_after_converting(src, self_dtype) -> None:
    # Eager's copy_ converts, then negates in self's dtype; the functional copy
    # would negate in the source's dtype, where -(-32768) wraps.
    def f(x, y):
        x.copy_(torch._neg_view(y))
        return x

    _check(f, lambda: (torch.zeros(3, dtype=self_dtype), src.clone()))


@pytest.mark.parametrize(
    "write",
    [
        lambda e: e.fill_(2),
        lambda e: e.zero_(),
        lambda e: e.masked_fill_(torch.tensor([[True], [False], [True]]), 7.0),
        lambda e: e.index_put_((torch.tensor([0, 2]),), torch.tensor(5.0), accumulate=True),
    ],
    ids=["fill_", "zero_", "masked_fill_", "index_put_accumulate"],
)
def test_writes_through_expand_of_a_negative_view_raise(write) -> None:
    # Eager allows these through expand() only where the tensor shows its memory
    # as it is: through _neg_view its fallback materializes, copies back, and raises.
    def f(x):
        write(torch._neg_view(x[:1])[None].expand(3, 1))
        return x

    _check(
        f, lambda: (torch.arange(3.0),), error=r"fxinplace.*more than one element of the written-to tensor"
    )


@pytest.mark.parametrize(
    "make_input, write",
    [
        (
            lambda: torch.arange(5.0)[1:-1],
            lambda x: x.as_strided((2, 2), (2, 1), x.storage_offset())[-1:].add_(1),
        ),
        (
            lambda: torch.arange(9.0).view(1, 3, 1, 3).expand(0, 3, 1, 3),
            lambda x: x.as_strided((2, 3), (3, 1), x.storage_offset() + 1).reshape(-1)[1].fill_(1),
        ),
    ],
    ids=["past_a_slice", "into_an_empty_expand"],
)
def test_write_through_as_strided_past_the_tensors_elements_is_a_clear_error(make_input, write) -> None:
    # Eager writes storage the input's elements do not cover; no functional value holds that
    # memory (seeds 6489, 2308).
    def f(x):
        write(x)
        return x * 1

    f(make_input())  # eager runs it
    with pytest.raises(
        RuntimeError,
        match=r"fxinplace.functionalize: a write through as_strided\(\) reaches memory "
        r"outside the elements of the tensor it views",
    ):
        fxinplace.functionalize(f)(make_input())


def test_write_through_expand_of_a_symbolic_size_that_is_one() -> None:
    # Under a symbolic trace the diagonal's length is Min(1, s0 - 1): 1, but not specialized
    # as a literal 1 is; expand() changed that dim, so the fold treats it as repeated (seed 6308).
    def f(x):
        x.view(1, -1).diagonal(1, 0, 1).expand(2)[-1:].mul_(3)
        return x * 1

    def make_args(n):
        return (torch.arange(2.0 * n)[::2],)

    _check(f, lambda: make_args(4), resized_args=lambda: make_args(6))


@pytest.mark.parametrize(
    "write",
    [
        lambda x, pos: x.__setitem__((slice(None), pos), x.narrow(1, 0, 2)),
        lambda x, pos: x[:, 1:].add_(x[:, :-1]),
    ],
    ids=["index_put_from_a_view_of_self", "add_shifted"],
)
@pytest.mark.parametrize("traced", [False, True])
def test_write_eager_cannot_check_whose_result_is_the_kernels_order_raises(write, traced: bool) -> None:
    # Random pipelines seed 6039: x has gaps, so eager's overlap check cannot compare the layouts
    # (TooHard) and does not run; its kernel then reads elements it already wrote (column 2 gets
    # the old column 0, a prefix sum for add_), which a functional graph cannot express.
    def f(x, pos):
        write(x, pos)
        return x

    def make_args():
        return torch.arange(18.0).view(3, 6)[:, 1:-1], torch.tensor([1, 2])

    fn = fxinplace.functionalize(f)
    with pytest.raises(
        RuntimeError, match=r"fxinplace\.functionalize: aten::(index_put_|add_).*single memory"
    ):
        make_fx(fn)(*make_args()) if traced else fn(*make_args())


def test_writes_between_interleaved_views_eager_cannot_check_still_run() -> None:
    # The same rule leaves views that provably share no element alone: their offsets differ by
    # no multiple of the strides' gcd. (Under a symbolic trace the 2-d input's row stride is a
    # symbol, so that is proven only for the 1-d line: the other is refused there.)
    def f(x):
        x[::2].copy_(x[1::2])
        return x

    def g(x):
        x[:, 1::3].add_(x[:, ::3])
        return x

    _check(f, lambda: (torch.arange(12.0)[::2],))
    _check(g, lambda: (torch.arange(24.0).view(4, 6)[::2],), tracing_modes=("real",))


def test_out_write_into_a_slice_of_view_as_complex_of_a_chunk() -> None:
    """Random pipelines seed 11130: the complex view's storage is the float base's, 49
    floats, not a whole number of complex64 elements; ATen's slice_scatter asserts that it
    is (torch.func.functionalize fails the same way), so the fold scatters into a compact
    copy of the view."""

    def f(x):
        t = x + 2.0
        c = torch.view_as_complex(t.chunk(2, 0)[0].view(-1, 2))[1::2]
        torch.add(c, c.flip(0), out=c)
        return (t,)

    _check(f, lambda: (torch.arange(49.0).view(7, 7),))


@pytest.mark.parametrize(
    "write",
    [
        lambda v: torch._foreach_copy_([v], [v + 1]),
        lambda v: torch._foreach_copy_([v, v[1:]], [v.flip(0), v[:1] * 2]),
        lambda v: v.copy_(v + 1),
    ],
    ids=["foreach_copy_", "foreach_copy_of_two", "copy_"],
)
def test_copy_into_a_complex_view_of_an_odd_count_of_floats(write) -> None:
    """Random pipelines seed 145464: the complex view's storage is the input's 7 floats, no
    whole number of complex64 elements, and `_foreach_copy`'s functional copy clones each
    element with its strides, which views the whole storage as complex and fails ATen's
    internal assert (torch.func.functionalize alike): the list's elements get a clone first,
    as a single copy_'s self already did."""

    def f(x):
        write(torch.view_as_complex(x[0:4].view(2, 2)))
        return (x,)

    _check(f, lambda: (torch.arange(7.0),))


def test_a_reduction_into_an_aliased_input_it_reads_is_a_clear_error() -> None:
    """Random pipelines seed 160311: x2 = x1.transpose(0, -1) passed as a second input; sum(x1,
    out=x2) resizes x2 to one element, which is x1's first: eager's kernel zeroes it before it
    has read it (3 where the sum is 0). Inputs sharing a storage start as alias groups of their
    own, and the overlap checks compared groups, not storages: the write went unchecked."""

    def f(x1, x2):
        torch.sum(x1.permute(1, 0), 0, out=x2)
        return (x2.masked_fill(x2 > 0, 7),)

    def make_args():
        x1 = torch.arange(7, dtype=torch.int32).view(7, 1).t() - 3
        return (x1, x1.transpose(0, -1))

    with pytest.raises(RuntimeError, match=r"fxinplace.*sum.*refer to a single memory location"):
        fxinplace.functionalize(f)(*make_args())
    with pytest.raises(RuntimeError, match=r"fxinplace.*sum.*refer to a single memory location"):
        make_fx(fxinplace.functionalize(f), tracing_mode="symbolic")(*make_args())
