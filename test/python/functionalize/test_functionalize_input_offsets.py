"""Inputs that do not start their storage (x[1:]) keep their storage offset after writes.

Eager writes such an input in place: its storage_offset() stays, and as_strided of it
addresses its storage from there. A functional value of it started at offset 0 after its
first write (random pipelines seed 954), so a later as_strided read other elements.
Eagerly and under make_fx's real tracing the value keeps the offset. Under fake or
symbolic tracing it does not (placing it there would bake the input's sizes into the
graph, which a symbolic trace of an input sliced from another must not specialize); there
the input and its views answer metadata queries with eager's geometry instead.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace.testing.harness.functionalize_differential import eager_parity_problems


def _check_at_two_sizes(f, make_args, sizes: tuple[int, int], removes, tracing_modes) -> None:
    """f against eager with ``make_args(sizes[0])``, its traces run again at ``sizes[1]``."""
    first, second = sizes
    problems = eager_parity_problems(
        f,
        lambda: make_args(first),
        removes=removes,
        tracing_modes=tracing_modes,
        resized_args=lambda: make_args(second),
    )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("program", "modes"),
    [
        pytest.param(
            lambda x: (x.zero_(), x.as_strided((2,), (1,), x.storage_offset() + 1).add_(7)),
            ("real", "fake", "symbolic"),
            id="write_then_as_strided_write",
        ),
        pytest.param(
            lambda x: (x.mul_(2), x.as_strided((2,), (2,), x.storage_offset()) * x.storage_offset()),
            ("real", "fake", "symbolic"),
            id="write_then_offset_read",
        ),
        pytest.param(
            lambda x: (
                x.add_(1).add_(1),
                x.view(torch.int32).as_strided((2,), (2,), 2 * x.storage_offset()) + 0,
            ),
            ("real",),  # under tracing: the xfail below
            id="dtype_view_as_strided",
        ),
    ],
)
def test_an_input_starting_inside_its_storage_keeps_its_offset(program, modes) -> None:
    def f(x):
        return program(x)[1] * 1, x * 1

    def make_args(n):
        return (torch.arange(n + 2, dtype=torch.int64)[1:-1],)

    # Under fake and symbolic traces too: there the written value starts at offset 0 while
    # x answers eager's offset, and as_strided counts from the latter (seed 10578).
    problems = eager_parity_problems(f, lambda: make_args(5), removes=("mutations",), tracing_modes=modes)
    assert not problems, "\n".join(problems)


def test_as_strided_of_a_dtype_view_of_a_written_input_starting_inside_its_storage_under_tracing() -> None:
    """Under a fake or symbolic trace the written input's value starts at offset 0 while its
    int32 view answers eager's offset, 2: as_strided of the view counts from that, and was
    applied to the value as if absolute, one int64 element off."""

    def f(x):
        x.add_(1)
        return x.view(torch.int32).as_strided((2,), (2,), 2 * x.storage_offset()) + 0

    problems = eager_parity_problems(
        f,
        lambda: (torch.arange(7, dtype=torch.int64)[1:-1],),
        removes=("mutations",),
        tracing_modes=("real", "fake", "symbolic"),
    )
    assert not problems, "\n".join(problems)


def test_as_strided_past_an_inputs_last_element_is_a_clear_error() -> None:
    # Eager reads the storage element after x's last (seed 954): nothing functional holds it.
    def f(x):
        x.zero_()
        return x.view(torch.int32).as_strided((3,), (2,), x.view(torch.int32).storage_offset()) + 0

    x = torch.arange(4, dtype=torch.int64)[1:-1]
    with pytest.raises(RuntimeError, match="fxinplace.functionalize: as_strided\\(\\) reaches outside"):
        fxinplace.functionalize(f)(x)


def test_as_strided_of_an_empty_view_past_an_inputs_last_element_is_a_clear_error() -> None:
    # Seed 122828: t[:, 1:] is empty, but as_strided of it at its storage offset still reads
    # the storage, past x's last element. The check took an empty view for one reading
    # nothing, and regenerating the view raised torch's "setStorage: ... out of bounds".
    def f(x):
        x.add_(torch._neg_view(x))
        t = x.select(1, 1).unflatten(0, (-1, 1)).view(torch.float16).select(2, -1)
        return (t[:, 1:].as_strided((3,), (2,), t[:, 1:].storage_offset()),)

    def make_input():
        return torch.arange(10.0).view(1, 5, 2)[:, 1:-1]

    f(make_input())  # eager reads the storage there
    with pytest.raises(RuntimeError, match="fxinplace.functionalize: as_strided\\(\\) reaches outside"):
        fxinplace.functionalize(f)(make_input())


@pytest.mark.parametrize(
    "make_input",
    [lambda: torch.arange(8.0)[:6], lambda: torch.arange(8, dtype=torch.float64).view(4, 2)[1:-1]],
    ids=["prefix", "rows_inside"],
)
@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_as_strided_past_an_inputs_elements_then_a_write_is_a_clear_error(make_input, remove) -> None:
    # Seed 10573: the view reads storage after x's last element (eager: the input's storage);
    # once x is written its functional value holds x's elements only. Regenerating the view
    # raised torch's "setStorage: ... out of bounds" (an internal error).
    def f(x):
        y = x.as_strided((7,), (1,), 0)
        x.mul_(2)
        return y + 0

    with pytest.raises(
        RuntimeError, match=r"fxinplace.functionalize: an as_strided\(\) view reads storage past"
    ):
        fxinplace.functionalize(f, remove=remove)(make_input())


def test_as_strided_of_a_view_of_an_aliased_input_after_a_write_under_symbolic_shapes() -> None:
    # Seed 8667: under a fake or symbolic trace the written x1 = x0[1:3] keeps a
    # compact value (offset 0); x1.reshape(2, -1).storage_offset() read 0, not 6,
    # and as_strided there wrote x0's first elements. Views made before the
    # write (v) answer with eager's offset too.
    def f(x0, x1):
        v = x1[1]
        x1.mul_(2)
        t0 = x1.reshape(2, -1)
        t0.as_strided((3,), (2,), t0.storage_offset()).bitwise_not_()
        v.as_strided((2,), (2,), v.storage_offset()).neg_()
        return x0 + 0

    def make_args():
        x0 = torch.arange(42).view(7, 2, 3)
        return x0, x0[1:3]

    problems = eager_parity_problems(f, make_args, tracing_modes=("fake", "symbolic"), removes=("mutations",))
    assert not problems, "\n".join(problems)


def test_a_write_through_as_strided_of_an_input_inside_its_storage_in_a_second_symbolic_trace() -> None:
    """Seed 104001: torch's FakeTensor dispatch cache rebuilds a cached as_strided_scatter result
    at storage offset 0 where the first call kept its input's offset 1 (x[1:-1];
    test_torch_compat.py has the torch side). The second identical trace in a process, under
    remove="mutations_and_views", then addressed the written input one element off. Writes into
    an input not at its storage's start now scatter into a compact copy of its span, offset 0
    in every trace."""

    def f(x0):
        [_, t1] = torch._foreach_add([x0, x0.unbind(0)[-3]], 1)
        x0[1] = t1
        t3 = t1.unsqueeze(0)[0]
        x0.as_strided_((2, 3), (3, 1), x0.storage_offset())
        t4 = x0.to(torch.int32)
        x0[:, ::2].unfold(1, 1, 1).ge_(t1)
        return x0 * 1, t4, t3 * 1

    def make_args():
        return (torch.tensor([9, -3, 2, -1, 4, 0, -2, 3, 1])[1:-1],)

    # The first trace fills the cache the second one hits.
    problems = eager_parity_problems(
        f, make_args, tracing_modes=("symbolic",), removes=("mutations", "mutations_and_views")
    )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "make_args",
    [
        lambda n: (torch.arange(2.0 * n)[::2],),
        lambda n: (torch.arange(2.0 * n)[::2], torch.arange(2.0 * n)[::2]),
    ],
    ids=["one_gapped_input", "a_gapped_input_twice"],
)
def test_a_write_through_as_strided_between_an_inputs_elements_reaches_its_storage(make_args) -> None:
    """Random pipelines seed 126778: as_strided of x = a[::2] with stride 1 writes a[1], an
    element of no input. Only each input's own elements were written back, so the write
    was lost (torch.func.functionalize loses it too); the joined storage is written back
    whole now."""

    def f(x, *others):
        torch._foreach_mul_([x.as_strided((2,), (1,), x.storage_offset())], [3.0])
        return (x + 1, *(o * 1 for o in others))

    def shared(n):
        args = make_args(n)
        return args if len(args) == 1 else (args[0], args[0])

    _check_at_two_sizes(
        f, shared, (4, 6), removes=("mutations", "mutations_and_views"), tracing_modes=("real", "symbolic")
    )


def test_as_strided_of_an_input_written_twice_alike_under_fake_tensors_keeps_its_offset() -> None:
    """Random pipelines seed 126434: x = t[1:-1] written, then twice through views of one
    geometry. The second select_scatter hit torch's fake dispatch cache, which rebuilt its result at
    storage offset 0 where the graph's runs keep offset 1 (test_torch_compat.py has the torch
    side), so as_strided of the written x read one element early."""

    def f(x):
        x.chunk(2, 0)[0].index_put_((torch.tensor([0, -2]),), torch.tensor(2.5), accumulate=True)
        x.unsqueeze(-2)[:, 2].add_(3)
        x.unsqueeze(-2)[:, 2].mul_(2)
        return (x.as_strided((2, 3), (3, 1), x.storage_offset() + 1) * 1,)

    def make_args(n):
        return (torch.arange(2.0 * n + 2)[1:-1],)

    _check_at_two_sizes(f, make_args, (7, 11), removes=("mutations",), tracing_modes=("fake", "symbolic"))


def test_as_strided_past_a_written_inputs_last_element_with_copy_views_under_symbolic_shapes() -> None:
    """Random pipelines seed 125532: with remove="mutations_and_views" a written input's value
    holds its own elements only, and as_strided_ of x = t[1:-1] reads t's last element too. A
    fake trace refuses it; a symbolic one (whose storage size it cannot compare) recorded a
    graph whose as_strided_copy raised torch's setStorage error. Now both refuse it clearly."""

    def f(x0):
        x0[:1][-2:].floor_divide_(2)
        t0 = x0.unflatten(0, (-1, 1)).view(1, *x0.unflatten(0, (-1, 1)).shape)
        x0.as_strided_((2, 2), (1, 2), x0.storage_offset())
        t2 = t0.split(2, 2)[0].to(torch.int64)
        torch._foreach_sub_([t2], [t0])
        return t2, t0

    refused = r"fxinplace.functionalize: (an )?as_strided\(\) (view reads storage past|reaches outside)"
    for mode in ("fake", "symbolic"):
        with pytest.raises(RuntimeError, match=refused):
            make_fx(fxinplace.functionalize(f, remove="mutations_and_views"), tracing_mode=mode)(
                torch.arange(5)[1:-1]
            )


