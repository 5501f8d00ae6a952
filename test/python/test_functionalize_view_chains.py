"""Writes and reads through view chains under fxinplace.functionalize, against eager.

Views that change values rather than select elements (conj's and _neg_view's bits),
views with a dtype of their own (view(dtype), real/imag), and the geometry of views
under symbolic shapes (make_fx tracing_mode="symbolic"), in both remove modes
(issue 7).
"""

from __future__ import annotations

import pytest
import torch

import fxinplace  # noqa: F401 - the package under test
from fxinplace.testing.functionalize_differential import eager_parity_problems


def _check(fn, make_args, **kwargs) -> None:
    problems = eager_parity_problems(fn, make_args, **kwargs)
    assert not problems, "\n".join(problems)


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
