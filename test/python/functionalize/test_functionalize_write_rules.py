"""In-place and out= ops under fxinplace.functionalize follow eager's rules for the written tensor.

Eager writes a result *into* an existing tensor: the tensor keeps its dtype (the
result is cast where casting is allowed, else eager raises), an in-place op cannot
change its shape, an out= argument of another shape is resized (to the strides the
kernel picks), and writes into memory that several elements, or another argument,
occupy are rejected. The functional variant we compute the value with checks none
of this (issue 7). Each case runs eagerly and through make_fx (real and symbolic
shapes), in both remove modes, against eager (functionalize_differential).

This file holds the dtype and shape rules (casts, out= resizes and the layouts they
take); the memory rules (overlap, expand, windows) are in
test_functionalize_overlap_rules.py.
"""

from __future__ import annotations

import pytest
import torch
from eager_parity import arange as _arange
from eager_parity import check as _check
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace

# Resizing a non-empty out= argument warns (deprecated) in eager.


# --------------------------------------------------------------------------- dtype


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64, torch.int32, torch.int64])
def test_logical_not_keeps_self_dtype(dtype: torch.dtype) -> None:
    def f(x):
        x.logical_not_()
        return x

    _check(f, lambda: (torch.tensor([0, 1, 2], dtype=dtype),))


def test_out_argument_keeps_its_dtype() -> None:
    def f(a, b, out):
        torch.add(a, b, out=out)
        return out

    _check(f, lambda: (torch.arange(3), torch.arange(3), torch.zeros(3)))


def test_in_place_result_cast_to_a_narrower_float() -> None:
    def f(x, y):
        x.add_(y)
        return x

    _check(f, lambda: (torch.ones(3, dtype=torch.float16), torch.full((3,), 0.1, dtype=torch.float64)))


@pytest.mark.parametrize(
    ("self_dtype", "other"),
    [(torch.int64, 1.5), (torch.int32, 0.5), (torch.bool, 1), (torch.float32, 1j)],
    ids=["long+float", "int+float", "bool+int", "float+complex"],
)
def test_uncastable_in_place_result_raises_eagers_error(self_dtype: torch.dtype, other: object) -> None:
    def f(x):
        x.add_(other)
        return x

    _check(
        f, lambda: (torch.ones(3, dtype=self_dtype),), error=r"fxinplace.*add_.*can't be cast to the desired"
    )


def test_uncastable_out_result_raises() -> None:
    def f(a, out):
        torch.div(a, 2, out=out)
        return out

    _check(f, lambda: (torch.arange(3), torch.zeros(3, dtype=torch.long)), error=r"fxinplace.*can't be cast")


@pytest.mark.parametrize(
    ("reduce", "out_dtype"),
    [
        (lambda x, out: torch.sum(x, 0, out=out), torch.int32),  # issue 16: was refused ("can't be cast")
        (lambda x, out: torch.sum(x, 0, out=out), torch.float32),  # summed in float32, not cast after
        (lambda x, out: torch.prod(x, 0, out=out), torch.int64),
        (lambda x, out: torch.nansum(x, 0, out=out), torch.float32),
        (lambda x, out: torch.mean(x, 0, out=out), torch.float32),
        (lambda x, out: torch.cumsum(x, 0, out=out), torch.int32),
    ],
)
def test_reduction_out_argument_sets_the_dtype_it_computes_in(reduce, out_dtype: torch.dtype) -> None:
    # ATen's reductions take their dtype from `out` (get_dtype_from_result): eager sums the
    # float64 input as int32, which is not the float64 sum cast to int32.
    def f(x, out):
        reduce(x, out)
        return out

    x = torch.tensor([[1.7, 2.6, -0.4], [0.9, -1.5, 3.3], [1.1, 0.2, 0.7]], dtype=torch.float64)
    _check(f, lambda: (x.clone(), torch.zeros_like(reduce_shape(reduce, x), dtype=out_dtype)))


