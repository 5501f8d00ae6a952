"""auto_functionalized (v1): the node becomes a direct call of its custom op, on each
written argument that nothing reads afterwards, and on an explicit clone of the others.

Graphs come from torch's own functionalization with
`torch._inductor.config.enable_auto_functionalized_v2 = False` (what AOTAutograd emits
then), or from make_fx of functions calling the higher-order op themselves. Every test
runs the re-inplaced graph against eager execution (outputs and input mutations) and
against the graph before the pass, and has `check=True` prove the rewrite.
"""

from __future__ import annotations

import contextlib
import operator

import pytest
import torch
import torch._inductor.config as inductor_config
from test_reinplace_auto_functionalized_random import (
    RANDOM_COUNT,
    _random_program,
    make_random_args,
    reinplace_random_program,
)

import fxinplace
import fxinplace.compile
from fxinplace import ReinplaceInputError
from fxinplace._checker import copy_functional
from fxinplace._reinplace import run_reinplace
from fxinplace.testing.harness.afv2 import (
    ADD_ONE,
    AFV2,
    SCALE_RET,
    TWO,
    _assert_same,
    _clone_args,
    add_one_,
    aten,
    check_eager,
    count,
    decision,
    list_,
    scale_ret_,
    trace,
    trace_direct,
    two_,
)

AFV1 = torch.ops.higher_order.auto_functionalized


@torch.library.custom_op("fxafv1test::mixed_", mutates_args={"x", "ys"})
def mixed_(x: torch.Tensor, ys: list[torch.Tensor]) -> None:
    x.add_(1)
    for y in ys:
        y.mul_(2)


MIXED = torch.ops.fxafv1test.mixed_.default

CALLS: list[int] = []


@torch.library.custom_op("fxafv1test::counted_", mutates_args={"x"})
def counted_(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    CALLS.append(1)
    x.add_(w)
    return x * 2


@counted_.register_fake
def _(x, w):
    return torch.empty_like(x)


COUNTED = torch.ops.fxafv1test.counted_.default

# A custom in-place op (returns its mutated argument): v1 clones it and returns the clone twice.
_lib = torch.library.Library("fxafv1test", "FRAGMENT")
_lib.define("inc_(Tensor(a!) x) -> Tensor(a!)", tags=(torch.Tag.inplace,))
_lib.impl("inc_", lambda x: x.add_(1), "CompositeExplicitAutograd")
INC = torch.ops.fxafv1test.inc_.default


# ----------------------------------------------------------------------------
# Helpers


@contextlib.contextmanager
def _v1():
    old = inductor_config.enable_auto_functionalized_v2
    inductor_config.enable_auto_functionalized_v2 = False
    try:
        yield
    finally:
        inductor_config.enable_auto_functionalized_v2 = old


def trace_v1(fn, *args, copy_back=False):
    """Functionalized with v1 (as AOTAutograd emits it with v2 turned off)."""
    with _v1():
        gm = trace(fn, *args, copy_back=copy_back)
    assert count(gm, AFV1) >= 1 and count(gm, AFV2) == 0, gm.graph
    return gm


def run_pass(fn, gm, args, *, policy="stock", inputs_mutated=True):
    """Re-inplace with check=True; the result equals eager and the graph before the pass."""
    functional = copy_functional(gm)
    report = fxinplace.reinplace_report(gm, *args, check=True, policy=policy)
    check_eager(fn, gm, args, inputs_mutated=inputs_mutated)
    before, after = _clone_args(args), _clone_args(args)
    _assert_same(gm(*after), functional(*before))
    _assert_same(after, before)
    return report


def calls(gm, op):
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is op]


def call_after_pass(fn, gm, x, op):
    """run_pass on gm (traced from fn) with the one input x; returns the one direct call of op
    left in gm."""
    run_pass(fn, gm, [x])
    [call] = calls(gm, op)
    return call


def arg_of(call, name):
    """The value passed for schema argument `name` of a direct op call."""
    schema = call.target._schema
    i = [a.name for a in schema.arguments].index(name)
    return call.args[i] if i < len(call.args) else call.kwargs[name]


# ----------------------------------------------------------------------------
# Written arguments nobody reads afterwards: a direct call, no clone


