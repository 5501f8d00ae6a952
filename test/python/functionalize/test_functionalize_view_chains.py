"""Writes and reads through view chains under fxinplace.functionalize, against eager.

Views that change values rather than select elements (conj's and _neg_view's bits),
views with a dtype of their own (view(dtype), real/imag), and the geometry of views
under symbolic shapes (make_fx tracing_mode="symbolic"), in both remove modes
(issue 7).
"""

from __future__ import annotations

import pytest
import torch
from eager_parity import check as _check
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace


def _complex() -> tuple[torch.Tensor]:
    return (torch.tensor([1 + 2j, 3 - 1j, -2 + 0.5j], dtype=torch.complex64),)


@pytest.mark.parametrize(
    "write",
    [
        lambda z: z.conj().mul_(2j),
        lambda z: z.conj().add_(1j),
        lambda z: z.conj()[1:].copy_(torch.tensor([5j, 1 + 1j])),
        lambda z: z.conj().imag.add_(1),
        lambda z: z.conj().real.mul_(3),
        lambda z: z.imag.sub_(2),
        lambda z: z.conj().conj().mul_(1j),
        lambda z: torch.view_as_real(z.conj().resolve_conj())[:, 0].add_(100),
    ],
    ids=["conj", "conj_add", "conj_slice", "conj_imag", "conj_real", "imag", "conj_conj", "resolved_copy"],
)
def test_write_through_conjugate_views(write) -> None:
    def f(z):
        write(z)
        return z

    _check(f, _complex)


def test_read_after_write_through_conj_imag() -> None:
    def f(z):
        w = z.conj()
        w.imag.add_(1)
        return w * 1, z.imag * 1

    _check(f, _complex)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_write_through_a_negative_view(dtype: torch.dtype) -> None:
    def f(x):
        torch._neg_view(x)[1:].add_(1)
        return x

    _check(f, lambda: (torch.arange(4, dtype=dtype),))


@pytest.mark.parametrize(
    "write, make_input",
    [
        (
            lambda x: torch.view_as_real(torch._neg_view(x)).zero_(),
            lambda: torch.ones(4, 4, dtype=torch.complex64),
        ),
        (lambda x: torch._neg_view(x).zero_(), lambda: torch.ones(4, 4, dtype=torch.complex64)),
        (lambda x: torch.view_as_complex(torch._neg_view(x)).zero_(), lambda: torch.ones(16, 2)),
        (lambda x: torch._neg_view(x).zero_(), lambda: torch.ones(16, 2)),
        # seed 141279: sliced before view_as_complex, the scatter gives the pairs as (4,)
        (lambda x: torch.view_as_complex(torch._neg_view(x)[0:2]).zero_(), lambda: torch.ones(4)),
        (
            lambda x: torch.view_as_complex(torch._neg_view(x)[2:8].view(3, 2)).fill_(2 - 1j),
            lambda: torch.ones(9),
        ),
    ],
    ids=[
        "complex_written_as_real",
        "complex",
        "real_written_as_complex",
        "real",
        "real_sliced_written_as_complex",
        "real_sliced_and_viewed_written_as_complex",
    ],
)
def test_a_write_through_a_negative_view_negates_in_the_written_dtype(write, make_input) -> None:
    """Random pipelines seed 112172: eager negates what is written through a negative view
    in the dtype of the tensor written. A float's negation flips a zero's sign; a complex
    one (0 - x, vectorized) keeps +0.0. The negation through view_as_real was done as
    complex: x held +0.0 where eager's holds -0.0."""

    def f(x):
        write(x)
        parts = torch.view_as_real(x) if x.is_complex() else x
        return (parts.signbit(),)  # values compare -0.0 equal to +0.0

    _check(f, lambda: (make_input(),))


