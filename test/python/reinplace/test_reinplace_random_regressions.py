"""Regression tests for forms the random programs found (issue 15 onwards, minimised), each
through every pipeline a user has (``reinplace_pipelines.PIPELINES``) and, where the form came
from the compile paths, every policy; the result must equal eager (outputs and input
post-state). The older regressions (issue 7 onwards) are in test_reinplace_regressions.py.
"""

from __future__ import annotations

import pytest
import torch
from reinplace_pipelines import PIPELINES, assert_same_as_eager, clone_args
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace

# ---- issue 15: forms the random compile-path programs found (minimised), every policy


def _fill_a_slice_then_conj_physical(x1):
    # The out= destination was a scatter removed as a no-op, still named by the op.
    t0 = x1.clone()
    t0[:-1].fill_(-2j)
    return t0.conj_physical()


def _write_through_as_strided_of_a_clone(x0):
    t0 = x0.clone()
    t0.as_strided((2, 2), (1, 2), t0.storage_offset()).squeeze().sign_()
    return t0.clone()


def _foreach_on_a_conjugated_value(x0):
    # A clone of a conj() view keeps its bit in the trace: `_foreach_add_` refuses such a list.
    t0 = x0.conj()[:, :, :-1]
    t0.add_(t0)
    torch._foreach_add_([x0], [x0.flip(2)])
    return t0


def _out_into_a_negative_view(x0):
    # sub(_neg_view(t), t0, out=...) then view(dtype): a result written into a _neg_view
    # would carry the negative bit, which view(dtype) refuses.
    t1 = x0 * 2
    t2 = torch.zeros_like(t1)
    torch.sub(torch._neg_view(t1), t1, out=t2)
    return t2.view(torch.int32) * 1, torch._neg_view(t1) + 1


def _empty_input_written_then_viewed_as_another_dtype(x0, x1):
    # Random pipelines seed 189836: x1 = x0[1:] is empty with strides (1, 1); eager's add of
    # it returns strides (1, 0) (its meta kernel: (1, 1)), so mul into x1 in place had another
    # last stride than the functional mul, and view(torch.float16) of it raised.
    x1.add_(2.0)
    torch.mul(x1, x0, out=x1)
    x1.view(torch.float16).sum()
    return (x1,)


def _empty_input_args():
    x0 = torch.tensor([[0.5], [1.25]]).t()
    return (x0, x0[1:])


_POLICY_CASES = {
    "fill_a_slice_then_conj_physical": (
        _fill_a_slice_then_conj_physical,
        (torch.randn(4, 3, dtype=torch.complex64),),
    ),
    "write_through_as_strided_of_a_clone": (_write_through_as_strided_of_a_clone, (torch.randn(2, 2),)),
    "foreach_on_a_conjugated_value": (
        _foreach_on_a_conjugated_value,
        (torch.randn(2, 3, 4, dtype=torch.complex64),),
    ),
    "out_into_a_negative_view": (_out_into_a_negative_view, (torch.randn(4),)),
    "empty_input_written_then_viewed_as_another_dtype": (
        _empty_input_written_then_viewed_as_another_dtype,
        _empty_input_args(),
    ),
}


@pytest.mark.parametrize("policy", ["stock", "compile", "inductor"])
@pytest.mark.parametrize("name", list(_POLICY_CASES))
@pytest.mark.parametrize("pipeline", ["torch_func", "fxinplace"])
def test_random_compile_forms_under_every_policy(name: str, policy: str, pipeline: str) -> None:
    fn, args = _POLICY_CASES[name]
    want_args = clone_args(args)
    want = fn(*want_args)
    gm = PIPELINES[pipeline](fn, clone_args(args))
    fxinplace.reinplace(gm, *clone_args(args), check=True, policy=policy)
    got_args = clone_args(args)
    got = gm(*got_args)
    for w, g in zip(torch.utils._pytree.tree_leaves(want), torch.utils._pytree.tree_leaves(got), strict=True):
        assert torch.equal(w, g) and w.is_conj() == g.is_conj() and w.is_neg() == g.is_neg(), gm.code
    for w, g in zip(want_args, got_args, strict=True):
        assert torch.equal(w, g), gm.code


