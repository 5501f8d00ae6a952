"""Mutation tests of `fxinplace.check_reinplaced`: correct re-inplaced graphs,
broken by hand, must be rejected with the offending node named; the correct
ones must pass."""

from __future__ import annotations

import operator
import sys

import pytest
import torch
from corpus.afv2_programs import add_one_to_a_slice_of_a_clone
from corpus.reinplace import PROGRAMS
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.reinplace import reinplace as stock_reinplace

import fxinplace
from fxinplace._checker import copy_functional
from fxinplace.testing.harness.afv2 import ADD_ONE, AFV2, add_one_, trace, trace_direct

aten = torch.ops.aten


def _pair(fn, *args, functionalize=torch.func.functionalize):
    """(functional graph, its re-inplaced copy), both checked to start with."""
    gm = make_fx(functionalize(fn))(*args)
    functional = copy_functional(gm)
    fxinplace.reinplace(gm, *args, check=True)
    return functional, gm


def _node(gm, target, k=0):
    found = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is target]
    return found[k]


def _rejected(functional, gm, *args) -> fxinplace.ReinplaceCheckError:
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *args)
    error = info.value
    assert str(error).startswith("fxinplace: rewritten graph: "), str(error)
    assert not error.cannot_check
    return error


def _rejected_once_made(target, new_target, fn, x) -> fxinplace.ReinplaceCheckError:
    """The re-inplaced graph of fn on x, its first `target` node made a `new_target` node,
    is rejected (returns the error)."""
    functional, gm = _pair(fn, x)
    _node(gm, target).target = new_target
    return _rejected(functional, gm, x)


def _two_reads(x):
    a = x.clone()
    b = a + 1  # kept: a is read again by mul
    c = a * 2
    return b, c


def test_a_kept_op_made_inplace_while_self_is_read_later_is_caught():
    error = _rejected_once_made(aten.add.Tensor, aten.add_.Tensor, _two_reads, torch.randn(4))
    assert error.node == "mul" and error.reason == "wrong_value"
    assert error.operand == "self"
    assert "reads self (clone) at element [0], which holds add's value at [0] (written by add)" in str(error)
    assert "the functional graph has the original contents of input x_1 at storage element 0 there" in str(
        error
    )


def _setitem(x, y):
    a = x + 1
    a[1] = y
    return a * 2


def test_a_deleted_copy_of_a_scatter_rewrite_is_caught():
    x, y = torch.randn(3, 4), torch.randn(4)
    functional, gm = _pair(_setitem, x, y)
    copy = _node(gm, aten.copy_.default)  # select_scatter -> select + copy_
    gm.graph.erase_node(copy)
    error = _rejected(functional, gm, x, y)
    assert error.node == "mul" and error.reason == "wrong_value"
    assert "at element [1, 0], which holds add's value at [1, 0]" in str(error)
    assert "the functional graph has the original contents of input y_1 at storage element 0 there" in str(
        error
    )


def _mutates_input(x):
    x.mul_(2)
    return x + 1


def test_a_deleted_write_back_is_caught_at_the_end():
    x = torch.randn(3)
    functional, gm = _pair(_mutates_input, x)
    gm.graph.erase_node(_node(gm, aten.copy_.default))
    error = _rejected(functional, gm, x)
    assert error.node is None and error.reason == "final_input"
    assert "storage element 0 of graph input x_1 holds the original contents of input x_1" in str(error)


def test_an_op_made_to_write_an_input_is_caught():
    # The final values would even be right.
    error = _rejected_once_made(aten.mul.Tensor, aten.mul_.Tensor, _mutates_input, torch.randn(3))
    assert error.node == "mul" and error.reason == "input_written"
    assert "writes graph input x_1 at storage element 0; only functionalization's write-backs" in str(error)


def test_a_module_constant_written_is_caught():
    weight = torch.randn(4)

    def f(x):
        return (weight * 2).relu() + x

    error = _rejected_once_made(aten.mul.Tensor, aten.mul_.Tensor, f, torch.randn(4))
    assert error.node == "mul" and error.reason == "constant_written"


def _transpose_add(x):
    a = x.clone()
    return a + a.t()


def test_an_inplace_op_reading_a_transpose_of_self_is_caught():
    # add was kept: its operand t aliases self.
    error = _rejected_once_made(aten.add.Tensor, aten.add_.Tensor, _transpose_add, torch.randn(3, 3))
    assert error.node == "add" and error.reason == "operand_overlaps_self"
    assert error.operand == "other"
    assert "while reading operand other (t), whose element [0, 0] is in self's memory" in str(error)