@pytest.mark.parametrize("flip", [torch.conj, torch._neg_view], ids=["conj", "neg"])
def test_an_inplace_squeeze_of_a_conjugated_or_negated_view_is_a_clear_error(flip) -> None:
    """Random pipelines seed 113284: eager's math-bit fallback runs squeeze_(0) of such a
    view on a resolved copy and lays the tensor out as that copy (strides (2, 1) over the
    base's storage, where squeeze(0) gives (1, 9)): no view of the base expresses it. The
    in-place view ops that skip the fallback (unsqueeze_, transpose_, squeeze_()) still run."""

    def squeezed_in_place(x):
        t = flip(x).unfold(0, 2, 2).diagonal(0, 3, 1)
        t.squeeze_(0)
        return (t.view(-1, 1) + 1,)

    def other_inplace_views(x):
        t = flip(x).unfold(0, 2, 2).diagonal(0, 3, 1)
        t.unsqueeze_(0)
        t.transpose_(0, 1)
        t.squeeze_()
        x.add_(1)
        return (t * 1,)

    def make_args():
        return (torch.arange(12.0).view(2, 2, 3).to(torch.complex64),)

    for remove in ("mutations", "mutations_and_views"):
        with pytest.raises(RuntimeError, match=r"fxinplace\.functionalize: aten::squeeze_\.dim on a"):
            fxinplace.functionalize(squeezed_in_place, remove=remove)(*make_args())
    _check(other_inplace_views, make_args)


@pytest.mark.parametrize(
    ("view_dtype", "index"),
    [(torch.int32, 1), (torch.int16, slice(1, 3)), (torch.uint8, 2)],
    ids=["int32", "int16", "uint8"],
)
def test_write_through_a_dtype_view(view_dtype: torch.dtype, index) -> None:
    def f(x):
        x.view(view_dtype)[index] = 7
        return x

    _check(f, lambda: (torch.arange(4.0),))


def test_transposed_input_t_in_place_under_symbolic_shapes() -> None:
    # t_() on an input: its geometry was measured with concrete sizes only.
    def f(x):
        x.t_()
        return x + 1

    _check(f, lambda: (torch.arange(6.0).reshape(2, 3),))


def test_reshape_of_a_transpose_is_a_copy_under_symbolic_shapes() -> None:
    # With remove="mutations_and_views" views keep their eager layout so that
    # reshape copies where eager copies; that layout was concrete-only.
    def f(x):
        y = x.t().reshape(-1)
        x.add_(1)
        return y

    _check(f, lambda: (torch.arange(6.0).reshape(2, 3),))


def test_contiguous_of_a_slice_under_symbolic_shapes() -> None:
    def f(x):
        y = x[:, 1:].contiguous()
        x.mul_(2)
        return y, x.t().contiguous()

    _check(f, lambda: (torch.arange(12.0).reshape(3, 4),))


def test_expanded_view_reports_its_strides_under_symbolic_shapes() -> None:
    def f(x):
        e = x.expand(3, 4)
        return torch.tensor(e.stride()), e + 0

    _check(f, lambda: (torch.arange(4.0),))


# ------------------------------------------------ regressions of the random-program campaign


def _at_two_sizes(fn, make_args) -> None:
    """Eager parity, the symbolic graph also run at a second shape (traced at n=5, run at n=8)."""
    _check(fn, lambda: make_args(5), resized_args=lambda: make_args(8))


def test_write_through_a_negated_narrowing_of_overlapping_windows() -> None:
    # Random program seed 26. The written view repeats no memory, the unfold it was
    # taken from does: the write scatters straight into unfold's input. Symbolic
    # geometry was taken to be injective unchecked, and the write folded back
    # through the windows, whose unchanged copies overwrote it.
    def f(x):
        t = torch._neg_view(x.unflatten(0, (-1, 1)).unfold(0, 2, 1)).narrow(2, 1, 1)
        t.add_(1)
        return x, t * 1

    _at_two_sizes(f, lambda n: (torch.arange(float(n)),))


