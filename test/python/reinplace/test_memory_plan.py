"""reinplace(policy="compile", memory_plan=True): results that still allocate after
re-inplacing go into buffers that are dead by then, through out= kernels (issue 18).

Each case on a small make_fx graph: the reuse happens where it must (structure: `f.out` with
the donor as out=, the explanation's line), the result is bitwise equal to the graph planned
without it and to eager (values, inputs after the call, strides), `check=True` proves it,
and the adversaries the survey of shipped planner bugs names are refused: a view of the
dead buffer read later, a live range ending at the op itself, symbolic sizes equal only at
the hint, inputs and outputs, another layout or dtype, a hold across the peak.
"""

from __future__ import annotations

import copy
import operator

import pytest
import torch
import torch.fx.experimental._config as fx_config
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace

aten = torch.ops.aten


def _planned(fn, args, *, mode="real", check=True):
    gm = make_fx(fn, tracing_mode=mode)(*args)
    unplanned = copy.deepcopy(gm)
    fxinplace.reinplace(unplanned, *args, policy="compile")
    report = fxinplace.reinplace_report(gm, *args, policy="compile", memory_plan=True, check=check)
    return gm, unplanned, report


def _outs(gm, args):
    got_args = [a.clone() for a in args]
    out = gm(*got_args)
    return (out if isinstance(out, (tuple, list)) else (out,)), got_args


def _same_as_unplanned_and_eager(fn, gm, unplanned, args):
    want, want_args = _outs(fn, args)
    plain, _ = _outs(unplanned, args)
    got, got_args = _outs(gm, args)
    for w, p, g in zip(want, plain, got, strict=True):
        assert torch.equal(p, g) and g.stride() == p.stride(), gm.code  # bitwise, same layout
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride(), gm.code
    for w, g in zip(want_args, got_args, strict=True):
        assert torch.equal(w, g), gm.code


def _assert_allocates_anew(f, args, explained: str) -> None:
    """The planner reuses no buffer for ``f``, says ``explained``, and changes no result."""
    gm, unplanned, report = _planned(f, args)
    assert _reuses(gm) == {}
    assert explained in report.explain()
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


def _reuses(gm):
    """node name -> the name of the node passed as out= (the dead buffer), written
    `as_strided(name)` when the buffer is laid out anew."""

    def buffer(out):
        if out.target is aten.as_strided.default:
            return f"as_strided({out.args[0].name})"
        return out.name

    return {
        n.name: buffer(n.kwargs["out"])
        for n in gm.graph.nodes
        if n.op == "call_function" and isinstance(n.kwargs.get("out"), torch.fx.Node)
    }


def _chain(a, b):
    y1 = torch.mm(a, b)
    y2 = torch.mm(y1, b)
    y3 = torch.mm(y2, b)  # y1 is dead: y3 takes its buffer
    y4 = torch.mm(y3, b)  # y2 is dead
    return torch.mm(y4, b).relu()


@pytest.mark.parametrize("mode", ["real", "symbolic"])
def test_a_chain_of_matmuls_reuses_the_buffers_that_died(mode):
    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm, unplanned, report = _planned(_chain, args, mode=mode)
    assert _reuses(gm) == {"mm_2": "mm", "mm_3": "mm_1", "mm_4": "mm"}
    assert all(n.target is aten.mm.out for n in gm.graph.nodes if n.name in ("mm_2", "mm_3", "mm_4"))
    assert report.num_buffers_reused == 3 and report.bytes_reused == 3 * 64
    assert "mm_2: memory: reuses the buffer of mm (64 bytes, dead after mm_1)" in report.explain()
    _same_as_unplanned_and_eager(_chain, gm, unplanned, args)
    if mode == "symbolic":  # a second size runs the same plan
        _same_as_unplanned_and_eager(_chain, gm, unplanned, (torch.randn(6, 6), torch.randn(6, 6)))