def test_an_output_aliasing_an_input_is_caught():
    def f(x):
        return x.clone()

    x = torch.randn(3)
    functional, gm = _pair(f, x)
    clone = _node(gm, aten.clone.default)
    clone.replace_all_uses_with(clone.args[0])
    gm.graph.erase_node(clone)
    error = _rejected(functional, gm, x)
    assert error.node == "output" and error.reason == "output_aliases_input"
    assert "output[0] (x_1) shares memory with graph input x_1" in str(error)


def _slice_then_read(x):
    a = x + 1
    a[1:3].mul_(2)
    return a.sum(), a


def test_a_changed_view_argument_is_caught():
    x = torch.randn(5)
    functional, gm = _pair(_slice_then_read, x)
    view = _node(gm, aten.slice.Tensor)
    view.args = (view.args[0], 0, 2, 4)
    error = _rejected(functional, gm, x)
    assert error.node == view.name and error.reason == "wrong_argument"
    assert "passes 2 for argument 'start' where the functional graph passes 1" in str(error)


def _stride_of_a_size_one_dimension_read(x1):
    # Functionalized: the unfold write goes back by an as_strided_scatter passed
    # sym_stride(t0, 0), the stride of t0's dimension of size 1: 8 for a fresh t0, 1 when
    # square_ is made to write the transposed input (policy="compile").
    x1.square_()
    t0 = x1 * 2
    t0.unfold(1, 1, 2).square_()
    return torch.sigmoid(t0)