def test_write_through_a_slice_of_overlapping_windows_of_a_transpose() -> None:
    def f(x):
        x.t().unfold(1, 3, 1)[:, :, 1:2].mul_(-2)
        return x

    _at_two_sizes(f, lambda n: (torch.arange(2.0 * n).reshape(n, 2),))


def test_write_into_overlapping_windows_under_symbolic_shapes_is_a_clear_error() -> None:
    # The windows overlap for every size: eager's result depends on its kernel's order.
    def f(x):
        x.unfold(0, 2, 1).add_(1)
        return x

    for remove in ("mutations", "mutations_and_views"):
        with pytest.raises(RuntimeError, match=r"fxinplace.*may share memory"):
            make_fx(fxinplace.functionalize(f, remove=remove), tracing_mode="symbolic")(torch.arange(5.0))


def test_as_strided_of_a_dtype_view_is_placed_in_the_base() -> None:
    # Random program seed 48: as_strided of a view of x.view(int16) addresses the
    # storage; with remove="mutations_and_views" it was replayed on the *_copy
    # value of the view (out of bounds).
    def f(x):
        t = x.view(torch.int16)
        v = t[1].as_strided((2, 2), (1, 2), t[1].storage_offset())
        w = v * 2
        t[1:].as_strided((2,), (2,), 2).add_(1)
        return x, w, v * 1

    _at_two_sizes(f, lambda n: (torch.arange(float(n), dtype=torch.float16),))


def test_as_strided_of_a_narrower_dtype_view_is_placed_in_the_base() -> None:
    def f(x):
        x.view(torch.int16)[2:].as_strided((2, 2), (4, 1), 2).add_(1)
        return x

    _at_two_sizes(f, lambda n: (torch.arange(2.0 * n),))


def test_write_through_windows_of_a_strided_view_under_symbolic_shapes() -> None:
    # Random program seed 90: as_strided_scatter into a view at an offset (every
    # other element of a row) fails the meta kernel's bounds check under fake tensors.
    def f(x):
        t = x.clone()
        t[0][1::2].unfold(0, 1, 1).clamp_(-1.0, 1.0)
        return t

    _at_two_sizes(f, lambda n: (torch.arange(3.0 * n).reshape(3, n) - 4,))


def test_write_through_as_strided_of_an_input_at_an_offset_under_symbolic_shapes() -> None:
    def f(x):
        x.unfold(0, 2, 2).mul_(-1)
        return x + 0

    _at_two_sizes(f, lambda n: (torch.arange(2.0 * n + 2)[1:-1],))


def test_write_through_windows_of_a_negated_view() -> None:
    # Random program seed 127: the scatter's input carries the negative bit; ops
    # other than views resolve it into a fresh tensor, losing the storage the
    # scatter addresses.
    def f(x):
        torch._neg_view(x).transpose(2, 1)[:, 2].unfold(1, 2, 3).add_(1)
        return x

    _at_two_sizes(f, lambda n: (torch.arange(2.0 * n * 4).reshape(n, 2, 4),))


def test_write_through_a_wider_dtype_view_of_a_transpose() -> None:
    # Random program seed 390: the written value (masked_fill of a transpose) is laid
    # out column-major; viewing it back as the base's wider dtype needs its last dim
    # contiguous.
    def f(x):
        x.view(torch.float16).t().masked_fill_(x[:, 1] > 0, 1.0)
        return x

    _at_two_sizes(f, lambda n: (torch.arange(2.0 * n).reshape(n, 2) - 3,))


def test_write_through_a_boolean_mask_under_symbolic_shapes() -> None:
    # Random program seed 240: the masked elements' count is data-dependent; laying
    # the written value out like the old one guarded on it.
    def f(x):
        x[x > 0] += -1
        y = x.clone()
        y[y < 0] = 5.0
        return x, y

    _at_two_sizes(f, lambda n: (torch.arange(2.0 * n).reshape(n, 2) - 3,))