def test_intermediate_becomes_a_direct_call():
    def f(x):
        y = x + 1
        add_one_(y)
        return y * 3

    x = torch.arange(4.0)
    gm = trace_v1(f, x)
    [node] = calls(gm, AFV1)
    report = run_pass(f, gm, [x])

    assert count(gm, AFV1) == 0
    assert count(gm, aten.clone.default) == 0
    [call] = calls(gm, ADD_ONE)
    [add] = calls(gm, aten.add.Tensor)
    assert arg_of(call, "x") is add
    [mul] = calls(gm, aten.mul.Tensor) + calls(gm, aten.mul_.Tensor)
    assert mul.args[0] is add  # the new value's user reads the argument
    assert call.meta["val"] is None
    d = decision(report, node.name)
    assert (d.action, d.reason_code) == ("inplace", "done")


def test_op_returning_a_value():
    def f(x, w):
        c = x + 1
        r = scale_ret_(c, w)
        return c * 2, r + 1

    x, w = torch.arange(4.0), torch.full((4,), 3.0)
    gm = trace_v1(f, x, w)
    run_pass(f, gm, [x, w])

    assert count(gm, AFV1) == 0 and count(gm, aten.clone.default) == 0
    [call] = calls(gm, SCALE_RET)
    adds = calls(gm, aten.add.Tensor) + calls(gm, aten.add_.Tensor)
    add_one = [n for n in adds if n.args[1] == 1 and n.args[0] is call]
    assert len(add_one) == 1  # the op's output is read from the call
    assert isinstance(call.meta["val"], torch.Tensor) and call.meta["val"].shape == (4,)
    assert arg_of(call, "x").target is aten.add.Tensor


def test_written_view_of_an_intermediate():
    def f(x):
        y = x + 1
        add_one_(y[0])
        return y * 2

    x = torch.arange(6.0).reshape(2, 3)
    gm = trace_v1(f, x)
    assert count(gm, aten.select_scatter.default) == 1
    report = run_pass(f, gm, [x])

    assert count(gm, AFV1) == 0
    assert count(gm, aten.clone.default) == 0
    assert count(gm, aten.select_scatter.default) == 0
    [call] = calls(gm, ADD_ONE)
    view = arg_of(call, "x")
    assert view.target is aten.select.int and view.args[0].target is aten.add.Tensor
    assert report.num_scatters_removed == 1


def test_two_written_arguments_both_in_place():
    def f(x):
        a = x + 1
        b = x * 2
        two_(a, b, 0.5)
        return a - b

    x = torch.arange(3.0)
    gm = trace_v1(f, x)
    call = call_after_pass(f, gm, x, TWO)
    assert count(gm, AFV1) == 0 and count(gm, aten.clone.default) == 0
    assert arg_of(call, "x").target is aten.add.Tensor
    assert arg_of(call, "y").target is aten.mul.Tensor


# ----------------------------------------------------------------------------
# Graph inputs


@pytest.mark.parametrize("policy", ["stock", "compile"])
def test_input_written_back_is_written_in_place(policy):
    def f(x):
        add_one_(x)
        return x * 2

    x = torch.arange(3.0)
    gm = trace_v1(f, x, copy_back=True)
    assert count(gm, aten.copy_.default) == 1
    run_pass(f, gm, [x], policy=policy)

    assert count(gm, AFV1) == 0 and count(gm, aten.clone.default) == 0
    assert count(gm, aten.copy_.default) == 0  # the write-back copied x onto itself
    [call] = calls(gm, ADD_ONE)
    assert arg_of(call, "x").op == "placeholder"


def test_input_without_write_back_stays_cloned():
    def f(x):
        add_one_(x)
        return x * 2

    x = torch.arange(3.0)
    gm = trace_v1(f, x)  # no copy_ back: the graph must leave x as it was
    [node] = calls(gm, AFV1)
    report = run_pass(f, gm, [x], inputs_mutated=False)
    assert decision(report, node.name).reason_code == "input_not_written_back"
    assert count(gm, AFV1) == 1  # nothing to remove: left as it is


# ----------------------------------------------------------------------------
# Old values read later: the clone stays, explicit


def test_intermediate_read_later_keeps_its_clone():
    def f(x):
        c = x + 1
        out = AFV1(ADD_ONE, x=c)
        return out[1] * 2 + c

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    [node] = calls(gm, AFV1)
    report = run_pass(f, gm, [x])
    assert decision(report, node.name).reason_code == "used_later"
    assert count(gm, AFV1) == 1 and count(gm, aten.clone.default) == 0  # left as it is


