"""auto_functionalized_v2 (custom mutable ops): the clones of bases nobody reads afterwards go away.

Every test runs the re-inplaced graph against eager execution: outputs and input
mutations (helpers and the custom ops in fxinplace.testing.harness.afv2).
"""

from __future__ import annotations

import operator

import pytest
import torch
from corpus.afv2_programs import add_one_to_a_slice_of_a_clone
from torch.fx import Graph, GraphModule
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace import ReinplaceInputError
from fxinplace.testing.harness import checked
from fxinplace.testing.harness.afv2 import (
    ADD_ONE,
    AFV2,
    LIST,
    SCALE_RET,
    TWO,
    add_one_,
    afv2_nodes,
    aten,
    check_eager,
    clones_every_base,
    count,
    decision,
    list_,
    maybe_,
    scale_ret_,
    trace,
    trace_direct,
    two_,
)


def _reinplace_all(f, gm, *args):
    """Checked re-inplacing on args takes every auto_functionalized_v2 node out,
    and gm still runs as eager f does."""
    fxinplace.reinplace(gm, *args, check=True)
    assert count(gm, AFV2) == 0
    check_eager(f, gm, list(args))


def _reinplace_all_with_fake_metadata(f, gm, *args):
    """As _reinplace_all, the metadata coming from fake tensors."""
    report = checked.reinplace_report(gm, *args, metadata="fake")
    assert report.metadata_path == "fake"
    assert count(gm, AFV2) == 0
    check_eager(f, gm, list(args))


def _report_keeping_every_clone(gm, *args):
    """Checked reinplace_report on args; the one auto_functionalized_v2 node left
    still clones every base. Returns the report and that node."""
    report = fxinplace.reinplace_report(gm, *args, check=True)
    [node] = afv2_nodes(gm)
    assert clones_every_base(node)
    return report, node


def _reinplace_keeping_every_clone(f, x):
    """Checked re-inplacing of trace_direct(f, x) leaves its one auto_functionalized_v2
    node cloning every base, and the graph still runs as eager f does."""
    gm = trace_direct(f, x)
    fxinplace.reinplace(gm, x, check=True)
    [node] = afv2_nodes(gm)
    assert clones_every_base(node)
    check_eager(f, gm, [x])


def _only_call(gm, target):
    [call] = [n for n in gm.graph.nodes if n.target is target]
    return call


def _old_base_read_later(x):
    c = x + 1
    out = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[c])
    return out[1] * 2 + c


# ----------------------------------------------------------------------------
# (a) clone, op on a slice of the clone, return the clone


def test_slice_of_clone_becomes_a_direct_call():
    f = add_one_to_a_slice_of_a_clone
    x = torch.arange(4.0)
    gm = trace(f, x)
    assert count(gm, AFV2) == 1 and count(gm, aten.clone.default) == 1
    [node] = afv2_nodes(gm)
    assert node.kwargs["_x_slice_start"] == 1
    report = fxinplace.reinplace_report(gm, x, check=True)

    assert count(gm, aten.clone.default) == 1
    assert count(gm, AFV2) == 0
    view = _only_call(gm, ADD_ONE).args[0]
    assert view.target is aten.slice.Tensor
    assert view.args[0].target is aten.clone.default
    assert list(view.args[1:]) == [0, 1, 4]
    assert view.meta["val"].shape == (3,)
    d = decision(report, node.name)
    assert (d.action, d.reason_code) == ("inplace", "done")
    assert report.num_reinplaced >= 1
    check_eager(f, gm, [x])


def test_whole_base_and_alias_encodings():
    def f(x):
        c = x * 2
        add_one_(c)
        v = c.view(2, 2)
        add_one_(v)
        return c

    x = torch.arange(4.0)
    gm = trace(f, x)
    nodes = afv2_nodes(gm)
    assert len(nodes) == 2
    fxinplace.reinplace(gm, x, check=True)
    assert count(gm, AFV2) == 0
    assert count(gm, aten.clone.default) == 0
    calls = [n for n in gm.graph.nodes if n.target is ADD_ONE]
    assert len(calls) == 2
    assert calls[0].args[0].target is aten.mul.Tensor
    check_eager(f, gm, [x])