def test_without_memory_plan_nothing_is_reused():
    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm = make_fx(_chain)(*args)
    report = fxinplace.reinplace_report(gm, *args, policy="compile")
    assert _reuses(gm) == {} and report.num_buffers_reused == 0
    assert "memory:" not in report.explain()


def test_a_view_of_the_dead_buffer_read_later_keeps_it_alive():
    def f(a, b, c):
        d = torch.mm(a, b)
        row = d[0]  # a view: d's memory is read through it after y
        s = d.sum()
        y = torch.mm(c, b)
        return y + s, row * 2

    args = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4))
    gm, unplanned, report = _planned(f, args)
    assert "mm" not in _reuses(gm).values()
    assert "mm_1: memory: allocates (64 bytes): no dead buffer" in report.explain()
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


def test_a_buffer_whose_last_reader_is_the_op_itself_is_not_its_out():
    def f(a, b):
        d = torch.mm(a, b)
        return torch.mm(d, b)  # out=d would overlap an operand

    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm, unplanned, _ = _planned(f, args)
    assert _reuses(gm) == {}
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


def test_inputs_and_outputs_are_never_reused():
    def f(a, b):
        d = torch.mm(a, b)  # returned: never dies
        e = torch.mm(b, b)
        s = e.sum()  # e dies here
        y = torch.mm(a, a)  # may take e, never d, a or b
        return d, y + s

    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm, unplanned, _ = _planned(f, args)
    assert _reuses(gm) == {"mm_2": "mm_1"}
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


def test_another_dtype_of_the_same_byte_count_is_not_a_match():
    def f(a, b, c64, e64):
        d = torch.mm(a, b)  # 64 bytes of float32
        s = d.sum()
        y64 = torch.mm(c64, e64)  # 64 bytes of float64
        return y64, s

    f64 = torch.float64
    args = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(2, 4, dtype=f64), torch.randn(4, 4, dtype=f64))
    _assert_allocates_anew(f, args, "mm_1: memory: allocates (64 bytes): no dead buffer")


def test_another_layout_of_the_same_sizes_is_laid_out_anew():
    def f(a, b, x):
        d = torch.mm(a, b)
        s = d.sum()
        yt = torch.add(x.t(), 1)  # d's sizes, transposed strides (add keeps its input's layout)
        return yt.sum() + s

    args = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4))
    gm, unplanned, report = _planned(f, args)
    assert _reuses(gm) == {"add": "as_strided(mm)"}  # the same 64 bytes, strided (1, 4)
    view = gm.graph.find_nodes(op="call_function", target=aten.as_strided.default)[0]
    assert view.args[1:] == ([4, 4], [1, 4], 0)
    assert (
        "add: memory: reuses the buffer of mm (64 bytes, dead after sum_1), laid out anew" in report.explain()
    )
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


def _reshaped(x, w):
    a = torch.mm(x, w)  # (n, 16)
    s = a.sum()  # a dies
    b = torch.mm(w.t(), x.t())  # (16, n): a's byte count, another shape
    c = torch.mm(b, x)  # (16, 8)
    return c + s


@pytest.mark.parametrize("mode", ["real", "symbolic"])
def test_a_buffer_of_the_same_byte_count_serves_another_shape(mode):
    args = (torch.randn(5, 8), torch.randn(8, 16))
    gm, unplanned, report = _planned(_reshaped, args, mode=mode)
    assert _reuses(gm) == {"mm_1": "as_strided(mm)"}
    assert "mm_1: memory: reuses the buffer of mm (320 bytes, dead after sum_1), laid out anew" in (
        report.explain()
    )
    _same_as_unplanned_and_eager(_reshaped, gm, unplanned, args)
    if mode == "symbolic":  # the view's sizes are computed in the graph: right at a second size
        sizes = {n.target for n in gm.graph.nodes if n.op == "call_function"}
        assert aten.sym_size.int in sizes, gm.code
        _same_as_unplanned_and_eager(_reshaped, gm, unplanned, (torch.randn(7, 8), torch.randn(8, 16)))