@pytest.mark.parametrize("mode", ["real", "fake", "symbolic"])
def test_as_strided_into_the_gap_after_a_written_inputs_elements_under_every_trace(mode) -> None:
    """Random pipelines seed 186315: x1 = t[::2] (a (1, 2) view of a (2, 2) t) written by
    ge_, then as_strided past its two elements, into the gap eager's storage has there. The
    written value holds x1's elements only: a real trace refused it clearly, a symbolic one
    (whose storage size is symbolic) recorded a graph raising torch's setStorage error."""

    def f(x0, x1):
        x1.ge_(x1)
        x1.as_strided((2,), (1,), x1.storage_offset() + 1).narrow(0, 0, 1)
        return (x0,)

    def make_args():
        return torch.arange(7.0), torch.arange(4, dtype=torch.int32).view(2, 2)[::2]

    f(*make_args())  # eager reads the storage there
    refused = r"fxinplace.functionalize: (an )?as_strided\(\) (view reads storage past|reaches outside)"
    with pytest.raises(RuntimeError, match=refused):
        make_fx(fxinplace.functionalize(f), tracing_mode=mode)(*make_args())


def test_the_storage_written_back_through_an_input_of_another_dtype_keeps_its_bits() -> None:
    """Random pipelines seed 131840 (a bug of the storage-span write-back, the day it landed):
    x1 = x0.view(torch.int32) joined with x0 over a float32 flat base, as_strided_ addressing
    it; the span was written back through x1 with copy_, which converted 4.0 into 4."""

    def f(x0, x1):
        x1.as_strided_((2, 2), (1, 2), x1.storage_offset())
        x1.t()[1:] = -2
        return (x0 * 1,)

    def make_args(n):
        x0 = torch.arange(2.0 * n)
        return x0, x0.view(torch.int32)

    _check_at_two_sizes(
        f,
        make_args,
        (8, 11),
        removes=("mutations", "mutations_and_views"),
        tracing_modes=("real", "symbolic"),
    )