# ----------------------------------------------------------------------------
# (b) the old base is read after the op


def test_old_base_read_later_stays_cloned():
    x = torch.arange(3.0)
    gm = trace_direct(_old_base_read_later, x)
    [node] = afv2_nodes(gm)
    report, node = _report_keeping_every_clone(gm, x)
    d = decision(report, node.name)
    assert d.action == "keep" and d.reason_code == "used_later"
    assert d.culprit is not None
    check_eager(_old_base_read_later, gm, [x])


def test_old_base_read_through_a_view_later_stays_cloned():
    def f(x):
        c = x + 1
        v = c[1:]
        out = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[c])
        return out[1] + 0, v * 3

    _reinplace_keeping_every_clone(f, torch.arange(3.0))


def test_dead_view_of_old_base_does_not_block():
    def f(x):
        c = x + 1
        out = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[c])
        c[1:]  # a view nobody reads
        return out[1] * 2

    x = torch.arange(3.0)
    _reinplace_all(f, trace_direct(f, x), x)


# ----------------------------------------------------------------------------
# (c) the base is a graph input


def test_input_base_without_copy_back_stays_cloned():
    def f(x):
        add_one_(x[1:])
        return x * 2

    x = torch.arange(4.0)
    gm = trace(f, x)  # dispatch_functionalize drops the input mutation
    report, node = _report_keeping_every_clone(gm, x)
    d = decision(report, node.name)
    assert (d.action, d.reason_code) == ("keep", "input_not_written_back")
    # Outputs as eager; the graph (like its functional original) leaves x alone.
    check_eager(f, gm, [x], inputs_mutated=False)


def test_input_base_with_copy_back_is_mutated_in_place():
    def f(x):
        add_one_(x[1:])
        return x * 2

    x = torch.arange(4.0)
    gm = trace(f, x, copy_back=True)
    assert count(gm, aten.copy_.default) == 1
    check_eager(f, gm, [x])
    gm = trace(f, x, copy_back=True)
    report = fxinplace.reinplace_report(gm, x, check=True)
    assert count(gm, AFV2) == 0
    assert count(gm, aten.copy_.default) == 0
    call = _only_call(gm, ADD_ONE)
    assert call.args[0].target is aten.slice.Tensor and call.args[0].args[0].op == "placeholder"
    assert any(d.action == "remove_copy" for d in report.decisions)
    check_eager(f, gm, [x])


def test_input_read_before_copy_back_stays_cloned():
    def f(x):
        c = x + 0
        out = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[x])
        y = x * 2  # reads the old input value
        x.copy_(out[1])
        return y + c

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    report, node = _report_keeping_every_clone(gm, x)
    assert decision(report, node.name).reason_code == "used_later"
    assert count(gm, aten.copy_.default) == 1
    check_eager(f, gm, [x])


def test_new_input_value_used_after_copy_back_stays_cloned():
    def f(x):
        out = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[x])
        new = out[1]
        x.copy_(new)
        # Returning the new value itself would make the output alias the input.
        return new

    _reinplace_keeping_every_clone(f, torch.arange(3.0))


def test_aliased_sample_args_keep_the_clone():
    def f(x, y):
        out = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[x])
        s = y * 1  # y is x in the sample args: reads the old value
        x.copy_(out[1])
        return s

    x = torch.arange(3.0)
    gm = trace_direct(f, x, x[:])
    assert len(gm.graph.find_nodes(op="placeholder")) == 2
    base = torch.arange(3.0)
    report, node = _report_keeping_every_clone(gm, base, base[:])
    assert "sharing storage with another input" in decision(report, node.name).reason
    a = torch.arange(3.0)
    assert torch.equal(gm(a, a[:]), torch.arange(3.0))
    assert torch.equal(a, torch.arange(3.0) + 1)