def test_a_result_that_leaves_the_graph_takes_only_a_buffer_of_its_own_layout():
    def f(a, b, x):
        d = torch.mm(a, b)
        s = d.sum()
        yt = torch.add(x.t(), 1)  # returned: it would be a view of d's buffer
        return yt, s

    args = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4))
    _assert_allocates_anew(f, args, "add: memory: allocates (64 bytes): no dead buffer")


def _returns_a_transpose(a, b, x):
    d = torch.mm(a, b)
    s = d.sum()
    yt = torch.add(x.t(), 1)
    return yt, s


@pytest.mark.parametrize("returned_again", [False, True])
def test_an_internal_output_may_be_a_view_of_a_dead_buffer(returned_again):
    """internal_outputs: outputs only the compiled program sees (AOTAutograd's saved
    activations, gradients) may be views of a dead buffer laid out anew; the same node also
    returned at a position the caller sees may not."""

    def f(a, b, x):
        yt, s = _returns_a_transpose(a, b, x)
        return (yt, s, yt) if returned_again else (yt, s)

    args = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4))
    gm = make_fx(f)(*args)
    unplanned = copy.deepcopy(gm)
    fxinplace.reinplace(unplanned, *args, policy="compile")
    fxinplace.reinplace_report(
        gm, *args, policy="compile", memory_plan=True, check=True, internal_outputs=(0,)
    )
    assert _reuses(gm) == ({} if returned_again else {"add": "as_strided(mm)"}), gm.code
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


def test_an_internal_output_position_outside_the_outputs_is_a_clear_error():
    args = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4))
    gm = make_fx(_returns_a_transpose)(*args)
    with pytest.raises(ValueError, match="fxinplace.reinplace: internal output 2 is not an output"):
        fxinplace.reinplace_report(gm, *args, policy="compile", memory_plan=True, internal_outputs=(2,))


def test_byte_counts_equal_only_at_the_hint_are_not_a_match():
    def f(x, y, w):
        a = torch.mm(x, w)  # (s0, 4)
        s = a.sum()
        b = torch.mm(w.t(), y.t())  # (4, s1): a's byte count at the hint only
        return b.sum() + s

    args = (torch.randn(3, 4), torch.randn(3, 4), torch.randn(4, 4))
    with fx_config.patch(use_duck_shape=False):
        gm, unplanned, _ = _planned(f, args, mode="symbolic")
    assert _reuses(gm) == {}
    _same_as_unplanned_and_eager(f, gm, unplanned, (torch.randn(2, 4), torch.randn(5, 4), torch.randn(4, 4)))


def test_symbolic_sizes_equal_only_at_the_hint_are_not_a_match():
    def f(a, b, c):
        d = torch.mm(a, b)  # (s0, 4)
        s = d.sum()
        y = torch.mm(c, b)  # (s1, 4): the same size at the hint only
        return y + s

    args = (torch.randn(3, 4), torch.randn(4, 4), torch.randn(3, 4))
    with fx_config.patch(use_duck_shape=False):
        gm, unplanned, _ = _planned(f, args, mode="symbolic")
    assert _reuses(gm) == {}
    other = (torch.randn(2, 4), torch.randn(4, 4), torch.randn(5, 4))
    _same_as_unplanned_and_eager(f, gm, unplanned, other)


def _a_dead_buffer_of_s0_then_a_clone_of_7(x):
    a = x[:, 0] * 2  # (s0,), dead after the sum
    s = a.sum()
    c = x[:, 1].narrow(0, 0, 7).clone()  # (7,): a's size at the hint (s0 = 7) only
    return c * s