@pytest.mark.parametrize("shift", [1, 0], ids=["pairs_even_in_eager", "pairs_odd_in_eager_raises"])
def test_view_as_complex_of_a_written_input_not_at_its_storage_start_under_tracing(shift) -> None:
    """Random pipelines seed 131839: x = t[1:-1] written, so under a fake or symbolic trace its
    value starts at offset 0 while eager's is 1; as_strided at x.storage_offset() + 1 is even
    in eager and was odd in the value, and view_as_complex raised "storage_offset divisible by
    2" in the trace. Whether eager raises is decided on eager's layout (shift 0 raises)."""

    def f(x):
        x.mul_(2)
        t = x.as_strided((2,), (1,), x.storage_offset() + shift)
        return (torch.view_as_complex(t) * 1,)

    def make_args(n):
        return (torch.arange(n + 2.0)[1:-1],)

    _check_at_two_sizes(
        f, make_args, (6, 9), removes=("mutations",), tracing_modes=("real", "fake", "symbolic")
    )


def test_as_strided_of_a_complex_view_of_an_input_not_at_its_storage_start_under_tracing() -> None:
    """Random pipelines seed 156181: t0 = view_as_complex of x at x.storage_offset() + 1 (even
    in eager: x = t[1:-1] of rows of an odd n starts at n), then t0.as_strided_(...). The write
    is replayed as a view(complex128) of the input's value, which a symbolic trace addresses
    from the input's own start: an offset of 1, and "storage_offset() must be divisible by 2"
    raised in the trace."""

    def f(x2):
        t0 = torch.view_as_complex(x2.as_strided((2,), (1,), x2.storage_offset() + 1))
        torch._foreach_mul_([t0], (1 + 2j))
        t0.as_strided_((2,), (1,), t0.storage_offset())
        return (t0.clone().abs(),)

    def make_args(n):
        g = torch.Generator().manual_seed(156181)
        return (torch.randn((4, n), generator=g, dtype=torch.float64)[1:-1],)

    _check_at_two_sizes(
        f, make_args, (7, 11), removes=("mutations",), tracing_modes=("real", "fake", "symbolic")
    )