def test_input_after_its_copy_back_is_an_input_again():
    # x is mutated in place ahead of its copy_ back; the second node, after
    # that copy_, works on x again (the program does not mutate it this time).
    def f(x):
        g1 = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[x])[1]
        x.copy_(g1)
        g2 = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[x])[1]
        return g2 * 1

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    # make_fx has the second node read the copy_'s result; read the input itself.
    [copy] = gm.graph.find_nodes(op="call_function", target=aten.copy_.default)
    copy.replace_all_uses_with(copy.args[0])
    gm.recompile()
    report = fxinplace.reinplace_report(gm, x, check=True)
    actions = [d.action for d in report.decisions if d.node.startswith("auto_functionalized_v2")]
    assert actions == ["inplace", "keep"]
    assert count(gm, aten.copy_.default) == 0
    check_eager(f, gm, [x])


# ----------------------------------------------------------------------------
# (d) as_strided encoding


def test_as_strided_encoding_transpose():
    def f(x):
        c = x.clone()
        add_one_(c.t())
        return c

    x = torch.arange(6.0).reshape(2, 3)
    gm = trace(f, x)
    [node] = afv2_nodes(gm)
    assert "_x_storage_offset" in node.kwargs
    fxinplace.reinplace(gm, x, check=True)
    assert count(gm, AFV2) == 0 and count(gm, aten.clone.default) == 1
    call = _only_call(gm, ADD_ONE)
    assert call.args[0].target is aten.as_strided.default
    assert call.args[0].meta["val"].stride() == (1, 3)
    check_eager(f, gm, [x])


def test_as_strided_encoding_with_offset():
    def f(x):
        c = x.clone()
        add_one_(c[1:, ::2])
        scale_ret_(c[0], c[2].clone())
        return c

    x = torch.arange(12.0).reshape(3, 4)
    _reinplace_all(f, trace(f, x), x)


# ----------------------------------------------------------------------------
# (e) two bases: one in place, one still cloned


def test_two_bases_one_cloned():
    def f(x):
        a = x + 1
        b = x * 2
        out = AFV2(TWO, alpha=3.0, _x_base_index=0, _y_base_index=1, _all_bases=[a, b])
        return out[1] + out[2] + b

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    report = fxinplace.reinplace_report(gm, x, check=True)
    [node] = afv2_nodes(gm)
    assert node.kwargs["_only_clone_these_bases"] == (1,)
    d = decision(report, node.name)
    assert d.action == "partial_inplace" and d.reason_code == "used_later"
    # The new value of the in-place base is the base itself now.
    assert not any(u.target is operator.getitem and u.args[1] == 1 for u in node.users)
    check_eager(f, gm, [x])


def test_two_bases_both_in_place():
    def f(x):
        c = x.clone()
        d = x * 2
        two_(c[1:], d, 0.5)
        return c + d

    x = torch.arange(3.0)
    gm = trace(f, x)
    _reinplace_all(f, gm, x)
    assert _only_call(gm, TWO).args[2] == 0.5


def test_two_views_of_one_base():
    def f(x):
        c = x.clone()
        two_(c[:2], c[2:], 1.0)
        return c

    x = torch.arange(4.0)
    gm = trace(f, x)
    [node] = afv2_nodes(gm)
    assert len(node.kwargs["_all_bases"]) == 1
    _reinplace_all(f, gm, x)


def test_two_bases_sharing_storage_only_one_in_place():
    def f(x):
        a = x + 1
        v = a[1:]
        out = AFV2(TWO, alpha=1.0, _x_base_index=0, _y_base_index=1, _all_bases=[a, v])
        return out[1], out[2]

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    report = fxinplace.reinplace_report(gm, x, check=True)
    [node] = afv2_nodes(gm)
    assert node.kwargs["_only_clone_these_bases"] == (1,)
    assert decision(report, node.name).reason_code == "operand_aliases_self"
    check_eager(f, gm, [x])


def test_base_aliasing_a_read_argument_stays_cloned():
    def f(x):
        c = x + 1
        out = AFV2(SCALE_RET, other=c, _x_base_index=0, _all_bases=[c])
        return out[0], out[1]

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    report, node = _report_keeping_every_clone(gm, x)
    assert decision(report, node.name).reason_code == "self_repeated"  # the base is also a read argument
    check_eager(f, gm, [x])


# ----------------------------------------------------------------------------
# (f) the op also returns a tensor