def test_a_symbolic_graph_read_at_the_sample_sizes_gets_no_plan():
    """Random pipelines seed 113263: where a dynamic-shape graph's values cannot be replayed
    symbolically, the pass reads it at the sample args' sizes, which may make a dead buffer
    of s0 elements look like one of 7; a custom op's `None` result (a getitem with no
    recorded value) was enough to send a graph down that path."""
    args = (torch.randn(7, 3),)
    gm = make_fx(_a_dead_buffer_of_s0_then_a_clone_of_7, tracing_mode="symbolic")(*args)
    next(n for n in gm.graph.nodes if n.target is aten.sum.default).meta.pop("val")  # not replayable
    unplanned = copy.deepcopy(gm)
    fxinplace.reinplace(unplanned, *args, policy="compile")
    report = fxinplace.reinplace_report(gm, *args, policy="compile", memory_plan=True, check=True)
    assert report.metadata_path != "symbolic"
    assert _reuses(gm) == {}, report.explain()
    other = (torch.randn(11, 3),)
    _same_as_unplanned_and_eager(_a_dead_buffer_of_s0_then_a_clone_of_7, gm, unplanned, other)


def test_a_getitem_of_a_custom_ops_none_result_keeps_the_graph_symbolic():
    import fxinplace.testing.random.custom_ops  # noqa: F401  registers torch.ops.fxrandom

    def f(y):
        t = y[:, 2].narrow(0, 0, 2).clone()  # concrete sizes, which custom ops need
        torch.ops.fxrandom.write_both_(t, t * 1)
        return (_a_dead_buffer_of_s0_then_a_clone_of_7(y), t)

    def make_args(n):
        return (torch.randn(n, 3),)

    gm = make_fx(fxinplace.functionalize(f), tracing_mode="symbolic")(*make_args(7))
    assert any(n.target is operator.getitem and "val" not in n.meta for n in gm.graph.nodes)
    report = fxinplace.reinplace_report(gm, *make_args(7), policy="compile", memory_plan=True, check=True)
    assert report.metadata_path == "symbolic"
    assert _reuses(gm) == {}, report.explain()
    want_args = make_args(11)
    want = f(*[a.clone() for a in want_args])
    got_args = [a.clone() for a in want_args]
    got = gm(*got_args)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_a_hold_across_the_peak_is_refused():
    def f(a, b, c):
        d = torch.mm(a, b)  # 64 bytes, dead after the sum
        s = d.sum()
        big1 = torch.mm(c, c)  # the peak: big1 and big2 live together
        big2 = torch.mm(big1, c)
        r = big2.sum()
        y = torch.mm(b, a)  # d's size: holding d until here would raise the peak
        return y + s + r

    args = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(16, 16))
    gm, unplanned, report = _planned(f, args)
    assert "mm_3" not in _reuses(gm)
    assert "mm_3: memory: allocates (64 bytes): holding the dead buffer until this op would raise" in (
        report.explain()
    )
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


def test_a_generated_out_form_is_not_used():
    def f(x, w, b):
        y = torch.nn.functional.layer_norm(x, (4,), w, b)
        s = y.sum()
        z = torch.nn.functional.layer_norm(x * 2, (4,), w, b)
        return z + s

    args = (torch.randn(3, 4), torch.randn(4), torch.randn(4))
    gm, unplanned, report = _planned(f, args)
    assert not any("layer_norm" in name for name in _reuses(gm))
    assert "no out= kernel of its own for this device" in report.explain()
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


def test_memory_plan_needs_the_compile_policy():
    gm = make_fx(_chain)(torch.randn(4, 4), torch.randn(4, 4))
    for policy in ("stock", "inductor"):
        with pytest.raises(ValueError, match="fxinplace.reinplace: memory_plan=True needs policy='compile'"):
            fxinplace.reinplace_report(
                gm, torch.randn(4, 4), torch.randn(4, 4), policy=policy, memory_plan=True
            )


def _backward_of_cos(saved, grad):
    s = torch.sin(saved)  # saved's last read: a donated buffer may take s
    return (torch.mul(grad, s).neg(),)


def test_a_donated_input_read_for_the_last_time_is_written_in_place():
    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm = make_fx(_backward_of_cos)(*args)
    report = fxinplace.reinplace_report(
        gm, *args, policy="compile", memory_plan=True, donated_inputs=(0,), check=True
    )
    assert "sin: inplace: done" in report.explain()
    (sin,) = (n for n in gm.graph.nodes if n.target is aten.sin_.default)
    assert sin.args[0].op == "placeholder" and sin.args[0].name == "saved_1"
    want = _backward_of_cos(*[a.clone() for a in args])
    got = gm(*[a.clone() for a in args])
    assert torch.equal(want[0], got[0])