def _without_size_one_restrides(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The graph with the as_strided views fxinplace.functionalize puts on a written value to give
    its size-1 dims eager's strides (random pipelines seed 200786) taken out: the functional graph
    as a functionalization that leaves the kernel's strides there records it (the strides of a
    size-1 dim address nothing; the values are the same)."""
    for node in list(gm.graph.nodes):
        if (
            node.target is aten.as_strided.default
            and node.args[0].meta["val"].shape == node.meta["val"].shape
        ):
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


def test_a_changed_stride_of_a_size_one_dimension_is_not_a_changed_argument():
    """Random pipelines seed 3624: such a stride addresses nothing."""

    def arg():
        return torch.arange(8.0).reshape(8, 1).t()

    gm = _without_size_one_restrides(
        make_fx(fxinplace.functionalize(_stride_of_a_size_one_dimension_read), tracing_mode="symbolic")(arg())
    )
    fxinplace.reinplace(gm, arg(), check=True, policy="compile")
    assert "pow_.Scalar(x1_1" in gm.code, gm.code  # the rewrite the case is about
    x, want_x = arg(), arg()
    assert torch.equal(gm(x), _stride_of_a_size_one_dimension_read(want_x)) and torch.equal(x, want_x)
    # A stride along a longer dimension is still compared.
    scatter = _node(gm, aten.as_strided_scatter.default)
    size, stride = scatter.args[2], scatter.args[3]
    scatter.args = (*scatter.args[:3], [stride[0], 1, stride[2]], *scatter.args[4:])
    functional = copy_functional(
        _without_size_one_restrides(
            make_fx(fxinplace.functionalize(_stride_of_a_size_one_dimension_read), tracing_mode="symbolic")(
                arg()
            )
        )
    )
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, arg(), inputs_written_back_may_be_written=True)
    assert info.value.reason == "wrong_argument" and "'stride'" in str(info.value), (size, str(info.value))


def _as_strided_of_a_copy(x):
    return torch.as_strided(x * 1, (3, 0), (1, 1)) + 0


@pytest.mark.parametrize(
    ("size", "stride", "caught"),
    [((3, 0), (2, 1), False), ((3, 0), (2, 7), False), ((3, 1), (1, 1), True)],
    ids=["empty_stride_0", "empty_both_strides", "another_size"],
)
def test_the_strides_of_an_empty_tensor_are_not_compared(size, stride, caught):
    """Random pipelines seed 5116: an as_strided_ of sizes [7, 7, 0] passed another stride
    where a rewrite changed what it read of a stride; no element of it is addressed."""
    x = torch.arange(6.0)
    functional = copy_functional(make_fx(_as_strided_of_a_copy)(x))
    gm = make_fx(_as_strided_of_a_copy)(x)
    view = _node(gm, aten.as_strided.default)
    view.args = (view.args[0], list(size), list(stride), *view.args[3:])
    if caught:
        assert _rejected(functional, gm, x).reason == "wrong_argument"
    else:
        gm.recompile()
        fxinplace.check_reinplaced(functional, gm, x)


def test_a_custom_op_mutating_a_base_still_read_later_is_caught():
    def f(x):
        c = x + 1
        out = AFV2(ADD_ONE, _x_base_index=0, _all_bases=[c])
        return out[1] * 2, c * 3  # the old c is read after the op: its clone stays

    x = torch.arange(3.0)
    gm = trace_direct(f, x)
    functional = copy_functional(gm)
    fxinplace.reinplace(gm, x, check=True)
    node = _node(gm, AFV2)
    node.kwargs = {**node.kwargs, "_only_clone_these_bases": ()}  # mutate c in place anyway
    error = _rejected(functional, gm, x)
    # `mul` (of the op's new value, now c itself) writes c in place; `mul_1` reads the old c.
    assert error.node == "mul_1" and error.reason == "wrong_value"
    assert "reads self (add) at element [0], which holds mul's value at [0] (written by mul)" in str(error)
    assert "the functional graph has add's value at [0] there" in str(error)


def test_a_custom_op_made_to_mutate_an_input_is_caught():
    def f(x):
        add_one_(x)  # traced without the copy back: x must stay as it was
        return x * 2

    x = torch.arange(3.0)
    gm = trace(f, x)
    functional = copy_functional(gm)
    fxinplace.reinplace(gm, x, check=True)
    node = _node(gm, AFV2)
    node.kwargs = {**node.kwargs, "_only_clone_these_bases": ()}
    error = _rejected(functional, gm, x)
    assert error.node == node.name and error.reason == "input_written"
    assert "which the functional graph never writes back" in str(error)


def test_a_correct_custom_op_rewrite_passes_and_a_partial_one_is_checked():
    def f(x):
        y = x + 1
        ADD_ONE(y)
        return y

    x = torch.randn(4)
    functional, gm = _pair(f, x, functionalize=fxinplace.functionalize)
    assert not list(gm.graph.find_nodes(op="call_function", target=AFV2))  # a direct call now
    fxinplace.check_reinplaced(functional, gm, x)


def _write_through_a_view(x):
    a = x.clone()
    a[:2].add_(1)
    return a


def test_a_removed_scatter_whose_source_never_landed_is_caught():
    # The write now lands in fresh memory.
    error = _rejected_once_made(aten.add_.Tensor, aten.add.Tensor, _write_through_a_view, torch.randn(4))
    assert error.node == "output" and error.reason == "wrong_value"
    assert "the functional graph has add's value at [0] there" in str(error)


def test_reinplace_with_check_raises_when_the_pass_goes_wrong(monkeypatch):
    module = sys.modules["fxinplace._reinplace"]

    real_apply = module.apply_plan

    def broken_apply(gm, nodes, plan, *rest, **options):
        real_apply(gm, nodes, plan, *rest, **options)
        add = _node(gm, aten.add.Tensor)
        add.target = aten.add_.Tensor  # as if the planner forgot mul reads clone

    monkeypatch.setattr(module, "apply_plan", broken_apply)
    x = torch.randn(4)
    gm = make_fx(torch.func.functionalize(_two_reads))(x)
    expected = "node mul .aten.mul_.Tensor.: reads self"
    with pytest.raises(fxinplace.ReinplaceCheckError, match=expected) as info:
        fxinplace.reinplace(gm, x, check=True)
    assert info.value.node == "mul"
    gm = make_fx(torch.func.functionalize(_two_reads))(x)
    fxinplace.reinplace(gm, x)  # check=False: not verified


def test_graphs_it_cannot_model_are_refused_clearly():
    x = torch.randn(3)
    gm = make_fx(torch.func.functionalize(lambda x: x + 1))(x)
    broken = copy_functional(gm)
    node = _node(broken, aten.add.Tensor)
    node.target = aten.add_.Tensor  # the "functional" graph mutates a graph input
    broken.recompile()
    with pytest.raises(
        fxinplace.ReinplaceCheckError, match="cannot check the rewritten graph: .*mutates"
    ) as info:
        fxinplace.check_reinplaced(broken, gm, x)
    assert info.value.cannot_check


def test_data_dependent_sizes_are_checked_at_the_sample_args_values():
    def f(x):
        a = x.nonzero() + 0
        return a.add(1) * 2

    x = torch.tensor([0.0, 3.0, 0.0, 4.0])
    functional, gm = _pair(f, x)
    assert "add_" in gm.code or "mul_" in gm.code
    getitem = [n for n in gm.graph.nodes if n.target is operator.getitem]
    assert not getitem


@pytest.mark.parametrize("tracing_mode", ["real", "symbolic"])
def test_correct_rewrites_pass(tracing_mode):
    def f(x, y):
        a = x.clone()
        a[0].add_(y)
        b = a.t().contiguous()
        b.mul_(2)
        x.sub_(1)
        return a, b.sum(0)

    args = (torch.randn(3, 3), torch.randn(3))
    gm = make_fx(torch.func.functionalize(f), tracing_mode=tracing_mode)(*args)
    fxinplace.reinplace(gm, *args, check=True)


def test_dtype_views_are_checked_byte_for_byte():
    def f(z):
        z.real.mul_(2)
        z.imag[0].zero_()
        return torch.view_as_real(z) + 1

    z = torch.complex(torch.randn(2, 3), torch.randn(2, 3))
    for functionalize in (torch.func.functionalize, fxinplace.functionalize):
        gm = make_fx(functionalize(f))(z.clone())
        fxinplace.reinplace(gm, z.clone(), check=True)


def test_afv2_graphs_from_torch_are_checked():
    x = torch.randn(4)
    gm = trace(add_one_to_a_slice_of_a_clone, x)
    fxinplace.reinplace(gm, x, check=True)


_STOCK_UNSOUND = [p for p in PROGRAMS if not p.require_stock_match]


@pytest.mark.parametrize("program", _STOCK_UNSOUND, ids=[p.name for p in _STOCK_UNSOUND])
def test_the_stock_pass_is_caught_where_it_is_unsound(program):
    # The corpus's programs where torch.fx.passes.reinplace gives wrong results:
    # the checker, given stock's rewrite, must say where.
    trace_args = program.make_trace_args or program.make_args
    gm = make_fx(torch.func.functionalize(program.fn), tracing_mode=program.tracing_mode)(*trace_args())
    functional = copy_functional(gm)
    try:
        stock_reinplace(gm, *trace_args())
    except Exception:  # noqa: BLE001 - stock crashing is its own failure, nothing to check
        pytest.skip("the stock pass raises on this program")
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *trace_args())
    assert not info.value.cannot_check, str(info.value)
    assert info.value.node is not None or info.value.reason == "final_input", str(info.value)


_NAN = float("nan")


@pytest.mark.parametrize("fill", [_NAN, complex(_NAN, _NAN), complex(1.0, _NAN)])
def test_a_nan_argument_equals_the_same_nan(fill) -> None:
    """Scalar arguments are compared between the two graphs: NaN (real, or in either part of a
    complex) must equal NaN, or every graph carrying one fails the check (seed 1336 of the
    hook run: Inductor folded a complex NaN into `full`)."""
    dtype = torch.complex64 if isinstance(fill, complex) else torch.float32

    def f(x):
        return torch.full((3,), fill, dtype=dtype) + x

    x = torch.zeros(3, dtype=dtype)
    gm = make_fx(f)(x)
    fxinplace.reinplace(gm, x, check=True)  # raises ReinplaceCheckError if NaN != NaN
    changed = make_fx(lambda x: torch.full((3,), 2.0, dtype=dtype) + x)(x)
    functional = copy_functional(make_fx(f)(x))
    with pytest.raises(fxinplace.ReinplaceCheckError, match="fill_value"):
        fxinplace.check_reinplaced(functional, changed, x)


def _scatter_over_a_base_written_ahead(x0, pos0):
    # _foreach_neg_ is written in place (both list elements views of one buffer); the scatter
    # of its second element back into that buffer stays, reading a base whose column it
    # overwrites already holds the new values (stock programs seed 935).
    t0 = x0.narrow(1, 1, 2)
    torch._foreach_lerp_([t0[..., :2, :2]], [t0[..., :2, :2].mT * 1], 0.5)
    t0.index_copy_(1, pos0, torch.full_like(t0.narrow(1, 0, 1), -0.5))
    t3 = t0.reshape(-1, 2)[-3][-1]
    torch._foreach_neg_([t3, x0[:, -2]])
    return (pos0,)


def test_a_scatter_is_not_judged_by_base_elements_it_overwrites() -> None:
    def make():
        g = torch.Generator().manual_seed(2000941)
        return (torch.randn((7, 3), generator=g).mul(8).round().div(8), torch.tensor([1]))

    gm = make_fx(torch.func.functionalize(_scatter_over_a_base_written_ahead))(*make())
    report = fxinplace.reinplace_report(gm, *make(), check=True)  # raised ReinplaceCheckError before
    assert {d.node: d.action for d in report.decisions}["_foreach_neg"] == "inplace"
    got, want = make(), make()
    gm(*got)
    _scatter_over_a_base_written_ahead(*want)
    assert torch.equal(got[0], want[0])