@pytest.mark.parametrize(
    ("make_view", "dtype"),
    [
        (lambda x: torch._neg_view(x)[1:].as_strided((2,), (1,), 2), torch.float32),
        (lambda x: torch.view_as_real(torch._neg_view(x)).as_strided((2, 2), (2, 1), 2), torch.complex64),
        (lambda x: x.conj()[1:].as_strided((2,), (2,), 1), torch.complex64),
        (lambda x: torch._neg_view(torch._neg_view(x)[1:]).as_strided((2,), (1,), 1), torch.float32),
    ],
    ids=["neg", "neg_view_as_real", "conj", "neg_neg"],
)
def test_as_strided_of_a_negated_or_conjugated_view(make_view, dtype) -> None:
    # Random program seed 80: as_strided keeps the negative/conjugate bit of the
    # view it is applied to; placed in the base, the view gets the bits again.
    def f(x):
        v = make_view(x)
        before = v * 2
        v.add_(1)
        return x, before, v * 1

    _at_two_sizes(f, lambda n: ((torch.arange(float(n)) * (1 + 1j if dtype.is_complex else 1)).to(dtype),))


def test_as_strided_of_a_dtype_view_splitting_elements_is_a_clear_error() -> None:
    # Floats 1..3 of a complex tensor: half of one element, a whole other. No view
    # of the complex base shows them; with *_copy ops they cannot be addressed.
    def f(x):
        return torch.view_as_real(x).as_strided((3,), (1,), 1) * 2

    with pytest.raises(RuntimeError, match=r"fxinplace.*does not cover whole elements"):
        fxinplace.functionalize(f, remove="mutations_and_views")(torch.ones(3, dtype=torch.complex64))
    _check(f, lambda: (torch.arange(3.0) * (1 + 1j),), removes=("mutations",))


def test_write_into_a_strided_input_under_symbolic_shapes() -> None:
    # Random program seed 15: a non-contiguous input's strides are symbols of their
    # own, so that its elements never share memory cannot be shown for every size;
    # it is decided at the traced sizes.
    def f(x, y):
        x.add_(y)
        x[1:].mul_(2)
        return x * 1

    _at_two_sizes(f, lambda n: (torch.arange(n * (n + 2.0)).reshape(n, n + 2)[:, 1:-1], torch.ones(n)))


def test_write_through_as_strided_of_a_strided_input_keeps_its_layout_under_symbolic_shapes() -> None:
    # Random program seed 629: the scatter into an input with gaps is left to
    # as_strided_scatter (which keeps the input's storage) wherever its meta
    # kernel's bounds check holds at the traced sizes, not only where it holds
    # for every size; a copy of the input's elements would lose the gaps a later
    # as_strided reads.
    def f(x):
        t = x.as_strided((3,), (2,), x.storage_offset() + 1)
        x.as_strided((2,), (2,), 2).mul_(10)
        return t * 1, x * 1

    _at_two_sizes(f, lambda n: (torch.arange(4.0 * n).reshape(2 * n, 2)[:, ::2],))


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x.conj()[0, 0].imag.as_strided((2, 2), (2, 1), 2),
        lambda x: torch._neg_view(x.conj().view(1, -1).transpose(-2, -1)[1][0].imag),
        lambda x: x.conj()[1].as_strided((2,), (1,), 1).real,
    ],
    ids=["imag_of_conj_as_strided", "neg_imag_of_conj", "real_of_conj_as_strided"],
)
def test_views_of_conjugated_views_see_the_conjugate_bit(view) -> None:
    # Random programs seeds 403 and 567: a view of a conjugated view reported no
    # conjugate bit with remove="mutations_and_views" (its eager layout was measured
    # on a meta tensor without the bit), so .imag/.real took the path for a plain
    # tensor and view_as_real refused the conjugated value.
    def f(x):
        y = x * 2
        v = view(y)
        v.add_(1)
        return y, v * 1

    _check(f, lambda: (torch.complex(torch.arange(12.0), -torch.arange(12.0)).reshape(2, 3, 2),))