def test_op_returning_a_tensor():
    def f(x, w):
        c = x.clone()
        r = scale_ret_(c[1], w)
        return c, r * 2

    x, w = torch.arange(6.0).reshape(2, 3), torch.tensor([1.0, 2.0, 3.0])
    gm = trace(f, x, w)
    _reinplace_all(f, gm, x, w)
    assert count(gm, aten.clone.default) == 1
    assert _only_call(gm, SCALE_RET).meta["val"].shape == (3,)


def test_tensor_list_and_none_arguments():
    def f(x, y):
        c = x.clone()
        list_([c[0], c[1, 1:]])
        maybe_(None, y)
        d = y * 1
        maybe_(d, y)
        return c, d

    x, y = torch.arange(6.0).reshape(2, 3), torch.ones(3)
    gm = trace(f, x, y)
    assert count(gm, AFV2) == 3
    _reinplace_all(f, gm, x, y)
    call = _only_call(gm, LIST)
    assert isinstance(call.args[0], list) and len(call.args[0]) == 2


# ----------------------------------------------------------------------------
# (g) together with ordinary functional ops the native pass re-inplaces


def test_with_native_reinplacing():
    def f(x):
        a = x * 2
        b = a + 1  # re-inplaced into a
        add_one_(b[:2])
        c = b.relu()  # reads the new value: re-inplaced into it
        c = c + 1
        add_one_(c)
        return c.sum(), x + 1

    x = torch.arange(-2.0, 2.0)
    gm = trace(f, x)
    report = fxinplace.reinplace_report(gm, x, check=True)
    assert count(gm, AFV2) == 0
    assert count(gm, aten.clone.default) == 0
    assert count(gm, aten.add_.Tensor) == 2
    assert report.num_reinplaced >= 4
    check_eager(f, gm, [x])


def test_mixed_graph_with_input_mutation():
    def f(x, y):
        t = y.sin()
        add_one_(x)
        y.mul_(2)
        two_(x[:2], y[1:], 2.0)
        return (t + x).cos(), x * y

    x, y = torch.arange(4.0), torch.arange(4.0) / 3
    gm = trace(f, x, y, copy_back=True)
    check_eager(f, gm, [x, y])
    fxinplace.reinplace(gm, x, y, check=True)
    check_eager(f, gm, [x, y])


def test_chain_of_ops_on_one_clone():
    def f(x):
        c = x.clone()
        for i in range(4):
            add_one_(c[i % 3 :])
            c = c * 1 if i == 2 else c
        return c

    x = torch.arange(5.0)
    gm = trace(f, x)
    _reinplace_all(f, gm, x)
    assert count(gm, aten.clone.default) == 1


def test_new_value_of_an_in_place_base_read_after_a_later_op():
    # The first node mutates c in place, so its new value *is* c; the second must
    # then keep its clone, since that value is read after it.
    def f(x):
        c = x + 1
        g1 = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[c])[1]
        g2 = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[g1])[1]
        return g1 * 10 + g2

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    report, node = _report_keeping_every_clone(gm, x)
    assert node.kwargs["_all_bases"][0].target is aten.add.Tensor
    assert [d.action for d in report.decisions if d.node.startswith("auto_functionalized_v2")] == [
        "inplace",
        "keep",
    ]
    check_eager(f, gm, [x])


def test_op_output_mutated_by_a_later_op():
    def f(x, w):
        c = x.clone()
        r = scale_ret_(c, w)
        add_one_(r[1:])
        return c, r

    x, w = torch.arange(3.0), torch.full((3,), 2.0)
    gm = trace(f, x, w)
    _reinplace_all(f, gm, x, w)
    assert count(gm, aten.clone.default) == 1


# ----------------------------------------------------------------------------
# Metadata paths, idempotence, validation


def test_fake_metadata_path():
    def f(x, w):
        c = x.clone()
        r = scale_ret_(c[1], w)
        add_one_(c.t())
        return c, r

    x, w = torch.arange(6.0).reshape(2, 3), torch.ones(3)
    _reinplace_all_with_fake_metadata(f, trace(f, x, w), x, w)