def _storage_offset_read_downstream(x):
    # x starts at storage offset 1. The functional copy and the scatter keep their self's
    # geometry, offset included; floor_divide's result starts at 0, and at 1 if computed
    # in c's memory, which the as_strided_scatter (addressing s's storage from its start)
    # would see one element off.
    c = torch.ops.aten.copy.default(x, x * 3)
    d = c.floor_divide(2)
    s = torch.select_scatter(d, d[0] * 10, 0, 0)
    return torch.as_strided_scatter(s, torch.full((3,), -1, dtype=x.dtype), (3,), (3,), 0)


def _storage_offset_read_through_a_copy(x):
    # Seed 2193's shape: the functional copy keeps d's offset as the scatter does.
    c = torch.ops.aten.copy.default(x, x * 3)
    d = c + 1
    e = torch.ops.aten.copy.default(d, d)
    return torch.as_strided_scatter(e, torch.full((3,), -1, dtype=x.dtype), (3,), (3,), 0)


def _storage_offset_read_through_a_copy_of_a_computed_value(x):
    # Seed 2193 traced symbolically: c starts at x's offset, 3; d = c + 1 at 0, and at 3
    # in place into c; e, a copy of d, keeps d's offset; the as_strided reads from e's start.
    c = torch.ops.aten.copy.default(x, x * 3)
    d = c + 1
    e = torch.ops.aten.copy.default(d, d)
    return torch.as_strided(e, (2,), (1,), 0) * 1


def _storage_offset_read_of_a_foreach_element(x):
    # Seed 11928's shape: with the write-back into x, neg and then the `_foreach_add`
    # element may land in x's memory, at x's offset, 3; the scatter keeps the element's
    # offset and the as_strided reads from its start: 0 as traced.
    t = x.neg()
    (y,) = torch._foreach_add([t], 1)
    s = torch.select_scatter(y, y[1] * 10, 0, 0)
    r = torch.as_strided(s, (2,), (1,), 0) * 1
    x.copy_(s)
    return r


@pytest.mark.parametrize("tracing", ["real", "symbolic"])
@pytest.mark.parametrize("policy", ["stock", "compile", "inductor"])
@pytest.mark.parametrize(
    "fn",
    [
        _storage_offset_read_downstream,
        _storage_offset_read_through_a_copy,
        _storage_offset_read_through_a_copy_of_a_computed_value,
        _storage_offset_read_of_a_foreach_element,
    ],
    ids=lambda f: f.__name__,
)
def test_a_storage_offset_read_through_a_scatter_is_kept(fn, policy: str, tracing: str) -> None:
    """Random pipelines seeds 899 and 2193: a real trace records every result at storage
    offset 0, which the functional copy and the *_scatter ops do not keep; and moving a
    result to another offset was checked only where views or as_strided read it directly.
    A symbolic trace's values of those ops were read at offset 0 too (seed 2193). Seed
    11928: a `_foreach_*` element's offset was not checked at all."""

    def args():
        return (torch.arange(16)[3:-1],)

    want_args = args()
    want = fn(*want_args)
    gm = make_fx(fn, tracing_mode=tracing)(*args())
    traced_args = args()
    assert torch.equal(gm(*traced_args), want) and torch.equal(traced_args[0], want_args[0])
    fxinplace.reinplace(gm, *args(), check=True, policy=policy)
    got_args = args()
    assert torch.equal(gm(*got_args), want), gm.code
    assert torch.equal(got_args[0], want_args[0]), gm.code


@pytest.mark.parametrize("part", ["real", "imag"])
@pytest.mark.parametrize("shape", [(), (1,), (3,)], ids=["0-d", "one", "1-d"])
def test_an_operand_viewing_self_as_another_dtype_is_not_self(shape, part) -> None:
    """Random pipelines seed 3869: `t - t.real` on a complex t. The real parts, a float
    view of t's memory, have t's geometry when t is 0-d (offset 0, no dims), which the pass
    took for "exactly self's elements" (fine for an elementwise op); written in place, the
    kernel reads real parts it has already overwritten. Seed 172893: the imaginary parts of
    a one-element t lie at offset 1 counted in floats, which the pass compared with t's
    offset 0 counted in complex elements and took for disjoint memory; ATen rejects the
    in-place op ("some elements ... refer to a single memory location")."""

    def f(x):
        t = x * 2
        return torch.sub(t, getattr(t, part))

    x = torch.tensor([1.0 + 2.0j, -3.0 + 0.5j, 2.0 - 1.0j])[: (shape[0] if shape else 1)].reshape(shape)
    want = f(x.clone())
    gm = make_fx(f)(x.clone())
    fxinplace.reinplace(gm, x.clone(), check=True)
    assert torch.equal(gm(x.clone()), want), gm.code


