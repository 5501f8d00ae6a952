"""reinplace(policy="compile"): the rules compile graphs need beyond the stock pass's (issue 9).

Each rule on a small make_fx graph: the promised rewrite happens (structure), the result
equals eager and the functional graph (values, inputs after the call), policy="stock" leaves
the graph as the stock pass would, and the rule's conditions refuse where they must.
"""

from __future__ import annotations

import pytest
import torch
from same_results import assert_same_results, targets
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.reinplace import reinplace as stock_reinplace

import fxinplace

aten = torch.ops.aten


def _compiled(fn, args, *, functionalize=False):
    traced = torch.func.functionalize(fn, remove="mutations_and_views") if functionalize else fn
    gm = make_fx(traced)(*args)
    report = fxinplace.reinplace_report(gm, *args, policy="compile", check=True)
    return gm, {d.node: d for d in report.decisions}


def _stock_targets(fn, args, *, functionalize=False):
    traced = torch.func.functionalize(fn, remove="mutations_and_views") if functionalize else fn
    gm = make_fx(traced)(*args)
    fxinplace.reinplace(gm, *args, check=True)
    mirror = make_fx(traced)(*args)
    stock_reinplace(mirror, *args)
    assert mirror.code == gm.code, "policy='stock' must stay the stock pass's graph"
    return targets(gm)


def commutative(a, b):
    x = a.sin()
    y = b.cos()
    return x, x + y  # x is returned: add may not write x; y is dead


def no_inplace_form(a, b):
    x = a.sin()
    z = b.cos() * 2
    return x, aten.threshold_backward(z, x, 0.0)  # z dead: threshold_backward.grad_input(..., z)


def test_a_dead_other_operand_takes_a_commutative_result() -> None:
    args = (torch.randn(5), torch.randn(5))
    gm, decisions = _compiled(commutative, args)
    node = next(n for n in gm.graph.nodes if n.name == "add")
    # add.out(sin, cos, out=cos), not cos.add_(sin): the operands keep their order.
    assert node.target is aten.add.out and node.kwargs["out"].name == "cos", gm.code
    assert [a.name for a in node.args] == ["sin", "cos"], gm.code
    assert decisions["add"].action == "inplace"
    assert_same_results(commutative, args, gm)
    assert aten.add.Tensor in _stock_targets(commutative, args)


def test_writing_into_the_second_operand_keeps_nans_payload_bits() -> None:
    """Seed 101154: `add(x, y)` rewritten as `y.add_(x)` computes `y + x`, whose NaN (both
    operands NaN) carries the other operand's payload than eager's x + y: a program reading the
    bits through an integer view saw another value. The out= form keeps the operands' order."""

    def nan_bits(a, b):
        x = a.view(torch.float64) * 1  # NaNs keep their payload bits through * 1
        y = b.view(torch.float64) * 1
        return x, (x + y).view(torch.int64)  # x returned: only y's buffer can take the sum

    quiet_nan = 0x7FF8000000000000
    args = (quiet_nan + torch.arange(1, 6), quiet_nan + torch.arange(100, 105))
    fa, fb = (t.view(torch.float64) for t in args)
    if torch.equal((fa + fb).view(torch.int64), (fb + fa).view(torch.int64)):
        pytest.skip("this machine's add carries the same NaN payload in either operand order")
    gm, _ = _compiled(nan_bits, args)
    assert aten.add_.Tensor not in targets(gm), gm.code
    want, got = nan_bits(*args)[1], gm(*args)[1]
    assert torch.equal(want, got), (want, got)


def test_an_op_without_inplace_form_writes_a_dead_operand_through_out() -> None:
    args = (torch.randn(5), torch.randn(5))
    gm, _ = _compiled(no_inplace_form, args)
    node = next(n for n in gm.graph.nodes if n.name == "threshold_backward")
    assert node.target is aten.threshold_backward.grad_input, gm.code
    # mul's value lives in cos's buffer (mul_ into cos): threshold_backward writes there.
    assert node.kwargs["grad_input"].name == "cos", gm.code
    assert_same_results(no_inplace_form, args, gm)
    assert aten.threshold_backward.default in _stock_targets(no_inplace_form, args)


def test_no_destination_when_every_operand_is_read_later() -> None:
    def both_alive(a, b):
        x, y = a.sin(), b.cos()
        return x, y, x * y

    args = (torch.randn(5), torch.randn(5))
    gm, decisions = _compiled(both_alive, args)
    assert aten.mul.Tensor in targets(gm) and decisions["mul"].reason_code == "used_later"
    assert_same_results(both_alive, args, gm)