def test_an_input_not_donated_or_shared_with_another_is_not_written():
    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm = make_fx(_backward_of_cos)(*args)
    report = fxinplace.reinplace_report(gm, *args, policy="compile", memory_plan=True, check=True)
    assert "sin: keep: self is a graph input" in report.explain()
    base = torch.randn(2, 4, 4)  # two donated inputs on one storage: neither is the graph's
    gm = make_fx(_backward_of_cos)(base[0], base[1])
    report = fxinplace.reinplace_report(
        gm, base[0], base[1], policy="compile", memory_plan=True, donated_inputs=(0, 1), check=True
    )
    assert "sin: keep:" in report.explain()


def test_a_result_that_leaves_the_graph_takes_no_donated_buffer():
    def f(saved, w):
        s = saved.sum()  # the donated buffer dies here
        a = torch.mm(w, w)  # not returned: may take it
        t = a.sum()  # ... and dies, handing the donated memory on
        y = torch.mm(w, w)  # returned: would be an output in an input's memory
        return y, s + t

    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm = make_fx(f)(*args)
    report = fxinplace.reinplace_report(
        gm, *args, policy="compile", memory_plan=True, donated_inputs=(0,), check=True
    )
    assert _reuses(gm) == {"mm": "saved_1"}
    assert "mm_1: memory: allocates (64 bytes): no dead buffer" in report.explain()


def _slice_grad(g, a, b):
    d = torch.mm(a, b)  # (4, 8): dead after the sum
    s = d.sum()
    y = aten.slice_backward(g, [4, 8], 1, 2, 6, 1)  # zeros with g in columns 2..5
    return y * 2, s


def test_slice_backward_zeroes_a_dead_buffer_and_copies_into_its_slice():
    args = (torch.randn(4, 4), torch.randn(4, 3), torch.randn(3, 8))
    gm, unplanned, report = _planned(_slice_grad, args)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert aten.slice_backward.default not in targets
    (zeroed,) = (n for n in gm.graph.nodes if n.target is aten.zero_.default)
    assert zeroed.args[0].name == "mm"
    assert "slice_backward: memory: reuses the buffer of mm (128 bytes, dead after sum_1)" in report.explain()
    _same_as_unplanned_and_eager(_slice_grad, gm, unplanned, args)


def test_the_checker_refuses_a_slice_backward_buffer_left_unzeroed():
    args = (torch.randn(4, 4), torch.randn(4, 3), torch.randn(3, 8))
    gm = make_fx(_slice_grad)(*args)
    fxinplace.reinplace(gm, *args, policy="compile", memory_plan=True)
    (zeroed,) = (n for n in gm.graph.nodes if n.target is aten.zero_.default)
    zeroed.replace_all_uses_with(zeroed.args[0])  # d keeps mm's values outside the slice
    gm.graph.erase_node(zeroed)
    gm.recompile()
    functional = make_fx(_slice_grad)(*args)
    with pytest.raises(fxinplace.ReinplaceCheckError, match="the functional graph has zeros.s value"):
        fxinplace.check_reinplaced(functional, gm, *args)


def _zeroed_then_clamped_and_viewed_as_half(z):
    # x = the real parts of z: (n,) with stride 2. aten.zero keeps that stride on CPU, and
    # its meta kernel (the symbolic trace's) says 1; clamp's result has stride 1 either
    # way. Given zero's dead buffer as out=, clamp kept stride 2, and view(float16),
    # which needs a last stride of 1 even for a dim of size 1, raised.
    x = torch.view_as_real(z).select(-1, 0)
    zeroed = torch.ops.aten.zero.default(x)
    total = zeroed.sum()
    clamped = torch.clamp(x, -1.0, 1.0)
    return clamped.view(torch.float16) * 1, total