def _foreach_over_two_views_put_back_apart(x):
    # Functionalized: the diagonal goes back by diagonal_scatter into t's unfold, whose
    # unfold_backward rebuilds t, and the as_strided view goes back into *that* rebuilt
    # tensor. Written in place at the foreach, the as_strided zeros would already be in t
    # when unfold_backward reads it.
    t = x & x
    torch._foreach_zero_([t.unfold(1, 2, 2).diagonal(0, 2, 0), t.as_strided((2,), (1,), 1)])
    return t + 0


def _foreach_over_two_views_put_back_in_a_chain(x):
    t = x * 2
    torch._foreach_add_([t[0], t[1]], [1, 2])
    return t + 0


@pytest.mark.parametrize(
    "fn",
    [_foreach_over_two_views_put_back_apart, _foreach_over_two_views_put_back_in_a_chain],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_a_foreach_over_two_views_of_one_buffer_writes_each_when_its_scatter_would(fn, pipeline) -> None:
    """Random pipelines seed 2961: a `_foreach_*` op's slots were each checked against the
    buffer's readers as the node left it; one slot's removed scatter then made a later
    reader of the buffer see another slot's write early."""
    assert_same_as_eager(fn, (torch.arange(18).reshape(3, 2, 3),), pipeline)
    gm = PIPELINES[pipeline](fn, (torch.arange(18).reshape(3, 2, 3),))
    report = fxinplace.reinplace_report(gm, torch.arange(18).reshape(3, 2, 3))
    foreach = [d for d in report.decisions if "foreach" in d.node]
    assert foreach and all(
        (d.action == "inplace") == (fn is _foreach_over_two_views_put_back_in_a_chain) for d in foreach
    ), report.explain()


def test_a_dtype_view_of_a_size_one_result_of_a_symbolic_trace_keeps_it_functional() -> None:
    # Random pipelines seed 6201: the symbolic trace records clone(x) of a (1,)-sized input
    # with strides (s0,) as strides (1,); eager's clone of x[::2] keeps (2,). Moving
    # y = mul(c, 2) into c's memory gave y strides (2,), and y.view(torch.int32) raised
    # (stride(-1) must be 1); out of place, y is (1,) as the view needs.
    def f(x):
        c = x.clone()
        c.mul_(2)
        y = c * 2
        return (y.view(torch.int32)[1::2].abs() + 0,)

    def make_args():
        return (torch.arange(-2, 2, dtype=torch.int64)[::4],)

    gm = make_fx(torch.func.functionalize(f), tracing_mode="symbolic")(*make_args())
    out = fxinplace.reinplace(gm, *make_args(), check=True)
    assert torch.equal(out(*make_args())[0], f(*make_args())[0])


def test_an_as_strided_scatter_reaching_past_its_self_keeps_the_write_functional() -> None:
    # Random pipelines seed 101545. t2 = x[1][:, ::2] is elements 4 and 6 of x's storage;
    # t2.as_strided_((2, 2), (1, 2), 4) reaches 4..7. torch.func.functionalize records the
    # write back as as_strided_scatter(t2, lerp, [2, 2], [1, 2], 4), which returns only
    # elements 4 and 6 (its clone of the storage keeps 5 and 7 to itself): so that graph
    # leaves 5 and 7 as they were, unlike eager. The pass wrote lerp in place into the
    # storage and removed the scatters, which wrote 5 and 7: not what its input graph
    # computes (the checker found it). The scatter now stays, and the lerp with it.
    def f(x2):
        x2.transpose(1, 0).view(torch.int16)[:1] = 0
        t1 = x2.expand(3, *x2.shape)
        t2 = x2[1::2][0][..., ::2]
        t2.as_strided_((2, 2), (1, 2), t2.storage_offset())
        t2.lerp_(t2.mT * 1, 0.5)
        t2.copy_(t2)
        return (t1 * 2,)

    def make_args():
        return (torch.arange(28, dtype=torch.float16).reshape(7, 2, 2) / 8,)

    gm = make_fx(torch.func.functionalize(f))(*make_args())
    want_args = make_args()
    want = gm(*want_args)
    report = fxinplace.reinplace_report(gm, *make_args(), check=True)
    decisions = {d.node: d for d in report.decisions}
    assert decisions["as_strided_scatter"].reason_code == "view_outside_self", report.explain()
    got_args = make_args()
    assert torch.equal(gm(*got_args)[0], want[0]) and torch.equal(got_args[0], want_args[0])


def test_a_read_of_a_results_strides_keeps_it_out_of_a_differently_laid_out_self() -> None:
    # Random pipelines seed 112164. torch.func.functionalize's write-back into x, transposed,
    # reads the strides of index_copy's result to lay x out:
    #   c = index_copy(transpose(add(x, x), 0, 1), 0, i, v)   # fresh: strides (7, 1)
    #   as_strided_(x, [3, 7], [sym_stride(c, 0), 1]); copy_(x, c)
    # Computed in place into the transposed add, c has strides (1, 3): the write-back then
    # laid x out as (1, 1), which the functional graph never does (the checker found it).
    def f(x, i):
        x.add_(x)
        x.transpose_(0, 1)
        x.index_copy_(0, i, x.narrow(0, 2, 1) * 2)

    def make_args():
        return torch.arange(21).view(7, 3), torch.tensor([1])

    gm = make_fx(torch.func.functionalize(f), tracing_mode="symbolic")(*make_args())
    want_args = make_args()
    gm(*want_args)
    report = fxinplace.reinplace_report(gm, *make_args(), check=True)
    decisions = {d.node: d for d in report.decisions}
    assert decisions["index_copy"].reason_code == "layout_sensitive_use", report.explain()
    got_args = make_args()
    gm(*got_args)
    assert torch.equal(got_args[0], want_args[0]) and got_args[0].stride() == want_args[0].stride()


@pytest.mark.parametrize("policy", ["stock", "compile", "inductor"])
def test_a_write_back_of_a_transposed_result_keeps_it_out_of_the_input(policy: str) -> None:
    # Random pipelines seed 111356. x is transposed in place after a view of it was taken;
    # torch.func.functionalize writes x back as the transpose of the scattered value:
    #   y = select_scatter(x, add(select(x, 1, 2), 2), 1, 2)
    #   copy_(x, transpose(y, 0, 1))
    # With y written into x's memory, the write-back was x.copy_(x.t()): ATen raises
    # ("some elements ... refer to a single memory location"), and a kernel that did not
    # check would read elements it had already overwritten.
    def f(x):
        t = x[:, 2]
        x.swapdims_(0, 1)
        t.add_(2)
        return (x * 1,)

    def make_args():
        return (torch.arange(16).view(4, 4),)

    gm = make_fx(torch.func.functionalize(f))(*make_args())
    want_args = make_args()
    want = gm(*want_args)
    report = fxinplace.reinplace_report(gm, *make_args(), check=True, policy=policy)
    if policy == "compile":  # the one policy that scatters into written-back inputs
        kept = [d for d in report.decisions if d.reason_code == "write_back_reorders_result"]
        assert kept, report.explain()
    got_args = make_args()
    got = gm(*got_args)
    assert torch.equal(got[0], want[0]) and torch.equal(got_args[0], want_args[0]), gm.code


def test_a_dtype_view_copy_keeps_its_input_out_of_a_differently_strided_self() -> None:
    # Random pipelines seed 120539. remove="mutations_and_views" records y.view(torch.float32)
    # as view_copy.dtype: a fresh tensor, but taken through the view, which needs stride(-1)
    # to be 1 (size-1 dims included). Out of place, floor's result has strides (2, 1, 1); in
    # the memory of the scattered `add` (x's strides, (2, 1, 2)) view_copy raised.
    def f(x):
        t = x + 0.5
        t[:, 1:].div_(2)
        y = torch.floor(t * 2)
        return (y.view(torch.float32) * 1,)

    def make_args():
        return (torch.arange(14, dtype=torch.float64).view(7, 1, 2).transpose(1, 2),)

    gm = make_fx(fxinplace.functionalize(f, remove="mutations_and_views"))(*make_args())
    report = fxinplace.reinplace_report(gm, *make_args(), check=True)
    decisions = {d.node: d for d in report.decisions}
    assert decisions["floor"].reason_code == "layout_sensitive_use", report.explain()
    assert torch.equal(gm(*make_args())[0], f(*make_args())[0])


def test_a_dtype_view_of_a_size_zero_result_of_a_symbolic_trace_keeps_it_functional() -> None:
    # Random pipelines seed 120648: like seed 6201 with a size-0 dim. x is the diagonal of a
    # (0, 1) tensor, strides (2,); the symbolic trace records clone(x) with strides (1,),
    # eager's clone keeps (2,). In c's memory y = add(c, 2) had stride 2, and
    # y.view(torch.int32) raised.
    def f(x):
        y = x.clone() + 2
        return (y.view(torch.int32) * 1,)

    def make_args():
        return (torch.zeros(0, 1, dtype=torch.int64).diagonal(),)

    gm = make_fx(torch.func.functionalize(f), tracing_mode="symbolic")(*make_args())
    report = fxinplace.reinplace_report(gm, *make_args(), check=True)
    decisions = {d.node: d for d in report.decisions}
    assert decisions["add"].reason_code == "layout_sensitive_use", report.explain()
    assert gm(*make_args())[0].shape == f(*make_args())[0].shape


def test_a_write_back_of_the_inputs_own_value_keeps_results_out_of_it() -> None:
    # Random pipelines seed 121864. x.squeeze_() changes nothing on an input without size-1
    # dims, and torch.func.functionalize writes it back as copy_(x, squeeze(x)) (as
    # fxinplace.functionalize did before it left such a write-back out): a copy of x's own
    # value, read at the end. The planner took that read for a mere naming of x's memory
    # (a view's), so under the write-back rule y = mul(x, 2) went into x's memory and the
    # copy_ went: x ended holding y.
    def f(x):
        y = x * 2
        y[0].mul_(3)
        x.squeeze_()
        return (y.logical_not(), y + 1)

    def make_args():
        return (torch.arange(6.0).view(2, 3),)

    gm = make_fx(torch.func.functionalize(f))(*make_args())
    assert any(n.target is torch.ops.aten.copy_.default for n in gm.graph.nodes), gm.code
    report = fxinplace.reinplace_report(gm, *make_args(), check=True, policy="compile")
    decisions = {d.node: d for d in report.decisions}
    assert decisions["mul"].action == "keep", report.explain()
    want_args, got_args = make_args(), make_args()
    want = f(*want_args)
    got = gm(*got_args)
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    assert torch.equal(got_args[0], want_args[0])


def test_a_reshape_of_a_contiguous_clone_keeps_the_clone_out_of_a_transposed_operand() -> None:
    # Random pipelines seed 122329: flatten of a transposed tensor is clone(s, contiguous)
    # + _unsafe_view, a reshape with no alias annotation in its schema. policy="compile" may
    # write clone's result into its dead operand s through clone.out; there it keeps s's
    # transposed strides, which _unsafe_view cannot reshape ("view size is not compatible").
    def f(x):
        s = x.sign()
        s.flatten(-2)
        return (x * 1,)

    def make_args():
        return (torch.arange(56.0).view(1, 7, 8).transpose(1, 2) - 20,)

    gm = make_fx(torch.func.functionalize(f))(*make_args())
    report = fxinplace.reinplace_report(gm, *make_args(), check=True, policy="compile")
    decisions = {d.node: d for d in report.decisions}
    assert decisions["clone"].action == "keep", report.explain()


def _write_through_as_strided_of_an_empty_view(x, pos):
    # Random pipelines seed 132776 (torch.func.functionalize's graph of it): e is an empty
    # view of c, and as_strided of it reads c's elements 0 and 1. The functional
    # as_strided_scatter into e returns an empty tensor, so index_add's result is dropped
    # and the final value is c's. index_add_ in place would write c[0:2] (and removing the
    # scatter as a no-op let copy_ carry that into x).
    c = x * 1
    e = c.view(-1, 1)[:, :0].unsqueeze(0)
    written = torch.as_strided(e, (2,), (1,), 0).index_add(0, pos, torch.full((2,), 10, dtype=x.dtype))
    back = torch.as_strided_scatter(e, written, (2,), (1,), 0).squeeze(0)
    final = torch.slice_scatter(c.view(-1, 1), back, 1, 0, 0).view(-1)
    return x.copy_(final), final


def test_a_scatter_through_as_strided_of_an_empty_view_is_not_a_no_op() -> None:
    def make():
        return torch.arange(8), torch.tensor([0, 1])

    expected = _write_through_as_strided_of_an_empty_view(*make())
    gm = make_fx(_write_through_as_strided_of_an_empty_view)(*make())
    fxinplace.reinplace(gm, *make(), check=True)
    args = make()
    got = gm(*args)
    assert all(torch.equal(g, e) for g, e in zip(got, expected, strict=True)), (got, expected)
    assert torch.equal(args[0], torch.arange(8))
    report = fxinplace.reinplace_report(make_fx(_write_through_as_strided_of_an_empty_view)(*make()), *make())
    reasons = {d.node: d.reason_code for d in report.decisions}
    assert reasons["as_strided_scatter"] == "view_outside_self", reasons


def _exp_of_an_odd_slice_viewed_as_complex(x):
    t = torch.exp(x.clone()[1:3].clamp(-2.0, 2.0))
    return (torch.view_as_complex(t) * 2, t + 1)


def _exp_of_an_odd_slice_viewed_as_float64(x):
    t = torch.exp(x.clone()[1:3].clamp(-2.0, 2.0))
    return (t.view(torch.float64) * 2, t + 1)


@pytest.mark.parametrize(
    "fn",
    [_exp_of_an_odd_slice_viewed_as_complex, _exp_of_an_odd_slice_viewed_as_float64],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_a_result_viewed_as_a_wider_dtype_keeps_its_storage_offset(fn, pipeline) -> None:
    """Random pipelines seed 154723: exp(clamp(c[1:3])) computed in place lives at c[1:3]'s
    storage offset, 1; view_as_complex (and view(torch.float64)) of it needs an offset
    divisible by 2 and raised. The strides were checked, the offset was not."""
    assert_same_as_eager(fn, (torch.randn(7),), pipeline)


def _foreach_into_two_rows_both_returned(x):
    t = x + 1
    a, b = torch._foreach_add([t[0], t[1]], 2.0)
    return a, b


def _foreach_into_two_rows_one_returned(x):
    t = x + 1
    a, b = torch._foreach_add([t[0], t[1]], 2.0)
    return (a, b.sum())


@pytest.mark.parametrize("shape", [(3, 4), (3, 0)])
@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_two_returned_foreach_results_never_share_a_buffer(shape, pipeline) -> None:
    """Random pipelines seed 155184: `_foreach_add_` into two rows of one dead buffer made both
    returned results views of it, two outputs sharing a storage where the program returns
    tensors of their own. With one of them returned, the buffer is still reused."""
    args = (torch.randn(shape),)
    assert_same_as_eager(_foreach_into_two_rows_both_returned, args, pipeline)
    gm = PIPELINES[pipeline](_foreach_into_two_rows_both_returned, clone_args(args))
    fxinplace.reinplace(gm, *clone_args(args))
    a, b = gm(*clone_args(args))
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr() or a.numel() == 0, gm.code
    gm = PIPELINES[pipeline](_foreach_into_two_rows_one_returned, clone_args(args))
    report = fxinplace.reinplace_report(gm, *clone_args(args), check=True)
    assert [d.action for d in report.decisions if "foreach" in d.node] == ["inplace"], report.explain()


def _as_strided_of_a_foreach_copy_of_an_indexed_write(x2):
    x2[::2].index_put_((torch.tensor([-1]),), torch.tensor(1.0), accumulate=True)
    x2.index_put_((torch.tensor([0, 1]),), x2.flip(0).narrow(0, 0, 2) * 2)
    torch._foreach_copy_([x2], torch._foreach_add([x2], [x2.flip(0)]))
    row = x2[:, :, 1].unbind(0)[-2]
    return (row.as_strided((2,), (1,), row.storage_offset()).expand(2, 2),)


def _transposed_input_at_offset_2(n=7):
    return (torch.arange(4.0 * n + 4).view(2 * n + 2, 1, 2)[1:-1].transpose(0, -1),)


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_an_as_strided_of_a_foreach_copy_result_reads_its_self_offset(pipeline) -> None:
    """Random pipelines seed 158191: `_foreach_copy([p], [s])[0]` is laid out as p, storage
    offset included. p = index_put(c, ...) is fresh at offset 0; in place into c (a clone of
    the input at offset 2) it moved to offset 2, and the as_strided of the copy's result,
    which addresses storage offsets, read other elements (the checker found it). The input
    is made afresh for each call: clone() would drop its offset."""
    fn = _as_strided_of_a_foreach_copy_of_an_indexed_write
    gm = PIPELINES[pipeline](fn, _transposed_input_at_offset_2())
    fxinplace.reinplace(gm, *_transposed_input_at_offset_2(), check=True)
    want_args, got_args = _transposed_input_at_offset_2(), _transposed_input_at_offset_2()
    want, got = fn(*want_args), gm(*got_args)
    assert torch.equal(want[0], got[0]), gm.code
    assert torch.equal(want_args[0], got_args[0]), gm.code


def test_a_symbolic_trace_whose_sizes_a_guard_fixed_still_distrusts_size_one_strides() -> None:
    """Random pipelines seed 164804: unbind over x0's dim fixed its size by a guard, so every
    extent the symbolic trace records is a number; but it still records clone() of a (1,)
    tensor of stride 3 with stride 1, where eager keeps 3. Written in place into that clone,
    `_foreach_mul`'s element had stride 3, and view(torch.float32) of it raised. The planner
    now hears that the graph was traced symbolically, whatever its extents say."""

    def f(x0):
        t0 = x0[None].tanh()
        [_, t3, t4] = torch._foreach_mul([torch._neg_view(x0), torch._neg_view(t0).unbind(1)[1], t0], -1.5)
        t3.view_as(t3).view(torch.float32).sub_(0.5)
        return ((t4 + 2.0).logical_not(),)

    def make_args():
        return (torch.arange(3, dtype=torch.float64),)

    gm = make_fx(torch.func.functionalize(f), tracing_mode="symbolic")(*make_args())
    fxinplace.reinplace(gm, *make_args(), check=True)
    assert torch.equal(gm(*make_args())[0], f(*make_args())[0]), gm.code


def test_an_operand_recorded_with_selfs_layout_in_a_size_one_dim_is_not_trusted_to_be_exactly_self() -> None:
    """Random pipelines seed 162186: view(s, [1, -1]) of s = z[..., 1:3] is recorded by the
    symbolic trace with s's strides, (s0, 1); eager's view has (2, 1). `view | s` written into
    the view's memory took s for exactly self's elements, and ATen, which compares the strides
    of size-1 dims too, raised "some elements ... refer to a single memory location"."""

    def f(x2):
        x2.unsqueeze_(0)
        t1 = torch.zeros_like(x2)[..., 1:3]
        t2 = t1.view(t1.shape[0], -1) | t1
        return (t2.clone() % 3,)

    def make_args():
        return (torch.arange(7, dtype=torch.int32),)

    gm = make_fx(fxinplace.functionalize(f), tracing_mode="symbolic")(*make_args())
    gm.graph.eliminate_dead_code()
    gm.recompile()
    fxinplace.reinplace(gm, *make_args(), check=True)
    assert torch.equal(gm(*make_args())[0], f(*make_args())[0]), gm.code


def _clone_of_a_result_in_size_one_dims_viewed_as_a_narrower_dtype(x0):
    # c = clone(select(unfold(...))) has sizes (1, 1) and strides (0, 0); sub(c, -1) in place
    # keeps them (functional: (1, 1)), clone() copies them, and view(torch.int16) needs a
    # last stride of 1 even in a size-1 dim.
    t0 = torch._neg_view(x0).expand(2, *torch._neg_view(x0).shape).detach().reshape(1, -1)
    t1 = t0.unfold(1, 2, 3)[:, :, -1] - -1
    t5 = t1.clone()
    t5.view(torch.int16).clamp_(-2, 2)
    return (t5 * 2,)


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_size_one_strides_that_reach_a_dtype_view_through_a_clone_are_kept(pipeline) -> None:
    """Random pipelines seed 191751: the layout check of results computed from a rewritten op
    passed over strides of size-1 dims, which clone copies and view(dtype) checks."""
    assert_same_as_eager(
        _clone_of_a_result_in_size_one_dims_viewed_as_a_narrower_dtype,
        (torch.tensor(3, dtype=torch.int32),),
        pipeline,
    )