def test_as_strided_of_a_result_computed_from_a_written_transposed_input() -> None:
    # Random program seed 886: with remove="mutations_and_views" the written base
    # (a *_copy result) was left contiguous, so x + 0.25 was too, where eager keeps
    # x's transposed layout; as_strided of the sum then addressed other elements.
    def f(x):
        x.reshape(-1, x.shape[-1]).neg_()
        t = x + 0.25
        t[1].as_strided((2, 2), (1, 2), t[1].storage_offset() + 1).add_(3.0)
        return t * 1, x * 1

    _at_two_sizes(f, lambda n: (torch.arange(2.0 * (n + 1)).reshape(2, n + 1).t(),))


def test_as_strided_of_an_input_at_an_offset_after_a_write_elsewhere() -> None:
    # Random program seed 590: a view of x2[1:-1] made with as_strided at
    # x.storage_offset() + 1; a later write through another view left the base's
    # value at storage offset 0, where the view's absolute offset pointed elsewhere.
    def f(x):
        t = x.as_strided((3,), (2,), x.storage_offset() + 1)
        x.diagonal()[-1:].fill_(7)
        t.mul_(-1)
        return t * 1, x * 1

    _at_two_sizes(f, lambda n: (torch.arange(4.0 * n).reshape(4, n)[1:-1],))


def test_negated_views_of_an_empty_tensor_under_symbolic_shapes() -> None:
    # Random program seed 124 (remove="mutations_and_views", symbolic shapes): the
    # negative bit carried onto the meta stand-ins views are replayed on sent
    # as_strided through torch's bit fallback, which asserted.
    def f(x):
        t1 = x.t().view(torch.float64).diagonal(-1)
        t2 = torch._neg_view(t1[1::2].chunk(2, 0)[0])[:-1]
        t3 = torch.cat([t2, t2], 0)
        t4 = t2.reshape(2, -1).expand(2, *t2.reshape(2, -1).shape)
        return t2, t3, t4 + 1

    _check(f, lambda: (torch.zeros(3, 0, dtype=torch.int64)[..., ::2],), removes=("mutations_and_views",))


def test_as_strided_copy_of_an_input_with_gaps_addresses_its_storage() -> None:
    # Issue 16: with remove="mutations_and_views" the written input's value is compact, and
    # as_strided_copy addressed that copy ([1, 5, 9]); eager addresses x's storage.
    def f(x):
        x.add_(1)
        return torch.as_strided_copy(x, (3,), (2,))

    _check(f, lambda: (torch.arange(10)[::2],))


def test_a_view_eager_rejects_on_its_layout_is_rejected_with_copied_views() -> None:
    # Issue 16: view_copy of the compact value of x[..., 1] accepted what eager's view of a
    # channels_last x rejects.
    def f(x):
        return x[..., 1].view(5, -1)

    _check(
        f,
        lambda: (torch.randn(5, 4, 3, 2).to(memory_format=torch.channels_last),),
        error="view size is not compatible",
        # (Symbolic shapes: torch's own meta kernel of view raises a ValueError, with either mode.)
        tracing_modes=("real",),
    )


def test_write_through_a_wider_dtype_view_whose_size_one_dims_the_kernel_strides_oddly() -> None:
    # Random program seed 3262: index_add_'s result (6, 1, 1) has strides (1, 1, 1);
    # transposed back to (1, 1, 6), it cannot be viewed as int64 (stride(0) odd).
    def f(x, pos):
        t = x.view(1, 1, 3).view(torch.int32).transpose(-1, -3)
        t.index_add_(1, pos, torch.full_like(t.narrow(1, 0, 1), 7))
        return x * 1

    _check(f, lambda: (torch.arange(3), torch.tensor([0])))