def reduce_shape(reduce, x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(0, dtype=x.dtype)
    reduce(x, out)
    return out


def test_reduction_out_dtype_the_op_cannot_compute_in_is_a_clear_error() -> None:
    def f(x, out):
        torch.mean(x, 0, out=out)
        return out

    _check(f, lambda: (torch.ones(2, 2), torch.zeros(2, dtype=torch.int64)), error=r"fxinplace.*mean")


def test_out_dtype_the_op_does_not_accept_raises() -> None:
    # mm.out wants exactly its result's dtype, though float -> double casts. The
    # op's meta kernel says so; with symbolic shapes it is not run (known gap).
    def f(a, out):
        torch.mm(a, a, out=out)
        return out

    _check(
        f,
        lambda: (torch.ones(2, 2), torch.zeros(2, 2, dtype=torch.float64)),
        error=r"fxinplace.*mm\.out is rejected by eager PyTorch: .*Expected out tensor to have dtype",
        tracing_modes=("real",),
    )


# --------------------------------------------------------------------------- shape and out= resizes


@pytest.mark.parametrize("other_shape", [(2, 3), (1, 3)])
def test_in_place_result_broadcasting_past_self_raises(other_shape: tuple[int, ...]) -> None:
    def f(x, y):
        x.add_(y)
        return x

    _check(
        f,
        lambda: (torch.ones(3), torch.ones(other_shape)),
        error=r"fxinplace.*add_\.Tensor: output with shape \[\w+\] doesn't match the broadcast shape",
    )


def test_out_resize_takes_the_results_strides() -> None:
    # A 0-dim out= argument resized by a column-major input: eager gives it that layout.
    def f(x, out):
        torch.mul(x, 2, out=out)
        return out

    _check(f, lambda: (torch.arange(6.0).reshape(2, 3).t(), torch.tensor(0.0)))


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4))],
    ids=["mm", "vector-matrix", "batched-matrix", "batched"],
)
def test_matmul_out_that_must_resize(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    def f(a, b, out):
        torch.matmul(a, b, out=out)
        return out

    _check(f, lambda: (_arange(a_shape), _arange(b_shape), torch.zeros(2)))


def test_view_taken_before_an_out_resize_keeps_its_place() -> None:
    def f(x, out):
        before = out.view(2, 1)
        first = out[1:]
        torch.mul(x, 2, out=out)
        first.add_(1)
        return before + 1, out

    _check(f, lambda: (torch.arange(4.0), torch.zeros(2)))


def test_out_resize_of_an_intermediate_seen_through_an_older_view() -> None:
    def f(x):
        out = torch.zeros(2)
        view = out[1:]
        torch.mul(x, 2, out=out)
        return view + 1, out

    _check(f, lambda: (torch.arange(4.0),))


def test_out_argument_that_is_a_view_and_must_resize() -> None:
    def f(x, y):
        torch.mul(torch.ones(2, 3), 2, out=x.t().diagonal())
        return x, y * 1

    _check(f, lambda: (torch.arange(12.0).reshape(4, 3), torch.ones(2)))


def test_out_argument_of_another_dtype_resized_under_symbolic_shapes() -> None:
    # Random program seed 186: eager's dtype rules for out= are rehearsed on meta
    # stand-ins, which cannot be resized with symbolic sizes: the stand-in for the
    # out= argument gets its new sizes up front.
    def f(x, y):
        torch.add(y, y, out=x)
        return x * 1

    def make_args(n):
        return torch.arange(n * 2.0 * (n + 1)).reshape(n, 2, n + 1).transpose(0, 2), torch.tensor(3)

    _check(f, lambda: make_args(3), resized_args=lambda: make_args(5))


def test_out_argument_resized_while_also_an_input_is_a_clear_error() -> None:
    # Random program seed 230: eager resizes `x` (also the input) to the result's
    # shape before its kernel reads it; what it then reads depends on the kernel.
    def f(x):
        torch.sum(x, 0, out=x)
        return x

    for remove in ("mutations", "mutations_and_views"):
        with pytest.raises(RuntimeError, match=r"fxinplace.*sum.*refer to a single memory location"):
            fxinplace.functionalize(f, remove=remove)(torch.tensor([[1, 2, 3]]))


def test_out_argument_resized_over_a_strided_input_is_a_clear_error() -> None:
    # Random program seed 869: after its resize, `out` covers x[0:8], among the
    # elements of x[1::2] the kernel reads; eager does not check strided inputs,
    # and its result depends on the order its kernel writes in.
    def f(x):
        torch.add(x[1::2], 1, out=x[::2][:2])
        return x

    for remove in ("mutations", "mutations_and_views"):
        with pytest.raises(RuntimeError, match=r"fxinplace.*add.out.*refer to a single memory location"):
            fxinplace.functionalize(f, remove=remove)(torch.arange(16.0))


def test_out_argument_overlapping_an_input_only_before_its_resize() -> None:
    # Eager resizes `out` (to 0-dim at its offset) before writing: no overlap then.
    def f(x):
        torch.sum(x[2], 0, out=x.t())
        return x

    _check(f, lambda: (torch.arange(12).reshape(3, 4),))


_ANGLE_INTO_COMPLEX_SYMBOLIC = pytest.mark.xfail(
    strict=True,
    reason="angle of a transposed complex tensor into a complex out= argument, traced symbolically: "
    "the input's layout is not decided without guards, so the resized argument stays contiguous",
)


@pytest.mark.parametrize(
    "op, out_dtype",
    [
        (torch.abs, torch.float32),
        (torch.abs, torch.float64),
        (torch.abs, torch.complex64),
        (torch.angle, torch.float32),
        (torch.angle, torch.float64),
        pytest.param(torch.angle, torch.complex64, marks=_ANGLE_INTO_COMPLEX_SYMBOLIC),
    ],
    ids=lambda v: getattr(v, "__name__", str(v).removeprefix("torch.")),
)
def test_complex_input_out_resize_takes_eagers_layout(op, out_dtype: torch.dtype) -> None:
    # Random pipelines seed 549: abs of a transposed complex tensor into a real out=
    # argument leaves it contiguous in eager (ATen computes the complex result, then
    # resizes and copies, casting), where the functional abs keeps the input's layout;
    # into a complex one the complex kernel lays it out like the input.
    def f(x):
        out = torch.zeros(1, dtype=out_dtype)
        op(x, out=out)
        return out

    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 4, dtype=torch.complex64, generator=g)
    _check(f, lambda: (x.clone().t(),))