def test_add_with_alpha_is_not_swapped() -> None:
    def with_alpha(a, b):
        x, y = a.sin(), b.cos()
        return x, torch.add(x, y, alpha=2)  # x + 2y != y + 2x

    args = (torch.randn(5), torch.randn(5))
    gm, _ = _compiled(with_alpha, args)
    assert aten.add_.Tensor not in targets(gm), gm.code
    assert_same_results(with_alpha, args, gm)


def test_a_written_back_input_is_updated_in_its_own_memory() -> None:
    def kv_write(cache, pos, new):
        cache.index_put_((pos,), new)
        return cache[:2].sum()

    args = (torch.zeros(8, 4), torch.tensor([1, 5]), torch.ones(2, 4))
    gm, decisions = _compiled(kv_write, args, functionalize=True)
    assert aten.index_put_.default in targets(gm) and aten.copy_.default not in targets(gm), gm.code
    assert decisions["copy_"].action == "remove_copy"
    assert_same_results(kv_write, args, gm)
    assert aten.copy_.default in _stock_targets(kv_write, args, functionalize=True)


def test_an_input_read_before_its_write_back_is_not_written_early() -> None:
    def reads_old(x):
        y = x + 1
        s = x.sum()  # reads x's old value after y is computed
        x.copy_(y)
        return s

    args = (torch.arange(4.0),)
    gm, decisions = _compiled(reads_old, args, functionalize=True)
    assert decisions["add"].action == "keep" and decisions["add"].reason_code == "used_later", gm.code
    assert_same_results(reads_old, args, gm)


def test_a_write_back_of_another_value_does_not_license_the_write() -> None:
    """pytorch issue 198094's shape: the epilogue copies a different value than the op's result."""

    def other_value(x):
        y = x * 2
        z = y + 1
        x.copy_(z)
        return y

    args = (torch.arange(4.0),)
    gm, _ = _compiled(other_value, args, functionalize=True)
    assert_same_results(other_value, args, gm)
    out = gm(args[0].clone())
    assert out.untyped_storage().data_ptr() != args[0].untyped_storage().data_ptr()


def test_another_operand_aliasing_the_written_input_is_refused() -> None:
    """pytorch issues 197829/198031's shape: an operand that views the mutated input."""

    def aliased_operand(x):
        y = x.add(x.flip(0))  # flip is a copy; x[::-1] as a view would alias x
        x.copy_(y)
        return y.sum()

    def view_operand(x):
        v = x.t()
        y = x.add(v)  # v reads x's elements in another order
        x.copy_(y)
        return x.sum()

    for fn in (aliased_operand, view_operand):
        args = (torch.arange(9.0).reshape(3, 3),)
        gm, _ = _compiled(fn, args, functionalize=True)
        assert_same_results(fn, args, gm)


def test_an_input_viewed_by_another_input_as_another_dtype_is_not_written_early() -> None:
    """Random pipelines seed 2316: `x1 = x0.view(torch.int32)` passed beside `x0`. The pass
    read the two as separate memory (each input's meta copy had its own storage when the
    dtypes differed), so it computed `abs` in x1's memory, and `x0 * 2` read the result."""

    def f(x0, x1):
        x1.abs_()
        return x0 * 2

    x0 = torch.tensor([-1.5, 2.0, -3.0])
    args = (x0, x0.view(torch.int32))
    gm = make_fx(torch.func.functionalize(f))(*args)
    want = gm(*[a.clone() for a in _shared_clone(args)])
    decisions = {
        d.node: d for d in fxinplace.reinplace_report(gm, *args, policy="compile", check=True).decisions
    }
    assert decisions["abs_1"].action == "keep", gm.code
    got = gm(*_shared_clone(args))
    assert torch.equal(got, want), gm.code


def _shared_clone(args):
    """Fresh copies of (x0, x0.view(int32)) that still share memory."""
    x0 = args[0].clone()
    return (x0, x0.view(torch.int32))