def test_narrower_dtype_view_of_a_written_tensor_whose_value_strides_a_size_one_dim() -> None:
    # Random program seed 5950: eager's t is contiguous; the functional value of
    # its last (size-1) dim has another stride, which view(dtype) refused.
    def f(x):
        t = x.clone()
        t.transpose(-2, 2).neg_()
        return (t[1:3].view(torch.int16),)

    _check(f, lambda: (torch.arange(24, dtype=torch.int32).reshape(3, 4, 2)[:, ::2, :1],))


def test_narrower_dtype_view_of_a_transpose_raises_as_eager() -> None:
    def f(x):
        return x.t().view(torch.int16)

    _check(f, lambda: (torch.zeros(2, 3, dtype=torch.int32),), error="stride")


def test_write_into_a_wider_dtype_view_of_a_storage_no_multiple_of_its_size() -> None:
    # Random program seed 5694: 5 float32 are 20 bytes, no whole number of int64;
    # the functional copy cloned its self over the whole storage as int64 and
    # failed ATen's internal assert.
    def f(x):
        torch.view_as_complex(x[0:2])[()].view(torch.int64)[...] = -2
        return x * 1

    _check(f, lambda: (torch.arange(5.0),), tracing_modes=("real",))


def test_write_into_a_wider_dtype_view_of_a_storage_no_multiple_of_its_size_symbolic() -> None:
    # Under a symbolic trace the storage size is an expression: the value, wider than its
    # base's elements, gets the clone (it was a known bug until seed 145464's fix).
    def f(x):
        torch.view_as_complex(x[0:2])[()].view(torch.int64)[...] = -2
        return x * 1

    _check(f, lambda: (torch.arange(5.0),), tracing_modes=("symbolic",))


def test_result_of_an_op_on_a_view_keeps_eager_layout_for_reshape() -> None:
    # Random program seed 7750: with remove="mutations_and_views", t2 = t1 * 2 of a transposed
    # view was contiguous (computed from t1's compact copy), so t2.reshape(2, -1) was a view and
    # the write through it changed t2; eager's t2 is transposed, its reshape a copy.
    def f(x):
        t1 = x.transpose(0, 1)
        t2 = t1 * 2
        t2.reshape(2, -1).neg_()
        return t2 + 0, t2.contiguous().view(-1)

    _check(f, lambda: (torch.arange(6.0).view(2, 3),), removes=("mutations_and_views",))
    _check(f, lambda: (torch.arange(12.0).view(4, 3)[::2],), removes=("mutations_and_views",))


def test_a_write_through_a_transposed_view_as_real_computed_contiguously() -> None:
    # Random pipelines seed 110186: masked_fill_ with a 0-d mask computes view_as_real(t).t()'s
    # new value contiguously; transposed back, each (real, imag) pair lay at stride 2, and
    # folding it into t through view_as_complex raised "Tensor must have a last dimension with
    # stride 1" (an internal error) where eager writes.
    def f(x1, x2):
        t2 = x2.narrow(0, 1, 2)
        torch.view_as_real(t2).transpose(0, -1).masked_fill_(x1.real > 0, -0.5)
        return x2 * 1, t2 * 1

    def make_args():
        return torch.tensor(1 + 1j), (torch.arange(5.0) * (1 - 2j))[1:-1]

    _check(f, make_args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64])
def test_a_write_through_a_window_of_an_expanded_view_lands_on_the_base(dtype) -> None:
    # Random pipelines seed 111750: the unfold picks one copy of each expanded element, so the
    # write scattered straight into the expand's value, which as_strided_scatter clones densely
    # (its copies of an element in other places): x became [2, 3, 3, 4] where eager's is
    # [0, 1, 2, 3]. A wrong value, before: now the span of the storage is written.
    def f(x):
        x.expand(-1, 3).unfold(1, 1, 3).add_(-1)
        return (x * 1,)

    _check(f, lambda: (torch.arange(1.0, 5.0).to(dtype).view(4, 1),))


