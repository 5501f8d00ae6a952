"""Custom mutable ops (torch.library, mutates_args) applied to views under fxinplace.functionalize.

auto_functionalized_v2 rebuilds each mutated view from its base with as_strided or
slice, which keep the base's dtype and cannot conjugate: a view(dtype) view reached
the op as a float tensor (or crashed), and a conjugated view would reach it with
other values (issue 7). Compared with eager, eagerly and through make_fx with
concrete shapes (custom mutable ops under symbolic shapes are a documented error,
see test_functionalize_api.py).
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace.testing.harness.functionalize_differential import eager_parity_problems


@torch.library.custom_op("fxinplace_view_test::add_one_", mutates_args={"x"})
def add_one_(x: torch.Tensor) -> None:
    x.add_(1)


@torch.library.custom_op("fxinplace_view_test::dtype_code_", mutates_args={"x"})
def dtype_code_(x: torch.Tensor) -> torch.Tensor:
    # What the op sees: 1 for int32, 2 for int16, 0 otherwise.
    x.add_(1)
    return torch.tensor(1 if x.dtype == torch.int32 else 2 if x.dtype == torch.int16 else 0)


@dtype_code_.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty((), dtype=torch.long)


@torch.library.custom_op("fxinplace_view_test::add_to_both_", mutates_args={"x", "y"})
def add_to_both_(x: torch.Tensor, y: torch.Tensor) -> None:
    x.add_(1)
    y.add_(1)


@torch.library.custom_op("fxinplace_view_test::add_from_", mutates_args={"x"})
def add_from_(x: torch.Tensor, y: torch.Tensor) -> None:
    x.add_(y)


def _check(fn, make_args) -> None:
    # Graph structure is not checked: the graph holds auto_functionalized_v2.
    problems = eager_parity_problems(fn, make_args, tracing_modes=("real", "fake"), check_graph=False)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x.view(torch.int32)[1],
        lambda x: x.view(torch.int16),
        lambda x: x.view(torch.int16)[1:3],
        lambda x: x[1:].view(torch.int32),
        lambda x: x.view(torch.float16)[::2],
    ],
    ids=["int32_select", "int16", "int16_slice", "slice_int32", "float16_strided"],
)
def test_custom_op_on_a_dtype_view(view) -> None:
    def f(x):
        y = x.clone()
        add_one_(view(y))
        return y

    _check(f, lambda: (torch.arange(4.0),))


def test_custom_op_sees_the_views_dtype() -> None:
    def f(x):
        return dtype_code_(x.view(torch.int32)[1:]), dtype_code_(x.view(torch.int16)[:2]), x

    _check(f, lambda: (torch.zeros(4),))


def test_custom_op_on_the_imaginary_part() -> None:
    def f(z):
        add_one_(z.imag)
        return z

    _check(f, lambda: (torch.tensor([1 + 2j, 3 - 1j]),))


@pytest.mark.parametrize("view", [lambda z: z.conj(), lambda z: torch._neg_view(z)], ids=["conj", "neg"])
def test_custom_op_on_a_conjugated_or_negated_view_is_a_clear_error(view) -> None:
    def f(z):
        add_one_(view(z))
        return z

    with pytest.raises(
        RuntimeError, match=r"fxinplace_view_test::add_one_ mutates a view made by aten::_(conj|neg)"
    ):
        fxinplace.functionalize(f)(torch.tensor([1 + 2j, 3 - 1j]))


def test_custom_op_on_two_dtypes_of_one_tensor_is_a_clear_error() -> None:
    def f(x):
        add_to_both_(x[:2], x.view(torch.int32)[2:])
        return x

    with pytest.raises(RuntimeError, match=r"mutates views of one tensor with different dtypes"):
        fxinplace.functionalize(f)(torch.zeros(4))


@pytest.mark.parametrize("trace", [False, True], ids=["eager", "make_fx"])
def test_custom_op_on_a_dtype_view_of_a_0_dim_tensor_is_a_clear_error(trace: bool) -> None:
    # auto_functionalized_v2 rebuilds the view from its base reinterpreted as a whole, which a
    # 0-dim float32 cannot be as float16. Under make_fx the failing view(dtype) raises through
    # the proxy mode (a python_error, not a c10::Error): the same clear error (seed 1079).
    def f(x):
        add_one_(x.unsqueeze(-1).view(torch.float16))
        return x

    run = fxinplace.functionalize(f)
    if trace:
        run = make_fx(run)
    with pytest.raises(
        RuntimeError,
        match=r"fxinplace.functionalize: .*add_one_ mutates a Half view of a tensor that "
        r"cannot be reinterpreted as Half as a whole \(self.dim\(\) cannot be 0",
    ):
        run(torch.tensor(1.5))


@pytest.mark.parametrize(
    "write, make_input",
    [
        # The diagonal has stride 1 in the expanded input's own layout, 9 in the compact
        # copy; as int32 it exists only in the first (seed 1075).
        (
            lambda x: add_one_(x.diagonal(1, 1, 0)[-3:-1].view(torch.int32)),
            lambda: torch.arange(8).view(1, 8).expand(7, 8),
        ),
        # Once written through an int32 view (its value then a compact copy), view(2, -1)
        # merges dims of strides (0, 0, 1) in eager's layout, (0, 1, 1) in the compact copy
        # (seed 146013).
        (
            lambda x: (
                add_one_(x[-1].unsqueeze(-1).unsqueeze(2).view(torch.int32)),
                add_one_(x.detach().expand(3, 2, 1).unsqueeze(0).view(2, -1).flatten().unbind(0)[1]),
            ),
            lambda: torch.tensor([[1.5]]).expand(2, 1),
        ),
    ],
    ids=["dtype_view_of_a_diagonal", "view_merging_an_expanded_dim"],
)
def test_custom_op_on_a_view_of_an_expanded_input_without_views_is_a_clear_error(write, make_input) -> None:
    # The view exists in the expanded input's own layout, not in the compact copy
    # remove="mutations_and_views" locates it in.
    def f(x):
        write(x)
        return x

    with pytest.raises(
        RuntimeError,
        match=r"fxinplace.functionalize: .*add_one_ mutates a view of a tensor whose layout is not compact",
    ):
        fxinplace.functionalize(f, remove="mutations_and_views")(make_input())
    f(make_input())  # eager runs it


def test_custom_op_on_a_dtype_view_through_as_strided_of_a_transpose_without_views_is_a_clear_error() -> None:
    # Seed 2006: the compact copy remove="mutations_and_views" locates the view in has the
    # transpose's storage positions elsewhere, so as_strided there addressed x.t()[2, 0]
    # where eager's is x.t()[1, 1]: a silent wrong write. remove="mutations" is right.
    def f(x):
        add_one_(x.as_strided((3,), (2,), x.storage_offset())[2].unsqueeze(-1).view(torch.int32))
        return x.clone()

    def make_args():
        return (torch.arange(6.0).view(2, 3).t(),)

    with pytest.raises(RuntimeError, match=r"fxinplace.functionalize: .*add_one_ .*through as_strided\(\)"):
        fxinplace.functionalize(f, remove="mutations_and_views")(*make_args())
    problems = eager_parity_problems(
        f, make_args, removes=("mutations",), tracing_modes=("real", "fake"), check_graph=False
    )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "read, make_input",
    [
        (lambda t: torch._neg_view(t * 2 + 1), lambda: torch.arange(4.0)),
        (lambda t: (t * 2).conj(), lambda: torch.tensor([1 + 2j, 3 - 1j])),
    ],
    ids=["neg_view", "conj"],
)
def test_custom_op_reading_a_negated_or_conjugated_view(read, make_input) -> None:
    # The read argument's bit would send auto_functionalized_v2 to a dispatch key with no
    # kernel for it (seed 674); the op reads the same values with the bit resolved.
    def f(x):
        add_from_(x, read(x))
        return x

    _check(f, lambda: (make_input(),))


@pytest.mark.parametrize(
    "make_input",
    [lambda: torch.arange(14.0).view(7, 2)[..., 1:-1], lambda: torch.arange(14.0)[1:-1]],
    ids=["empty", "inner_slice"],
)
def test_a_custom_op_writing_as_strided_beyond_its_tensors_elements_is_a_clear_error(make_input) -> None:
    """Random pipelines seed 114282: auto_functionalized_v2 rebuilds the written view with
    as_strided on the tensor's functional value, which holds only its elements; a view
    reaching the storage beyond them (of an empty x[..., 1:-1], or of x[1:-1] reaching its
    neighbours) failed in ATen ("out of bounds for storage"). A view within them still runs."""

    def beyond(x):
        torch.ops.fxinplace_view_test.add_one_(x.as_strided((2, 3), (3, 1), x.storage_offset() + 7))
        return x

    def within(x):
        torch.ops.fxinplace_view_test.add_one_(x.as_strided((2, 2), (2, 1), x.storage_offset()))
        return x

    for remove in ("mutations", "mutations_and_views"):
        with pytest.raises(
            RuntimeError, match=r"fxinplace\.functionalize: fxinplace_view_test::add_one_ mutates"
        ):
            fxinplace.functionalize(beyond, remove=remove)(make_input())
    if make_input().numel() >= 4:
        problems = eager_parity_problems(
            within, lambda: (make_input(),), tracing_modes=("real",), check_graph=False
        )
        assert not problems, "\n".join(problems)


def test_custom_op_on_a_dtype_view_of_a_transposed_input_under_a_symbolic_trace() -> None:
    """Random pipelines seed 156493: x1 of sizes (2, 3, n, 1), its last dim of stride n (a
    transpose). The op's base is x1's value viewed as float16 as a whole; the symbolic trace
    recorded stride 1 for the size-1 dim of _foreach_add's result, the run got n, and the
    graph raised "stride(-1) must be 1 to view Float as Half". A size-1 dim addresses one
    element whatever its stride: the base is viewed with contiguous strides there."""

    def f(x1):
        torch._foreach_add_([x1], 2.0)
        add_one_(
            x1.as_strided((2, 2), (2, 1), x1.storage_offset())[:, 1:].narrow(0, 0, 1).view(torch.float16)
        )
        return (x1.select(3, -1).relu(),)

    def make_args(n):
        return (torch.arange(6.0 * n).reshape(2, 3, 1, n).transpose(2, 3),)

    problems = eager_parity_problems(
        f,
        lambda: make_args(7),
        removes=("mutations",),
        tracing_modes=("real", "symbolic"),
        resized_args=lambda: make_args(11),
        check_graph=False,
    )
    assert not problems, "\n".join(problems)


def test_custom_op_on_a_dtype_view_of_a_written_strided_input_under_a_fake_trace() -> None:
    """Random pipelines seed 198507: x1 = t[::2] of sizes (1,), stride 2, written by
    index_put_, then an op mutates a float32 view of its bytes. The op's base is x1's value
    viewed as float32 as a whole; the fake kernel of index_put recorded stride 1 for the
    result, the real kernel keeps the input's 2, and the graph raised "stride(-1) must be 1
    to view Double as Float" at every trace but the real one. A fake trace's size-1 strides
    are treated as a symbolic trace's: set as a contiguous layout has them."""

    def f(x1, pos):
        x1.index_put_((pos,), torch.full_like(x1.narrow(0, 0, 1), 2.5))
        add_one_(x1.view(-1)[-1].view(torch.int64).view(1, -1).view(torch.int32)[-1].view(torch.float32))
        return (x1 * 2,)

    def make_args():
        return (torch.arange(2.0, dtype=torch.float64)[::2], torch.tensor([0]))

    problems = eager_parity_problems(f, make_args, tracing_modes=("real", "fake"), check_graph=False)
    assert not problems, "\n".join(problems)