def test_metadata_from_the_fake_kernel():
    # The metadata comes from running the operator's fake kernel on the sample
    # args instead of the recorded values.
    def f(x, w):
        c = x.clone()
        r = scale_ret_(c, w)
        return c, r

    x, w = torch.arange(4.0), torch.full((4,), 2.0)
    _reinplace_all_with_fake_metadata(f, trace(f, torch.zeros(4), torch.ones(4)), x, w)


def test_sample_args_of_other_shapes_are_refused():
    gm = trace(lambda x, w: scale_ret_(x.clone(), w), torch.zeros(3), torch.ones(3))
    with pytest.raises(fxinplace.ReinplaceInputError, match="size 4 instead of 3"):
        fxinplace.reinplace(gm, torch.arange(4.0), torch.full((4,), 2.0), check=True)


def test_partial_node_from_elsewhere_is_understood():
    # A node whose base 0 is already mutated in place (as Inductor would leave it).
    def f(x):
        a = x + 1
        b = x * 2
        out = AFV2(
            TWO, alpha=1.0, _x_base_index=0, _y_base_index=1, _all_bases=[a, b], _only_clone_these_bases=(1,)
        )
        return out[1] - out[2]

    x = torch.arange(3.0)
    _reinplace_all(f, trace_direct(f, x), x)


def test_partial_node_with_fake_metadata():
    def f(x):
        a = x + 1
        out = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[a], _only_clone_these_bases=(0,))
        return out[1] * 2, a

    gm = trace_direct(f, torch.zeros(5))
    x = torch.arange(5.0)
    report = checked.reinplace_report(gm, x, metadata="fake")
    [node] = afv2_nodes(gm)
    assert clones_every_base(node)
    assert decision(report, node.name).reason_code == "used_later"
    check_eager(f, gm, [x])


def _assert_rejected(output_of, match):
    """A graph of one input x returning output_of(g, x) is refused with match."""
    g = Graph()
    x = g.placeholder("x")
    g.output(output_of(g, x))
    gm = GraphModule(torch.nn.Module(), g)
    with pytest.raises(ReinplaceInputError, match=match):
        fxinplace.reinplace(gm, torch.ones(2), check=True)


def test_other_higher_order_ops_are_still_rejected():
    from torch._higher_order_ops.triton_kernel_wrap import triton_kernel_wrapper_mutation

    def output_of(g, x):
        return g.call_function(triton_kernel_wrapper_mutation, (), {"kernel_idx": 0, "kwargs": {"x": x}})

    _assert_rejected(output_of, "triton_kernel_wrapper_mutation mutates its operands")


def test_malformed_afv2_node_is_rejected_by_name():
    def output_of(g, x):
        node = g.call_function(AFV2, (ADD_ONE,), {"_all_bases": [x]})  # no _x_base_index
        return g.call_function(operator.getitem, (node, 1))

    _assert_rejected(output_of, "'auto_functionalized_v2'.*_x_base_index")


def test_afv2_of_a_builtin_is_rejected():
    _assert_rejected(
        lambda g, x: g.call_function(AFV2, (aten.add_.Tensor,), {"_all_bases": [x]}),
        "cannot be auto-functionalized",
    )


def test_explain_mentions_the_reason():
    x = torch.arange(3.0)
    gm = trace_direct(_old_base_read_later, x)
    text = fxinplace.reinplace_report(gm, x, check=True).explain()
    assert "auto_functionalized_v2: keep: every base still cloned: base 0 (add)" in text


def test_node_that_still_clones_everything_is_left_unchanged_and_retraceable():
    # torch 2.13's fake rule for auto_functionalized_v2 breaks on an explicit
    # _only_clone_these_bases; a node whose bases all stay cloned keeps its
    # original kwargs, so the result can be traced again with fake tensors.
    x = torch.arange(3.0)
    gm = trace_direct(_old_base_read_later, x)
    before = dict(afv2_nodes(gm)[0].kwargs)
    fxinplace.reinplace(gm, x, check=True)
    [node] = afv2_nodes(gm)
    assert dict(node.kwargs) == before
    retraced = make_fx(gm, tracing_mode="fake")(x)
    assert len(afv2_nodes(retraced)) == 1
    check_eager(_old_base_read_later, gm, [x])