def test_a_buffer_whose_recorded_size_one_strides_are_not_the_kernels_is_laid_out_anew():
    """Random pipelines seed 140296 (fxf@sym:compile): clamp took the dead buffer of
    aten.zero's result, of clamp's very layout as recorded."""
    args = (torch.complex(torch.randn(1), torch.randn(1)),)
    gm, unplanned, report = _planned(_zeroed_then_clamped_and_viewed_as_half, args, mode="symbolic")
    assert _reuses(gm) == {"clamp": "as_strided(zero)"}, report.explain()
    _same_as_unplanned_and_eager(_zeroed_then_clamped_and_viewed_as_half, gm, unplanned, args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize(
    ("scalar_op", "out"),
    [
        (lambda y: aten.div.Scalar(y, 3.0), aten.div.out),
        (lambda y: aten.div.Scalar_mode(y, 0.7, rounding_mode="floor"), aten.div.out_mode),
        (lambda y: aten.mul.Scalar(y, 1 / 3), aten.mul.out),
        (lambda y: aten.add.Scalar(y, 0.1, 3), aten.add.out),  # alpha passed by position
        (lambda y: aten.sub.Scalar(y, 0.1), aten.sub.out),
    ],
    ids=["div", "div_mode", "mul", "add_alpha", "sub"],
)
def test_a_scalar_op_writes_a_dead_buffer_through_its_tensor_siblings_out(scalar_op, out, dtype):
    """`div.Scalar`'s own out= form is generated (computes and copies): the op allocated even
    beside a dead buffer of its size (T5's backward divides gradients by a count so). ATen
    runs it as div.Tensor of the wrapped scalar, whose out= kernel is real, so
    `div.out(y2, 3.0, out=y1)` computes the same bits into the dead buffer."""

    def f(a, b):
        y1 = torch.mm(a, b)
        y2 = torch.mm(y1, b)  # y1 dies here
        y3 = scalar_op(y2)  # y2 is read later: not in place; y1's buffer instead
        return (y2 + y3,)

    args = (torch.randn(4, 4, dtype=dtype), torch.randn(4, 4, dtype=dtype))
    gm, unplanned, report = _planned(f, args)
    written = [n for n in gm.graph.nodes if n.op == "call_function" and "out" in n.kwargs]
    assert [(n.target, _reuses(gm)[n.name]) for n in written] == [(out, "mm")], gm.code
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


@pytest.mark.parametrize(
    "factory",
    [
        lambda y: aten.zeros.default([4, 4], dtype=y.dtype),
        lambda y: aten.full.default([4, 4], 2.5, dtype=y.dtype),
        lambda y: aten.zeros_like.default(y),
        lambda y: aten.ones_like.default(y),
        lambda y: aten.full_like.default(y, 1 / 3),
        lambda y: aten.new_zeros.default(y, [4, 4]),
        lambda y: aten.new_full.default(y, [4, 4], fill_value=-7),
    ],
    ids=["zeros", "full", "zeros_like", "ones_like", "full_like", "new_zeros", "new_full_kwarg"],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_constant_factory_fills_a_dead_buffer(factory, dtype):
    """Factories of constant tensors have generated out= forms only (T5 builds its attention
    mask and position bias with full_like, zeros_like and zeros): `fill_(d, v)` of a dead
    buffer d computes the same tensor, the value converted to d's dtype as the factory
    converts it."""

    def f(a, b):
        y1 = torch.mm(a, b)
        y2 = torch.mm(y1, b)  # y1 dies here
        c = factory(y2)
        return (torch.addcmul(y2, c, y2),)

    args = (torch.randn(4, 4, dtype=dtype), torch.randn(4, 4, dtype=dtype))
    gm, unplanned, report = _planned(f, args)
    filled = [n for n in gm.graph.nodes if n.target is aten.fill_.Scalar]
    assert [n.args[0].name for n in filled] == ["mm"], gm.code
    assert not any(n.target in (aten.zeros.default, aten.full.default) for n in gm.graph.nodes), gm.code
    _same_as_unplanned_and_eager(f, gm, unplanned, args)