def test_a_write_through_one_copy_of_an_expanded_negated_conjugate_keeps_the_other_copies_unchanged() -> None:
    # Random pipelines seed 152445: negating back through _neg_view (complex neg computes 0 - x)
    # turned the untouched copies' -0.0 into +0.0, so they looked written, and the expand fold
    # mixed their sign byte with the written copy's bytes (-1.0 became 1.2e-38).
    def f(x):
        t = torch._neg_view(x.conj().expand(3, *x.shape).transpose(-2, 0))
        torch.conj(t.transpose(-3, -1)).imag.permute(2, 0, 1)[..., 0] = 1.0
        return (x + 0,)

    def make_args():
        return (
            torch.complex(torch.tensor([[0.5, 1.0], [2.0, 3.0]]), torch.tensor([[-0.0, 1.0], [-0.0, 2.0]])),
        )

    _check(f, make_args, removes=("mutations_and_views",), tracing_modes=("real",))


def test_a_write_through_a_flattened_transpose_of_a_result_of_a_written_transposed_input() -> None:
    """Random pipelines seed 148986: with remove='mutations_and_views' the input, squeezed in
    place and written through an out= op, holds a compact value, so t0 computed from it is laid
    out otherwise than eager's, and flatten() of its transpose, a view in eager's layout only,
    raised when the write through it was located on the value. The write is now located on
    eager's layout of the base; and the squeeze_ that left the input where it was no longer
    adds a second write-back after the storage's."""

    def f(x1):
        x1.squeeze_()
        torch.add(x1.squeeze(), x1, out=x1)
        t0 = torch.add(x1, x1, alpha=2)
        t0.transpose(-1, -2).flatten(0, 1).unfold(0, 2, 3)[..., 1] = 2.5
        return (t0 + 1,)

    def make_args():
        return (torch.arange(48.0).view(2, 3, 8).transpose(1, 2),)

    _check(f, make_args, removes=("mutations_and_views",), tracing_modes=("real",))


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
@pytest.mark.parametrize("traced", [False, True])
def test_a_write_through_a_negated_complex_view_leaves_the_other_elements_bits(
    remove: str, traced: bool
) -> None:
    # Complex neg computes 0 - x where vectorized, no involution on zeros: negated back, the
    # -0.0 parts of elements the write left alone came back +0.0 (seed 152445's cause). The
    # written element itself is negated as eager's kernel negates it (a known issue of eager:
    # 0 - x or -x by the layout), so only the others are compared.
    def f(x):
        torch._neg_view(x)[0, 0].fill_(1)
        return (x + 0,)

    def make_args():
        return (torch.complex(torch.zeros(4, 8), torch.full((4, 8), -0.0)),)

    def bits(t):
        return torch.view_as_real(t).view(torch.int32)

    expected = make_args()
    f(*expected)
    run = fxinplace.functionalize(f, remove=remove)
    if traced:
        run = make_fx(run)(*make_args())
    got = make_args()
    run(*got)
    assert torch.equal(bits(got[0]).flatten(0, 1)[1:], bits(expected[0]).flatten(0, 1)[1:])


def test_a_dtype_view_of_an_empty_slice_of_a_value_laid_out_otherwise() -> None:
    """Random pipelines seed 164760: after _foreach_lerp_ through x.permute(1, 0), x's value
    is laid out (1, 7) where eager's x is (1, 1); x[:, :-1] is empty, and view(torch.float16)
    of it, fine in eager (stride(-1) is 1), raised on the value (7). An empty tensor addresses
    nothing: its strides are set as a contiguous one's."""

    def f(x0):
        torch._foreach_lerp_([x0.permute(1, 0)], [x0.permute(1, 0).flip(1)], 0.5)
        t0 = x0[:, :-1].view(torch.float16).transpose(-1, 0)[1:]
        return (t0 * 1, x0 + 0)

    _check(f, lambda: (torch.arange(7.0).view(7, 1),))