def test_partial_clones_only_the_argument_read_later():
    def f(x):
        a = x + 1
        b = x * 2
        out = AFV1(TWO, x=a, y=b, alpha=1.0)
        return out[1], out[2], a * 3

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    [node] = calls(gm, AFV1)
    report = run_pass(f, gm, [x])

    assert count(gm, AFV1) == 0
    [clone] = calls(gm, aten.clone.default)
    [call] = calls(gm, TWO)
    [add] = calls(gm, aten.add.Tensor)
    [mul] = [n for n in calls(gm, aten.mul.Tensor) if n.args[1] == 2]
    assert clone.args[0] is add and arg_of(call, "x") is clone
    assert arg_of(call, "y") is mul
    assert clone.meta["val"].shape == (3,)
    output = next(iter(reversed(gm.graph.nodes)))
    assert list(output.args[0][:2]) == [clone, mul]  # the new values: the clone, and b itself
    d = decision(report, node.name)
    assert d.action == "partial_inplace" and d.reason_code == "used_later"
    assert "base 0 (add)" in d.reason and "bases [1] written in place" in d.reason


def test_clone_of_a_non_dense_view_keeps_its_strides():
    # clone_preserve_strides keeps a column's stride and offset; aten.clone would not.
    def f(x):
        y = x + 1
        b = x[0] * 2
        out = AFV1(TWO, x=y[:, 1], y=b, alpha=1.0)
        return out[1].as_strided((2,), (3,), 1) * 2, out[2], y

    x = torch.arange(6.0).reshape(2, 3)
    gm = trace_direct(f, x)
    call = call_after_pass(f, gm, x, TWO)
    assert count(gm, AFV1) == 0
    assert arg_of(call, "y").target is aten.mul.Tensor
    cloned = arg_of(call, "x")
    assert cloned.target is aten.as_strided.default
    assert cloned.meta["val"].stride() == (3,) and cloned.meta["val"].storage_offset() == 1
    [scatter] = calls(gm, aten.as_strided_scatter.default)
    assert cloned.args[0] is scatter and scatter.args[1].target is aten.select.int
    assert count(gm, aten.clone.default) == 0


def test_clone_of_a_transposed_argument_keeps_its_strides():
    def f(x):
        c = x.t() + 1
        d = x * 2
        out = AFV1(TWO, x=c, y=d, alpha=1.0)
        return out[1], out[2], c

    x = torch.arange(6.0).reshape(2, 3)
    cloned = arg_of(call_after_pass(f, trace_direct(f, x), x, TWO), "x")
    assert cloned.target is aten.permute.default and cloned.args[0].target is aten.clone.default
    assert cloned.meta["val"].stride() == (1, 3)


def test_written_list_stays_cloned_beside_an_argument_in_place():
    def f(x):
        a = x + 1
        b = x * 2
        c = x - 1
        mixed_(a, [b, c])
        return a + b + c

    x = torch.arange(3.0)
    gm = trace_v1(f, x)
    call = call_after_pass(f, gm, x, MIXED)
    assert count(gm, AFV1) == 0
    assert arg_of(call, "x").target is aten.add.Tensor
    ys = arg_of(call, "ys")
    assert [y.target for y in ys] == [aten.clone.default] * 2
    assert count(gm, operator.getitem) == 0


def test_written_list_alone_is_left_as_it_is():
    def f(x):
        a = x + 1
        b = x * 2
        list_([a, b])
        return a + b

    x = torch.arange(3.0)
    gm = trace_v1(f, x)
    run_pass(f, gm, [x])
    assert count(gm, AFV1) == 1


# ----------------------------------------------------------------------------
# Nodes a direct call cannot replace, and nodes other passes left


def test_node_read_whole_keeps_the_node_without_the_clone():
    def f(x):
        c = x + 1
        out = AFV1(ADD_ONE, x=c)
        return out[1] * 2

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    [node] = calls(gm, AFV1)
    output = next(iter(reversed(gm.graph.nodes)))
    output.args = ((output.args[0], node),)  # the output returns the node's whole value too
    gm.recompile()
    functional = copy_functional(gm)
    fxinplace.reinplace(gm, x, check=True)

    [node] = calls(gm, AFV1)
    assert node.kwargs["_only_clone_these_tensors"] == ()
    assert [n.args[1] for n in calls(gm, operator.getitem)] == [0]  # x's new value: c itself
    got, expected = gm(x.clone()), functional(x.clone())
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1][1], expected[1][1])