@pytest.mark.parametrize("out_of", ["transposed_input", "contiguous_input"])
def test_out_argument_that_is_a_view_resized_takes_the_layout_the_op_computes_in(out_of: str) -> None:
    # TensorIterator resizes the out= view, then restrides it to its iteration
    # order: here x's transposed layout, so v lands on other elements of t.
    def f(x):
        t = (x * 2).clamp(-1.0, 1.0)
        v = t.view(t.shape[0], -1).select(1, 1)
        torch.sub(x, torch.tensor([1, 2], dtype=torch.int32), out=v)
        return t, v

    def args():
        x = torch.arange(6.0).reshape(2, 3) / 8
        return (x.t(),) if out_of == "transposed_input" else (x.t().contiguous(),)

    _check(f, args)


def _sub_into_an_empty_out(x, y):
    torch.sub(x, x.view(-1, 1), out=y)
    return y * 1


def _neg_into_an_out_then_guard_its_size(x, y):
    torch.neg(x.unsqueeze(1) - x, out=y)
    return y * x.view(2)


@pytest.mark.parametrize(
    ("f", "make_args"),
    [
        # A (0, 1, n) out= argument resized to (1, 1) needs more storage (seed 4349).
        (_sub_into_an_empty_out, lambda: (torch.tensor(2.0), torch.zeros(0, 1, 5))),
        # Seed 120690: the out= resize is to (s0, s0), symbolic when it runs; x.view(2) then
        # guards s0 == 2, so at the write-back the sizes are SymInts holding constants, which
        # take the same refused C++ path ("tried to directly modify sizes for customized tensor").
        (_neg_into_an_out_then_guard_its_size, lambda: (torch.arange(2.0), torch.zeros(2))),
    ],
    ids=["empty_out", "size_guarded_later"],
)
def test_out_argument_with_symbolic_sizes_grown_past_its_memory_is_a_clear_error(f, make_args) -> None:
    # resize_ of a placeholder with symbolic sizes to concrete ones cannot be recorded (fake
    # tensors refuse it). Concrete traces write it back.
    _check(f, make_args, tracing_modes=("real", "fake"))
    with pytest.raises(
        RuntimeError,
        match=r"fxinplace.functionalize: the function grows the storage of an input "
        r"with symbolic sizes to concrete ones",
    ):
        make_fx(fxinplace.functionalize(f), tracing_mode="symbolic")(*make_args())