def _refused_view_then_read_again(x1, x2):
    t0 = torch.view_as_real(x2).flatten(-2).view(torch.int32).chunk(2, 0)[0]
    x1.relu_()
    try:
        t0.split(2, 0)[0].copy_(x1)  # eager: "some elements ... refer to a single memory location"
    except RuntimeError:
        pass
    return (t0 + 1,)


def _float64_input_and_its_complex64_view():
    x1 = (torch.arange(10, dtype=torch.float64) - 4)[1:-1]
    return x1, x1.view(torch.complex64)


def test_a_view_refused_as_it_moves_into_another_inputs_base_is_refused_again() -> None:
    """Random pipelines seed 192844: x2 = x1.view(torch.complex64) of a sliced float64 x1; once
    x1 is written, t0 (an int32 view through view_as_real(x2)) moves into x1's base, which a
    symbolic trace refuses clearly (it cannot show the int32 view covers whole float64s). The
    program caught that refusal at copy_ (where eager raises too), and the next read of t0
    replayed its old view chain on x1's float64 base: torch's "view_as_real is only supported
    for complex tensors". Now the tensor stays as it was, and the read is refused clearly again;
    a real trace computes eager's values."""
    want = _refused_view_then_read_again(*_float64_input_and_its_complex64_view())
    gm = make_fx(fxinplace.functionalize(_refused_view_then_read_again))(
        *_float64_input_and_its_complex64_view()
    )
    assert torch.equal(gm(*_float64_input_and_its_complex64_view())[0], want[0])
    with pytest.raises(RuntimeError, match=r"^fxinplace\.functionalize: a Int view of a Double tensor"):
        make_fx(fxinplace.functionalize(_refused_view_then_read_again), tracing_mode="symbolic")(
            *_float64_input_and_its_complex64_view()
        )