def test_a_write_into_the_gaps_of_a_strided_input_is_not_made_in_place() -> None:
    """Random pipelines seeds 642 and 1129: as_strided of a strided input reaches storage
    between its elements. torch.func.functionalize writes back only the input's elements;
    written in place, the as_strided_scatter would also change the storage in between."""

    def f(x):
        x.as_strided((2,), (1,), x.storage_offset()).mul_(2)
        return x + 1

    def args():
        return (torch.arange(6.0)[::2],)

    gm = make_fx(torch.func.functionalize(f))(*args())
    base = args()[0]._base
    want_base = base.clone()
    want = gm(want_base[::2])
    report = fxinplace.reinplace_report(gm, *args(), policy="compile", check=True)
    # The scatter's view reaches past its self (the input's elements): refused as such first,
    # before the rule for inputs (writes_outside_input) would refuse it too.
    assert "view_outside_self" in {d.reason_code for d in report.decisions}, gm.code
    got_base = base.clone()
    assert torch.equal(gm(got_base[::2]), want) and torch.equal(got_base, want_base), gm.code


def test_the_checker_catches_wrong_destinations() -> None:
    """The checker accepts `b.foo_(a)` for `foo(a, b)` only for commutative foo, and
    `foo.out(..., out=b)` only where b's old value is not read afterwards."""
    from fxinplace._checker import check_reinplaced, copy_functional

    def sub(a, b):
        x, y = a.sin(), b.cos()
        return x, x - y

    args = (torch.randn(5), torch.randn(5))
    gm = make_fx(sub)(*args)
    functional = copy_functional(gm)
    node = next(n for n in gm.graph.nodes if n.name == "sub")
    node.target, node.args = aten.sub_.Tensor, (node.args[1], node.args[0])  # y.sub_(x) is not x - y
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError, match="node sub"):
        check_reinplaced(functional, gm, *args)

    def read_after(a, b):
        x, z = a.sin(), b.cos()
        return x, aten.threshold_backward(z, x, 0.0), z * 2  # z is read afterwards

    gm = make_fx(read_after)(*args)
    functional = copy_functional(gm)
    node = next(n for n in gm.graph.nodes if n.name == "threshold_backward")
    z = node.args[0]
    node.target, node.kwargs = aten.threshold_backward.grad_input, {"grad_input": z}
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError, match="mul"):
        check_reinplaced(functional, gm, *args)


def test_a_kept_scatter_follows_its_self_into_a_written_back_input() -> None:
    """Random pipelines seed 155342. x has storage offset 1; floor_divide moves into x's memory
    (a written-back input), so the kept slice_scatter of it (its fresh result laid out as its
    self, offset included) now sits at offset 1 too. The planner still took the scatter's
    recorded offset, 0, wrote index_put into it in place, and the later as_strided, which
    addresses storage offsets, read one element off (the checker found it)."""

    def f(x0):
        x0.floor_divide_(2)
        x0.split(2, 0)[0].chunk(2, 0)[-1].squeeze(0)[...] += x0.select(0, 1)
        x0.view(torch.int16)[torch.tensor([-1])] = 0
        t0 = x0.expand(2, *x0.shape).chunk(2, 1)[-1].unfold(1, 2, 3)
        v = torch._neg_view(t0.squeeze(1))[-2:]
        w = v.as_strided((2,), (1,), v.storage_offset())
        w.mul_(w.roll(1, 0))
        return (x0,)

    def make_args(n):
        g = torch.Generator().manual_seed(155342)
        return (torch.randint(-4, 5, (n + 2,), generator=g, dtype=torch.int32)[1:-1],)

    gm = make_fx(fxinplace.functionalize(f), tracing_mode="symbolic")(*make_args(7))
    report = fxinplace.reinplace_report(gm, *make_args(7), policy="compile", memory_plan=True, check=True)
    for n in (7, 11):
        want_args, got_args = make_args(n), make_args(n)
        want, got = f(*want_args), gm(*got_args)
        assert torch.equal(want[0], got[0]) and torch.equal(want_args[0], got_args[0]), report.explain()


def _two_cache_writes(k, v, pos, new_k, new_v):
    k.index_put_((pos,), new_k)
    old_v = v.sum()  # v read between k's write and k's write-back
    v.index_put_((pos,), new_v)
    return (k * 2).sum() + v.sum() + old_v


# (the tensor both caches are views of, k and v): disjoint rows, interleaved columns
# (disjoint elements, overlapping address ranges), and overlapping rows.
_CACHE_LAYOUTS = {
    "rows": lambda: (lambda kv: (kv, kv[0], kv[1]))(torch.arange(64.0).reshape(2, 8, 4)),
    "interleaved": lambda: (lambda kv: (kv, kv[:, ::2], kv[:, 1::2]))(torch.arange(64.0).reshape(8, 8)),
    "overlapping": lambda: (lambda kv: (kv, kv[:8], kv[4:]))(torch.arange(48.0).reshape(12, 4)),
}