def _complex_view_of_an_unfolded_transposed_input(x0):
    # x0 (2, n) with strides (1, 2): the pairs (x0[0, 0], x0[1, 0]) are adjacent in memory, and
    # the unfold leaves stride 3 in a size-1 dim, which view_as_complex takes (it steps over nothing).
    return torch.view_as_complex(x0[:, :2].unfold(0, 2, 3).chunk(2, 1)[0])


def _transposed_input():
    return (torch.arange(16.0).reshape(8, 2).t(),)


def test_a_custom_op_on_a_complex_view_that_a_compact_copy_cannot_hold_is_refused_not_misplaced():
    """Random pipelines seed 205307: with remove="mutations_and_views" the op's view is located in
    a compact copy of x0, where the pairs are 8 apart; the replay copied the view to make the
    pairs adjacent and took the copy's place (offset 0) for the view's place, so the op wrote
    (x0[0, 0], x0[0, 1]) where eager writes (x0[0, 0], x0[1, 0]). A view that cannot be located
    there is now a clear error, as with remove="mutations" (whose base cannot be seen as complex
    as a whole)."""

    def f(x0):
        return (dtype_code_(_complex_view_of_an_unfolded_transposed_input(x0)), x0 * 1)

    want = f(*_transposed_input())
    assert want[1][0, 0] == 1  # eager ran the op: add_(1) on the pair (x0[0, 0], x0[1, 0])
    for remove in ("mutations", "mutations_and_views"):
        with pytest.raises(
            RuntimeError, match="fxinplace.functionalize: fxinplace_view_test::dtype_code_ mutates"
        ):
            fxinplace.functionalize(f, remove=remove)(*_transposed_input())


def test_a_write_through_a_complex_view_with_an_odd_stride_in_a_size_one_dim_matches_eager():
    """The same view written by an ATen op: located in x0 as eager lays it out, no copy."""

    def f(x0):
        _complex_view_of_an_unfolded_transposed_input(x0).mul_(1j)
        return (x0 * 1,)

    problems = eager_parity_problems(f, _transposed_input, tracing_modes=("real", "fake"), check_graph=False)
    assert not problems, "\n".join(problems)
