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


def _reuses(gm):
    """node name -> the name of the node passed as out= (the dead buffer)."""
    return {
        n.name: n.kwargs["out"].name
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


def test_another_dtype_or_layout_is_not_a_match():
    def f(a, b, x):
        d = torch.mm(a, b)
        s = d.sum()
        y64 = torch.mm(a.double(), b.double())  # float64: not d's dtype
        yt = torch.add(x.t(), 1)  # d's sizes, transposed strides (add keeps its input's layout)
        return y64 + s, yt

    args = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4))
    gm, unplanned, _ = _planned(f, args)
    assert "mm" not in _reuses(gm).values()
    _same_as_unplanned_and_eager(f, gm, unplanned, args)


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