@pytest.mark.parametrize("layout", sorted(_CACHE_LAYOUTS))
def test_inputs_that_are_views_of_one_tensor_are_written_in_place_when_disjoint(layout: str) -> None:
    """Two caches laid out as views of one tensor (`k = kv[0]`, `v = kv[1]`, as paged caches
    are, and as torch.compile passes such buffers: two graph inputs sharing a storage), each
    written and written back. Disjoint, each is written in place like a cache of its own;
    overlapping, neither is (k's write would change what v's write reads)."""

    def make_args():
        kv, k, v = _CACHE_LAYOUTS[layout]()
        return kv, (k, v, torch.tensor([1, 3]), torch.full((2, 4), -1.0), torch.full((2, 4), -2.0))

    traced = torch.func.functionalize(_two_cache_writes, remove="mutations_and_views")
    gm = make_fx(traced)(*make_args()[1])
    functional = make_fx(traced)(*make_args()[1])
    report = fxinplace.reinplace_report(gm, *make_args()[1], policy="compile", check=True)
    decisions = {d.node: d for d in report.decisions}
    if layout == "overlapping":
        assert decisions["index_put"].reason_code == "input_shared", gm.code
        assert aten.index_put_.default not in targets(gm), gm.code
    elif layout == "interleaved":
        # Not one memory: what keeps them functional is their strided layout, which the
        # contiguous functional results would not have.
        for name in ("index_put", "index_put_1"):
            assert decisions[name].reason_code == "layout_sensitive_use", gm.code
    else:
        assert decisions["index_put"].action == decisions["index_put_1"].action == "inplace", gm.code
        assert aten.index_put.default not in targets(gm) and aten.copy_.default not in targets(gm), gm.code
    # Oracle: the functional graph on the same aliased inputs (for disjoint views, also eager;
    # for overlapping ones the functional graph itself differs from eager: it reads v once).
    oracles = [functional] if layout == "overlapping" else [functional, _two_cache_writes]
    kv, args = make_args()
    got = gm(*args)
    for oracle in oracles:
        want_kv, want_args = make_args()
        want = oracle(*want_args)
        want = want[0] if isinstance(want, (tuple, list)) else want
        got_value = got[0] if isinstance(got, (tuple, list)) else got
        assert torch.equal(want, got_value), gm.code
        assert torch.equal(want_kv, kv), gm.code


@pytest.mark.parametrize("disjoint_by_contract", [False, True])
def test_inputs_sharing_a_storage_at_symbolic_offsets_need_aot_autograds_contract(
    disjoint_by_contract: bool,
) -> None:
    """Traced symbolically, v = kv[1]'s storage offset is a symbol of its own: nothing in the
    graph shows it past k's last element, so the views stay functional. AOTAutograd passes
    inputs sharing a storage, one of them mutated, separately only when no two overlap
    (`shared_inputs_disjoint=True`, which the compile backend and the Inductor hook set):
    then each is written in place."""

    def make_args():
        kv = torch.arange(64.0).reshape(2, 8, 4)
        return kv, (kv[0], kv[1], torch.tensor([1, 3]), torch.full((2, 4), -1.0), torch.full((2, 4), -2.0))

    traced = torch.func.functionalize(_two_cache_writes, remove="mutations_and_views")
    gm = make_fx(traced, tracing_mode="symbolic")(*make_args()[1])
    report = fxinplace.reinplace_report(
        gm, *make_args()[1], policy="compile", check=True, shared_inputs_disjoint=disjoint_by_contract
    )
    decisions = {d.node: d for d in report.decisions}
    if disjoint_by_contract:
        assert decisions["index_put"].action == decisions["index_put_1"].action == "inplace", gm.code
        assert aten.copy_.default not in targets(gm), gm.code
    else:
        assert decisions["index_put_1"].reason_code == "input_shared", gm.code
    kv, args = make_args()
    got = gm(*args)
    want_kv, want_args = make_args()
    want = _two_cache_writes(*want_args)
    assert torch.equal(want, got[0] if isinstance(got, (tuple, list)) else got), gm.code
    assert torch.equal(want_kv, kv), gm.code