def test_out_argument_resized_through_a_conjugate_view_stays_conjugated() -> None:
    # Seed 123599: resize_ keeps a tensor's conjugate bit. An out= resize of t = y.conj()
    # (sizes (1, 0) to ()) left our t unconjugated, so t.imag took view_as_real of the
    # conjugated value, which raises.
    def f(x, y):
        t = y.conj()
        torch.sum(x, 0, out=t)
        t.imag.add_(-1.0)
        return t * 1, t.is_conj()

    def make_args():
        return torch.ones(2, dtype=torch.complex64), torch.zeros(1, 0, dtype=torch.complex64)

    _check(f, make_args)


def test_out_argument_resized_back_to_its_bases_geometry_reports_the_new_sizes() -> None:
    # Seed 123934: t = x[:1] made (2, 3) by as_strided_, then resized by an out= op to (7,),
    # all of x: the tensor became its base again, but answered t.shape with its old value's
    # (2, 3) until its next read, so t.expand(3, *t.shape) raised.
    def f(x, pos):
        d = x - x
        t = x.narrow(0, 0, 1)
        t.as_strided_((2, 3), (3, 1), t.storage_offset())
        torch.neg(d, out=t)
        u = t.expand(3, *t.shape) - d
        t.index_copy_(0, pos, torch.sigmoid(d).narrow(0, 0, 1))
        return x, t * 2, u

    def make_args():
        return torch.arange(7.0), torch.tensor([3])

    _check(f, make_args)


def test_out_resize_follows_eagers_layout_past_a_broadcast_operand_without_views() -> None:
    """Random pipelines seed 157184: minimum(x2.expand(3, n).unfold(0, 2, 3), x1) follows the
    transposed x1 in eager (the expanded operand's stride-0 dims do not vote on the layout);
    with remove="mutations_and_views" the unfold_copy's value is compact, its dims voted, and
    the out= argument resized to that result ended with strides (1, 6, 3), not eager's
    (1, 3, 21): another order of the input's storage."""

    def f(x0, x1, x2):
        t0 = torch.minimum(x2.expand(3, *x2.shape).unfold(0, 2, 3), x1)
        torch.abs(t0, out=x0)
        return ((x0 + 0.5) * 2,)

    def make_args():
        return (
            torch.arange(7.0).view(7, 1).t(),
            torch.arange(42.0).view(2, 7, 3).transpose(0, 2) - 20,
            torch.arange(7.0) - 3,
        )

    _check(f, make_args, removes=("mutations", "mutations_and_views"), tracing_modes=("real",))


@pytest.mark.parametrize(
    "make_out",
    [
        lambda x2: torch._neg_view(x2).select(2, 1)[:, :, -2],
        lambda x2: torch._neg_view(x2[0, 0]),
    ],
    ids=["negated_view", "negated_base_view"],
)
def test_out_resize_of_a_negated_argument_is_contiguous(make_out) -> None:
    """Random pipelines seed 158056: ATen's fallback for a negated (or conjugated) out=
    argument computes elsewhere, then resizes the argument contiguously and copies; the
    resize followed the kernel's layout (the transposed x1's) instead, and the write landed
    in other elements of x2's storage."""

    def f(x1, x2):
        t0 = make_out(x2)
        torch.mul(x1, 2, out=t0)
        return (t0 * 2,)

    def make_args():
        return (torch.arange(18.0).view(2, 3, 3).transpose(0, 2), torch.arange(81.0).view(3, 3, 3, 3))

    _check(f, make_args, removes=("mutations", "mutations_and_views"), tracing_modes=("real", "symbolic"))