def test_partial_node_from_elsewhere_is_understood():
    # Argument x already mutated in place (as Inductor's re-inplacing leaves it).
    def f(x):
        a = x + 1
        b = x * 2
        out = AFV1(TWO, x=a, y=b, alpha=1.0, _only_clone_these_tensors=("y",))
        return out[1] - out[2]

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    run_pass(f, gm, [x])
    assert count(gm, AFV1) == 0 and count(gm, aten.clone.default) == 0


def test_op_returning_its_argument_is_left_alone():
    def f(x):
        c = x + 1
        out = AFV1(INC, x=c)
        return out[0] * 2, out[1] + c

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    run_pass(f, gm, [x])
    assert count(gm, AFV1) == 1


# ----------------------------------------------------------------------------
# Metadata, validation, the compile backend


@pytest.mark.parametrize("metadata", ["auto", "fake"])
def test_metadata_does_not_run_the_op(metadata):
    def f(x, w):
        c = x + 1
        r = counted_(c, w)
        return c, r

    x, w = torch.arange(4.0), torch.full((4,), 2.0)
    gm = trace_v1(f, x, w)
    functional = copy_functional(gm)
    CALLS.clear()
    report = run_reinplace(gm, (x, w), metadata=metadata)
    assert CALLS == []
    assert report.metadata_path == ("fake" if metadata == "fake" else "meta")
    assert count(gm, AFV1) == 0 and count(gm, aten.clone.default) == 0
    [call] = calls(gm, COUNTED)
    assert isinstance(call.meta["val"], torch.Tensor) and call.meta["val"].shape == (4,)
    fxinplace.check_reinplaced(functional, gm, x, w)
    check_eager(f, gm, [x, w], inputs_mutated=False)


def test_malformed_node_is_rejected_by_name():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    node = g.call_function(AFV1, (ADD_ONE,), {})  # no x
    g.output(g.call_function(operator.getitem, (node, 1)))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    with pytest.raises(ReinplaceInputError, match="'auto_functionalized'.*missing the written argument 'x'"):
        fxinplace.reinplace(gm, torch.ones(2), check=True)
    del x


def test_v1_of_a_builtin_is_rejected():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(AFV1, (aten.add.Tensor,), {"self": x}))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    with pytest.raises(ReinplaceInputError, match="cannot be auto-functionalized"):
        fxinplace.reinplace(gm, torch.ones(2), check=True)


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_backend_with_v1(monkeypatch, dynamic):
    seen = []
    real = fxinplace.compile.reinplace_report

    def recording(gm, *args, **kwargs):
        seen.append(count(gm, AFV1))
        report = real(gm, *args, **kwargs)
        seen.append(count(gm, AFV1))
        return report

    monkeypatch.setattr(fxinplace.compile, "reinplace_report", recording)

    def f(x, w):
        y = x + 1
        add_one_(y[0])
        r = scale_ret_(y, w)
        two_(x, y, 2.0)
        return y * 3, r

    x, w = torch.arange(6.0).reshape(2, 3), torch.full((3,), 2.0)
    x_eager = x.clone()
    # check=True proves the static graph (the checker does not run symbolic example inputs).
    backend = fxinplace.compile.make_backend(check=not dynamic)
    # (Not monkeypatch: undoing it deletes the config entry.)
    old = inductor_config.enable_auto_functionalized_v2
    with _v1():
        torch._dynamo.reset()
        try:
            got = torch.compile(f, backend=backend, dynamic=dynamic)(x, w)
        finally:
            torch._dynamo.reset()
    assert inductor_config.enable_auto_functionalized_v2 == old  # restored
    expected = f(x_eager, w)
    _assert_same(got, expected)
    _assert_same(x, x_eager)
    assert seen == [3, 0]  # three v1 nodes went in, none came out


# ----------------------------------------------------------------------------
# Random programs (those of test_reinplace_auto_functionalized_random.py), traced with v1


@pytest.mark.parametrize("seed", range(RANDOM_COUNT))
def test_random_program_with_v1(seed):
    fn, text = _random_program(seed)
    for copy_back in (True, False):
        with _v1():
            gm = trace(fn, *make_random_args(), copy_back=copy_back)
        before = count(gm, AFV1)
        what = f"seed {seed} copy_back={copy_back}: {text}"
        reinplace_random_program(fn, gm, what, inputs_mutated=copy_back)
        assert count(gm, AFV1) <= before
