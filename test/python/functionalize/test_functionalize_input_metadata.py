"""Inputs whose metadata the function changes, and inputs that share memory (issue 7).

In-place view ops (t_, squeeze_), resize_ and out= resizing change an input's sizes,
strides or storage; eager leaves the input that way, and other tensors over the same
memory keep theirs. Compared with eager eagerly and through make_fx (real and
symbolic shapes), in both remove modes.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from eager_parity import check as _check
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace

# --------------------------------------------------------------------------- inputs sharing memory


def _check_t_in_place_on_the_first(make_args, a_scale: int) -> None:
    """a.t_() on the first of two inputs a, b sharing memory; then a * a_scale and b read."""

    def f(a, b):
        a.t_()
        return a * a_scale, b * 1

    _check(f, make_args)


def test_t_in_place_on_an_input_passed_twice() -> None:
    # f(a, a): one tensor object, so b is transposed too.
    def args():
        a = torch.arange(6.0).reshape(2, 3)
        return a, a

    _check_t_in_place_on_the_first(args, a_scale=1)


def test_t_in_place_on_an_input_aliased_by_another() -> None:
    def args():
        a = torch.arange(6.0).reshape(3, 2)
        return a, a[1:]

    _check_t_in_place_on_the_first(args, a_scale=2)


@pytest.mark.parametrize(
    "reshape",
    [lambda t: t.unsqueeze_(0), lambda t: t.unsqueeze_(-1), lambda t: t.as_strided_((1, 1), (1, 1))],
    ids=["unsqueeze_0", "unsqueeze_last", "as_strided_"],
)
def test_an_in_place_view_making_an_aliased_input_its_shared_base_is_written_back(reshape) -> None:
    """Random pipelines seed 100051 (in-place views of inputs): x2 = x0.transpose(0, -1) of a
    0-dim x0; after x2.unsqueeze_(0) x2's view of the inputs' shared base is the base itself,
    which was read as "metadata unchanged": the 0-dim input was written a (1,) value."""

    def f(x0, x2):
        reshape(x2)
        x2.sub_(1)
        return x0 + 0, x2 + 0

    def make_args():
        x0 = torch.tensor(5)
        return x0, x0.transpose(0, -1)

    _check(f, make_args)


@pytest.mark.parametrize(
    "pick",
    [lambda s: (s[2:4], s[4:6]), lambda s: (s[1:4], s[2:6]), lambda s: (s[4:], s[:3])],
    ids=["disjoint", "overlapping", "second_first"],
)
def test_inputs_sharing_a_storage_the_first_does_not_span(pick) -> None:
    # Under symbolic shapes the shared base came from the storage size, which no
    # graph input carries ("... is not tracked with proxy").
    def f(a, b):
        b.mul_(2)
        return a * 1, b * 1

    _check(f, lambda: pick(torch.arange(8.0)))


# --------------------------------------------------------------------------- resize_


@pytest.mark.parametrize("shape", [(3,), (2, 2), (4,), (3, 1), (1, 3)])
def test_resize_then_squeeze_in_place(shape: tuple[int, ...]) -> None:
    def f(x):
        x.resize_(1, 3)
        x.squeeze_()
        return x * 1

    _check(f, lambda: (torch.arange(float(torch.Size(shape).numel())).reshape(shape),))


def test_resize_then_squeeze_then_write() -> None:
    def f(x):
        x.resize_(1, 3)
        x.squeeze_()
        x.add_(1)
        return x

    _check(f, lambda: (torch.arange(4.0).reshape(2, 2),))


def test_shrinking_resize_keeps_other_views_data() -> None:
    def f(x):
        y = x.t()
        x.resize_(1, 3)
        x.mul_(10)
        return x * 1, y + 1

    _check(f, lambda: (torch.arange(4.0).reshape(2, 2),))


def test_resize_of_a_view_inside_its_base() -> None:
    def f(x):
        z = x[2:]
        z.resize_(2, 2)
        z.add_(1)
        return x

    _check(f, lambda: (torch.arange(6.0),))


def test_resize_of_a_view_past_its_base_grows_the_storage() -> None:
    def f(x):
        z = x[1:]
        z.resize_(10)
        z[:5].fill_(7)
        return x * 1

    _check(f, lambda: (torch.arange(6.0),))


def test_out_resizing_a_view_of_a_written_input_that_starts_inside_its_storage() -> None:
    # Seed 9679: x = t[1:-1] written, then out= grows x[...] from 2 elements to 3 (storage
    # elements 1..3). Its place was measured on the written value's layout (offset 0 with
    # remove="mutations_and_views" and under a symbolic trace): x read [10, 2], not [2, 4].
    def f(a, x):
        x.mul_(10)
        t = x[...]
        torch.mul(a, 2, out=t)
        return t + 0, t.storage_offset()

    _check(
        f,
        lambda: (torch.tensor([1, 2, 3], dtype=torch.int32), torch.arange(4, dtype=torch.float64)[1:-1]),
        tracing_modes=("real", "fake", "symbolic"),
    )


def test_grow_then_shrink_an_input() -> None:
    def f(x):
        x.resize_(8)
        x[6:].fill_(1)
        x.resize_(2, 3)
        return x

    _check(f, lambda: (torch.arange(6.0),))


def test_t_in_place_then_resize() -> None:
    def f(x):
        x.t_()
        x.resize_(3)
        return x + 1

    _check(f, lambda: (torch.arange(4.0).reshape(2, 2),))


def test_resize_with_a_channels_last_memory_format_is_a_clear_error() -> None:
    def f(x):
        x.resize_(1, 2, 2, 2, memory_format=torch.channels_last)
        return x * 1

    with pytest.raises(RuntimeError, match=r"fxinplace.functionalize: aten::resize_ with memory_format="):
        fxinplace.functionalize(f)(torch.arange(8.0))


def test_resize_of_an_expanded_input() -> None:
    # Metadata only: the input becomes a contiguous view of its memory.
    def f(x):
        x.resize_(2)
        return x * 1

    _check(f, lambda: (torch.arange(4.0).reshape(1, 4).expand(3, 4),))


def test_resize_of_a_view_with_another_dtype_is_a_clear_error() -> None:
    def f(x):
        v = x.view(torch.int16)
        v.resize_(2)
        return x * 1

    with pytest.raises(
        RuntimeError, match=r"fxinplace.*resize_ resizes a view whose dtype \(Short\) differs"
    ):
        fxinplace.functionalize(f)(torch.arange(4.0))


def test_inputs_sharing_memory_with_another_dtype_see_each_others_writes() -> None:
    def f(a, b):
        a.add_(1)
        return b * 1

    def args():
        s = torch.arange(6.0)
        return s, s.view(torch.int32)[2:]

    _check(f, args)


def test_inputs_sharing_memory_with_other_element_sizes_are_a_clear_error() -> None:
    s = torch.arange(4.0)
    with pytest.raises(
        RuntimeError, match=r"fxinplace.*inputs that share memory with different element sizes"
    ):
        fxinplace.functionalize(lambda a, b: a + 1)(s, s.view(torch.int16))


def test_an_empty_input_sliced_past_its_storage_shares_nothing() -> None:
    # x0[1:3] of an empty (7, 0, 1) tensor has storage offset 1 in a storage of 0 elements:
    # it addresses nothing, so grouping it with x0 must not ask for memory past the storage.
    def f(x0, x1, x2):
        x1.neg_()
        x0.mul_(2)
        return x1, x2 * 1

    def args():
        x0 = torch.zeros(7, 0, 1, dtype=torch.complex64)
        return x0, torch.ones((), dtype=torch.complex64), x0[1:3]

    _check(f, args)


@pytest.mark.parametrize(
    "program",
    [
        # random program seed 425: as_strided after a write, on storage the write relaid out
        lambda x: (x.mul_(3), x.as_strided((2,), (1,), x.storage_offset()).add_(100)),
        # random program seed 630: reads the memory between the input's elements after a write
        lambda x: (x.view(-1)[1:2].fill_(7), x.as_strided((2, 2), (2, 1), x.storage_offset()) * 1),
        lambda x: (x.add_(1), x.as_strided((3,), (2,), x.storage_offset() + 1) * 1),
    ],
    ids=["write_then_as_strided_write", "write_then_read_gaps", "add_then_read_gaps"],
)
def test_input_with_gaps_between_its_elements(program) -> None:
    # A functional value of x[:, ::2] is compact: after its first write, as_strided
    # (which addresses the storage) found other elements there. Such an input is a
    # view of a base over its storage span, so its place and its gaps are kept.
    def f(x):
        return program(x)[1] * 1, x * 1

    def make_args(n):
        return (torch.arange(4.0 * n).reshape(2 * n, 2)[:, ::2],)

    _check(f, lambda: make_args(3), resized_args=lambda: make_args(5))


@pytest.mark.parametrize(
    "program",
    [
        # random program seed 5970: a view's storage_offset() after the input was written
        lambda x: (x.add_(1), x.squeeze().as_strided((2,), (1,), x.squeeze().storage_offset()) * 1),
        lambda x: (x.mul_(2), x[1:].storage_offset() * x),
        lambda x: (x.sub_(1), x.t().as_strided((2,), (5,), x.t().storage_offset() + 1) * 1),
    ],
    ids=["squeeze_offset_then_as_strided", "slice_offset", "transpose_offset_then_as_strided"],
)
def test_views_of_a_written_input_with_gaps_answer_eagers_geometry(program) -> None:
    # With *_copy views the written input's value is compact (offset 0, no gaps),
    # but the input and its views keep eager's geometry: storage_offset() and
    # strides are eager's, so as_strided built from them addresses eager's elements.
    def f(x):
        return program(x)[1] * 1, x * 1

    def make_args(n):
        return lambda: (torch.arange(5.0 * n).reshape(n, 5)[:, 1:-1],)

    _check(f, make_args(2), resized_args=make_args(4), removes=("mutations_and_views",))


@pytest.mark.parametrize(
    "program",
    [
        lambda x: (x.sub_(1).sub_(1), x.as_strided((2, 2), (3, 1), x.storage_offset() + 1).add_(100)),
        lambda x: (torch._foreach_sub_([x], 1), x.sub_(1), x.storage_offset() * x),
        lambda x: (x.sub_(1), x.mul(1).t().contiguous().view(-1)),
        # seed 7238: the element after row 0 is a gap (x0[1, 0]), read after two writes
        lambda x: (x.sub_(1).sub_(1), x.as_strided((2, 3), (3, 1), x.storage_offset() + 3) * 1),
    ],
    ids=[
        "write_twice_then_as_strided_write",
        "foreach_then_offset_read",
        "write_then_strides_read",
        "writes_then_gap_read",
    ],
)
def test_input_sliced_inside_its_rows_keeps_its_place_after_writes(program) -> None:
    """Random pipelines seed 734: x0[..., 1:] (a gap at each row's start). After a second
    write its value was compact: its storage_offset() read 0 where eager's is 1, results
    computed from it lost its strides, and as_strided landed one element early."""

    def f(x):
        return program(x)[1] * 1, x * 1

    def make_args(n):
        return (torch.arange(2.0 * n).reshape(2, n)[..., 1:],)

    _check(f, lambda: make_args(7), removes=("mutations",), resized_args=lambda: make_args(9))


def test_the_gaps_of_an_input_kept_in_place_hold_its_storage() -> None:
    """Seed 7238: the buffer an input with gaps is kept in was allocated uninitialised, so a
    read of a gap (eager: the storage's element there) saw whatever memory held. Values may
    match by chance; the graph must take the buffer from the input's storage instead."""

    def f(x):
        x.sub_(1).sub_(1)
        return x.as_strided((2, 3), (3, 1), x.storage_offset() + 3) * 1

    def make_input():
        return torch.arange(14.0).reshape(2, 7)[..., 1:]

    gm = make_fx(fxinplace.functionalize(f))(make_input())
    targets = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert torch.ops.aten.empty.memory_format not in targets, gm.code
    assert torch.equal(gm(make_input()), f(make_input()))


def test_as_strided_past_a_shrunk_out_argument_is_a_clear_error() -> None:
    # Random program seed 703: eager's as_strided reads the memory the shrinking
    # out= resize left behind; the functional value of `t` has none.
    def f(x):
        t = torch.arange(6.0)
        torch.sum(x, 0, out=t)
        return t.as_strided((3,), (2,), 0) * 1

    for remove in ("mutations", "mutations_and_views"):
        with pytest.raises(RuntimeError, match=r"fxinplace.*as_strided\(\) reaches outside the memory"):
            fxinplace.functionalize(f, remove=remove)(torch.ones(3, 2))


def test_as_strided_of_an_input_past_its_elements_reads_its_storage() -> None:
    # Within the input's storage, as in eager (the graph reads the input's storage).
    def f(x):
        return x.as_strided((3,), (2,), x.storage_offset()) * 1

    _check(f, lambda: (torch.arange(8.0)[:3],))


# --------------------------------------------------------------------------- symbolic traces (issue 16)


def _aliased(n: int):
    def make():
        torch.manual_seed(n)
        a = torch.randn(n, 1)
        return a, a[1:]

    return make


def _gapped_twice(n: int):
    def make():
        torch.manual_seed(n)
        t = torch.randn(n, 3)
        a = torch.cat([t, t], 0)[::2]
        return a, a

    return make


def test_an_aliased_input_written_alone_is_not_specialized() -> None:
    # x1 = a[1:] of a (2, 1): its sizes are 1, which a symbolic trace specializes. The graph
    # joined x0 and x1 over their storage up front and baked x1's (1, 1) in; now it reads
    # and writes x1 itself until the sharing shows, and is right at a second size.
    def f(x0, x1):
        x1.cumsum_(1)
        return (x1,)

    _check(f, _aliased(2), resized_args=_aliased(3))


def test_aliased_inputs_joined_where_a_read_sees_the_other_write() -> None:
    def f(x0, x1):
        x1.add_(1)
        return x0 * 2

    _check(f, _aliased(3), resized_args=_aliased(4))


def test_an_input_with_gaps_written_then_viewed_at_a_second_size() -> None:
    def f(x0, x1):
        v0 = x1[::2]
        x1.clamp_(max=-1)
        v0.squeeze_()
        v1 = torch.where(v0 > 0, v0, v0)
        return v1, x1

    _check(f, _gapped_twice(4), resized_args=_gapped_twice(5))


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_one_op_writing_two_aliased_inputs_keeps_both_writes(scale: float) -> None:
    # Neither input was written before the foreach, which writes both: each
    # write-back would have undone the other's write.
    def f(x0, x1):
        torch._foreach_mul_([x0[:1], x1[1:]], scale)
        return x0 * 1

    def passed_twice(n: int):
        return lambda: (lambda a: (a, a[:]))(torch.arange(1.0, n + 1.0))

    _check(f, passed_twice(3), resized_args=passed_twice(5))


def test_one_op_writing_two_inputs_sharing_memory_with_another_dtype() -> None:
    def f(x0, x1):
        torch._foreach_mul_([x0[:1].view(torch.float32), x1[1:]], 0.5)
        return x0 * 1

    def args():
        a = torch.tensor([1.0, 2.0, 4.0]).view(torch.int32)
        return a, a.view(torch.float32)

    _check(f, args)


# --------------------------------------------------------------------------- foreach: eager's loop


@pytest.mark.parametrize(
    "write",
    [
        lambda a, b: torch._foreach_mul_([a[:2], a[1:]], 0.5),
        lambda a, b: torch._foreach_add_([a, b], [b, a]),
        lambda a, b: torch._foreach_mul_([a, a], [2.0, 3.0]),
        lambda a, b: torch._foreach_addcmul_([a[:2], a[2:4]], [b[:2], a[:2]], [b[:2], b[:2]], 0.5),
        lambda a, b: torch._foreach_lerp_([a[:2], a[2:4]], [b[:2], a[:2]], 0.25),
    ],
    ids=[
        "overlapping_slices",
        "crossed_operands",
        "same_tensor_twice",
        "addcmul_reads_written",
        "lerp_reads_written",
    ],
)
def test_foreach_whose_elements_share_memory_runs_as_eagers_loop(write) -> None:
    # Eager writes element k before it reads element k + 1.
    def f(a, b):
        write(a, b)
        return a * 1, b * 1

    _check(f, lambda: (torch.arange(5.0), torch.arange(5.0) + 10))


@pytest.mark.parametrize(
    "views",
    [
        lambda t: [t[0], t[1]],
        lambda t: [t[:, 0], t[:, 1]],  # interleaved: their spans meet, their elements do not
        lambda t: [t[::2, ::2], t[1::2]],  # strided both: spans meet, elements do not
    ],
    ids=["rows", "interleaved_columns", "strided_rows"],
)
def test_foreach_over_disjoint_views_of_one_tensor_stays_one_op(views) -> None:
    def f(t):
        torch._foreach_mul_(views(t), 2.0)
        return t

    gm = torch.fx.experimental.proxy_tensor.make_fx(fxinplace.functionalize(f))(torch.ones(3, 3))
    foreach = [n for n in gm.graph.nodes if n.target == torch.ops.aten._foreach_mul.Scalar]
    assert len(foreach) == 1
    _check(f, lambda: (torch.arange(9.0).reshape(3, 3),))


# --------------------------------------------------------------------------- writes before a shrinking resize


@pytest.mark.parametrize(
    "shrink",
    [
        lambda x1: torch.abs(x1[..., :-1], out=x1),
        # with *_copy views, resize_ of an input with gaps placed the tensor in its compact
        # value, not in the storage (read [4, 6] where eager reads [4, 4])
        lambda x1: x1.resize_(2, 1),
        lambda x1: x1.resize_(0),
    ],
    ids=["out_resize_to_empty", "resize_smaller", "resize_to_empty"],
)
@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_writes_before_a_shrinking_resize_stay_in_the_memory_it_leaves(shrink, remove: str) -> None:
    # x0 sees x1's add_ in eager, though x1 no longer spans those elements.
    def f(x0, x1):
        x1.add_(1)
        shrink(x1)
        return (x1 * 1,)

    def args(n: int):
        def make():
            x0 = torch.arange(2.0 * (n + 2)).reshape(n + 2, 2)[1:-1]
            return x0, x0[..., 1:]

        return make

    _check(f, args(4), resized_args=args(6), removes=(remove,))


def test_a_write_through_a_view_of_an_input_resized_to_a_transposed_layout_with_views_copied() -> None:
    """Random pipelines seed 100737: with views copied, the fold replayed .unfold(0, 2, 2)
    .view(-1, 1) with real views on x2[..., 1:]'s compact copy, where the view fails; eager's
    x2[..., 1:] is laid out (1, 2). Every view of the chain keeps elements, so the write now
    folds straight into the base, on which the chain is measured."""

    def f(x1, x2):
        torch.neg(x1, out=x2)
        x2[..., 1:].unfold(0, 2, 2).view(-1, 1)[:, :1] = 7
        return (x2 + 0,)

    def make_args():
        return torch.arange(14).view(7, 2).t(), torch.zeros(8, dtype=torch.int64)

    _check(f, make_args)


def test_out_resized_and_cast_to_another_dtype_keeps_eagers_strides_with_views_copied() -> None:
    """Random pipelines seed 110897: the same resize, with out of another dtype than the result
    (float64 computed, written into float32). The cast value was a new tensor, no longer matched
    to the rehearsed layout, so out was laid out contiguously where eager has strides (1, 6, 1),
    and as_strided of it read other elements."""

    def f(x0, x2):
        t2 = x0.float().amax(-3)
        torch.sub(x2.permute(1, 0, 2), 1, out=t2)
        return t2 * 1, t2.as_strided((2, 2), (1, 2), t2.storage_offset()) * 1

    def make_args():
        return (
            torch.arange(6, dtype=torch.float64).view(2, 3, 1),
            torch.arange(18, dtype=torch.float64).view(3, 6, 1),
        )

    _check(f, make_args, removes=("mutations", "mutations_and_views"))


def test_out_resizing_an_input_from_a_view_keeps_eagers_strides_with_views_copied() -> None:
    """Random pipelines seed 11181: with views copied, t's value is compact, so mul's result
    is contiguous; eager resizes `out` to the layout mul computes in from the transposed t,
    strides (1, 2, 4). The functional op rehearsed on eager's layouts gives it."""

    def f(x, out):
        t = (x + x).squeeze()[:, -2:]
        torch.mul(t, 2, out=out)
        return ()

    def then_viewed(x, out):
        # Views of the resized input see eager's layout: the first reshapes through a copy,
        # the second raises as in eager.
        f(x, out)
        return (out.transpose(0, 2).reshape(-1).view(2, -1) * 1, out.view(-1))

    def make_args():
        x = torch.arange(16, dtype=torch.float64).view(4, 1, 2, 2).transpose(0, 3)
        return x, torch.zeros(3, dtype=torch.float64)

    _check(f, make_args, removes=("mutations_and_views",))
    # (A symbolic trace's view raises ValueError, torch's own type there: real tracing only.)
    _check(
        then_viewed,
        make_args,
        removes=("mutations_and_views",),
        tracing_modes=("real",),
        error="view size is not compatible",
    )


def test_writes_left_behind_by_a_growing_resize_of_an_input_with_gaps_stay() -> None:
    """Random pipelines seed 132848: x = t[::2] written, then an out= resize to more elements
    than x has, contiguous from x's start, which do not reach x's last row. Eager keeps the
    written last row in t's memory; only a resize to fewer elements kept them."""

    def f(x, y):
        x.sub_(3)
        torch.add(y, y, out=x)
        return (x * 1,)

    def args(n: int):
        def make():
            return torch.arange(2.0 * n * n).view(2 * n, n)[::2], torch.ones(2 * n, 6)

        return make

    _check(f, args(7), resized_args=args(11))


def _resize_input_into_its_gaps(x, y):
    x.resize_(3)
    x.add_(100)
    return (x * 1,)


def _out_resize_an_empty_view_into_a_gap(x, y):
    # random pipelines seed 133184: x[..., 1::2] of a size-1 last dim is empty; out= lays
    # it out from its offset, which is memory between x's elements
    empty = x.unsqueeze(-1)[..., 1::2]
    torch.add(torch.ones(1, 1), 100, out=empty.view(empty.shape[0], -1))
    return (x * 1,)


def _out_grow_a_view_over_a_gap(x, y):
    torch.add(torch.ones(2), 100, out=x[:1])
    return (x + 0,)


def _out_grow_a_view_over_the_other_input(x, y):
    torch.mul(torch.ones(3), 7, out=y[:1])
    return (x + 0, y + 0)


@pytest.mark.parametrize(
    "fn",
    [
        _resize_input_into_its_gaps,
        _out_resize_an_empty_view_into_a_gap,
        _out_grow_a_view_over_a_gap,
        _out_grow_a_view_over_the_other_input,
    ],
    ids=lambda fn: fn.__name__.lstrip("_"),
)
@pytest.mark.parametrize("start", [0, 1], ids=["from_offset_0", "from_offset_1"])
def test_a_resize_lays_an_input_out_over_memory_between_its_elements(fn, start: int) -> None:
    """A resize (resize_, or an out= argument of another shape) lays the tensor out
    contiguously from its offset, over whatever memory follows it: for x = t[start::2],
    memory between x's elements (t's odd or even ones), or y's when y = t[1::2] is another
    input. Eager writes it there, where t (and y) see it; a write-back of x's own elements
    lost it."""

    def args(n: int):
        def make():
            t = torch.arange(2.0 * n + 2)
            return t[start::2], t[1 - start :: 2]

        return make

    _check(fn, args(4), resized_args=args(6))


def _out_resized_over_the_input_before_it(x0, x1):
    torch.add(torch.ones(4), 1, out=x1)
    return (x0 * 1, x1 * 1)


def _written_then_out_resized_over_the_input_before_it(x0, x1):
    x0.mul_(10)
    torch.add(torch.ones(4), 1, out=x1)
    return (x0 * 1, x1 * 1)


@pytest.mark.parametrize(
    "fn", [_out_resized_over_the_input_before_it, _written_then_out_resized_over_the_input_before_it]
)
def test_an_out_argument_resized_over_memory_another_input_shows(fn) -> None:
    """f(t, t[1:3]): torch.add(ones(4), 1, out=x1) resizes x1 to 4 elements from its offset,
    writing t[1:5], which x0 = t reads. Unless x0 was written first, this was refused as an
    input "resized before the sharing mattered"."""

    def args(n: int):
        def make():
            t = torch.arange(float(n))
            return t, t[1:3]

        return make

    _check(fn, args(8), resized_args=args(11))


def test_an_input_resized_by_a_write_of_all_its_elements_then_shrunk_keeps_that_write() -> None:
    """Random pipelines seed 159970: x written, then resized by an out= write of every
    element (eq(t, t.reshape(...), out=x)), then as_strided_ to every other element. The
    storage was written back whole, then the value x held before the resize was copied back
    over the elements the final x leaves, undoing the out= write there."""

    def f(x2):
        x2.index_put_((torch.tensor([0]),), x2.flip(0).narrow(0, 0, 1) * 2)
        t1 = torch.zeros(1, dtype=torch.float16)
        torch.eq(x2, x2, out=t1)
        torch.eq(t1, t1.reshape(1, *t1.shape), out=x2)
        x2.as_strided_((3,), (2,), x2.storage_offset())
        return (x2 + 0,)

    def make_args(n: int):
        def make():
            return (torch.arange(n, dtype=torch.int64).view(n, 1).t(),)

        return make

    _check(f, make_args(7), resized_args=make_args(11))


def test_input_written_whole_then_shrunk_by_an_out_write_keeps_the_first_write_outside() -> None:
    """Random pipelines seed 175326: x = t.t() (every element of t) written whole, then
    resized by an out= write to its first 4 elements, then as_strided_ over those 4. The
    storage span written back is those 4 elements only; the value x held before the resize
    (the whole write) was not copied back, so the rest of t lost the first write."""

    def f(x1, x2):
        x2.copy_(x2.flip(0))
        t2 = x1 + 1
        torch.eq(t2, x1, out=x2)
        x2.as_strided_((2, 2), (1, 2), x2.storage_offset())
        return (t2,)

    def make_args(n: int):
        def make():
            return (torch.arange(4.0).view(2, 2) / 3, torch.arange(2 * n, dtype=torch.int32).view(2, n).t())

        return make

    _check(f, make_args(7), resized_args=make_args(11))


def test_input_written_whole_by_one_resize_then_shrunk_by_another_keeps_the_first() -> None:
    """Random pipelines seed 178149: x = t.t() resized by an out= write of all its elements
    to (1, n * n), then by another out= write to 4 of them. Only the value x held when the
    first resize replaced it was written back (nothing had been written by then), so the
    elements the second resize left kept their values from before the first write."""

    def f(x0, x1):
        t0 = x0.flatten()[None] + x1
        torch.eq(t0, x1, out=x0)
        torch.add(t0.as_strided((2, 2), (1, 2), t0.storage_offset()), x1[:1], out=x0)
        return (t0 * 2,)

    def make_args(n: int):
        def make():
            return (torch.arange(n * n, dtype=torch.int64).view(n, n).t(), torch.tensor([3]))

        return make

    _check(f, make_args(7), resized_args=make_args(11))


def test_an_input_grown_by_one_resize_and_shrunk_by_the_next_leaves_its_grown_layout() -> None:
    """Random pipelines seed 202096: x1 = t[1:4] of 5 elements; torch.mul(x0, 2, out=x1)
    resizes it to (n, 2) at offset 1, growing its storage past the 5 elements, and
    torch.sum(x0, 0, out=x1) shrinks it to (2,). The write-back restores what the first
    resize left in the storage, at a layout the caller's storage was too small for:
    as_strided_ raised "setStorage ... out of bounds". The storage grows as eager's did."""

    def f(x0, x1):
        torch.mul(x0, 2, out=x1)
        torch.sum(x0, 0, out=x1)
        return (x1 * 1,)

    def make_args(n: int):
        def make():
            return (torch.arange(2.0 * n).reshape(2, n).t(), torch.arange(5.0)[1:4])

        return make

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # eager's "an output ... was resized"
        _check(f, make_args(7), resized_args=make_args(11))


def test_a_written_inputs_size_one_strides_stay_eagers_for_the_layout_of_later_results() -> None:
    """Random pipelines seed 200786: x1, a diagonal of a channels_last input, has sizes
    (3, n, 1) and strides (n, 1, 3n). index_add_ writes it; the functional index_add gives
    stride 1 to the size-1 dim. A size-1 dim's stride addresses nothing, but TensorIterator
    orders dims by stride, so `t0 | t0` of a view of x1 was laid out (3, 15, 1, 1) where
    eager's is (1, 15, 5, 45). The written value takes eager's strides there too."""

    def f(x1):
        x1.index_add_(0, torch.tensor([1]), torch.ones_like(x1.narrow(0, 0, 1)))
        t0 = x1.expand(3, *x1.shape)[:, :, 1:-1]
        t0.transpose_(0, 2)
        return ((t0 | t0).clone(),)

    def make_args(n):
        x0 = (torch.arange(3 * n).reshape(1, 1, 3, n) % 2).bool()
        return (x0.contiguous(memory_format=torch.channels_last).diagonal(),)

    _check(
        f,
        lambda: make_args(7),
        tracing_modes=("real", "fake", "symbolic"),
        resized_args=lambda: make_args(11),
    )
