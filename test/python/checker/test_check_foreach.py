"""The checker on `_foreach_*_` nodes: `_foreach_mul_(xs, 2)` standing for
`ys = _foreach_mul(xs, 2)` puts ys[k] into xs[k]; ATen's in-place rule holds per
list element, and no element's operand may touch another element's xs[j] (the
kernel may do the elements in any order). Rewrites that break either are
caught; the pass's own rewrites (alone, or through the torch.compile backend
with the AdamW optimizer's foreach ops) check cleanly."""

from __future__ import annotations

import operator

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace._checker import copy_functional
from fxinplace._reinplace.apply import _foreach_in_place
from fxinplace.testing.harness.compile_programs import program

_aten = torch.ops.aten
_ARGS = (torch.arange(3.0), torch.arange(4.0))


def _targets(gm: torch.fx.GraphModule) -> list:
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def _node(gm: torch.fx.GraphModule, target) -> torch.fx.Node:
    (node,) = [n for n in gm.graph.nodes if n.target is target]
    return node


def _forced_in_place(fn, target, args=_ARGS) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    """(functional graph, the same with its `target` node rewritten in place however it is used):
    the pass's own edit, made where the pass would not make it."""
    gm = make_fx(fn)(*args)
    functional = copy_functional(gm)
    _foreach_in_place(gm.graph, _node(gm, target))
    gm.recompile()
    return functional, gm


def _check_error(functional, rewritten, args=_ARGS) -> fxinplace.ReinplaceCheckError:
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, rewritten, *args)
    assert not info.value.cannot_check, info.value
    return info.value


def _assert_reads_another_elements_self(functional, rewritten, args, operand: str, says: str) -> None:
    """The check of rewritten fails at `operand`, which another list element writes (the
    message saying `says`)."""
    error = _check_error(functional, rewritten, args)
    assert error.reason == "operand_overlaps_other_element" and error.operand == operand, error
    assert says in str(error), error


def test_the_pass_rewriting_a_foreach_op_checks_cleanly():
    def f(a, b):
        xs = [a + 1, b + 1]
        ys = torch._foreach_mul(xs, 2.0)
        return ys[0] + 1, ys[1]

    gm = make_fx(f)(*_ARGS)
    fxinplace.reinplace(gm, *_ARGS, check=True)
    assert _aten._foreach_mul_.Scalar in _targets(gm), gm.code


def test_a_list_read_after_being_written_in_place_is_caught():
    def f(a, b):
        xs = [a + 1, b + 1]
        ys = torch._foreach_mul(xs, 2.0)
        return ys[0], ys[1], xs[0] * 3

    functional, rewritten = _forced_in_place(f, _aten._foreach_mul.Scalar)
    error = _check_error(functional, rewritten)
    assert error.reason == "wrong_value" and error.node == "mul" and error.operand == "self", error
    assert (
        "which holds _foreach_mul[0]'s value at [0] (written by _foreach_mul); the functional graph has "
        in str(error)
    ), error


def test_the_same_tensor_twice_in_the_written_list_is_caught():
    def f(a):
        x = a + 1
        ys = torch._foreach_mul([x, x], 2.0)
        return ys[0], ys[1]

    args = (torch.arange(3.0),)
    functional, rewritten = _forced_in_place(f, _aten._foreach_mul.Scalar, args)
    error = _check_error(functional, rewritten, args)
    assert error.reason == "foreach_self_overlap" and error.node == "_foreach_mul", error
    assert error.operand == "self[1]", error


def test_an_element_reading_another_elements_self_is_caught():
    def crossed(a, b):
        x, y = a + 1, b + 1
        zs = torch._foreach_add([x, y], [y, x])
        return zs[0], zs[1]

    args = (torch.arange(3.0), torch.arange(3.0))
    functional, rewritten = _forced_in_place(crossed, _aten._foreach_add.List, args)
    _assert_reads_another_elements_self(functional, rewritten, args, "other[0]", "in any order")


def test_an_element_reading_exactly_its_own_self_is_allowed():
    def same(a, b):
        x, y = a + 1, b + 1
        zs = torch._foreach_add([x, y], [x, y])
        return zs[0], zs[1]

    functional, rewritten = _forced_in_place(same, _aten._foreach_add.List)
    fxinplace.check_reinplaced(functional, rewritten, *_ARGS)
    assert _aten._foreach_add_.List in _targets(rewritten)


def test_a_tensor_read_for_every_element_may_not_be_one_of_the_selves():
    # _foreach_add_.Tensor([x, y], x): `other` (0-dim) is read for element 1 while element 0
    # writes it. Built by hand: make_fx cannot trace the op's .item() of `other`.
    g = torch.fx.Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    x, y = g.call_function(_aten.add.Tensor, (a, 1)), g.call_function(_aten.add.Tensor, (b, 1))
    zs = g.call_function(_aten._foreach_add.Tensor, ([x, y], x))
    g.output(tuple(g.call_function(operator.getitem, (zs, k)) for k in range(2)))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    functional = copy_functional(gm)
    _foreach_in_place(gm.graph, _node(gm, _aten._foreach_add.Tensor))
    gm.recompile()
    args = (torch.tensor(1.0), torch.tensor(2.0))
    _assert_reads_another_elements_self(functional, gm, args, "other", "(read for every element of the list)")


def test_a_foreach_write_the_functional_graph_does_not_have_is_caught():
    # An extra _foreach_add_ on a list still read: its values are none the functional graph computes.
    def f(a, b):
        x, y = a + 1, b + 1
        return x * 2, y * 2

    gm = make_fx(f)(*_ARGS)
    functional = copy_functional(gm)
    x, y = [n for n in gm.graph.nodes if n.target is _aten.add.Tensor]
    with gm.graph.inserting_after(y):
        gm.graph.call_function(_aten._foreach_add_.Scalar, ([x, y], 1))
    gm.recompile()
    error = _check_error(functional, gm)
    assert error.reason == "wrong_value" and error.node == "mul", error
    assert "a value the functional graph does not compute" in str(error), error


def test_adamw_foreach_through_the_backend_checks_its_foreach_writes(monkeypatch):
    from fxinplace import _checker

    checked = []
    real = _checker.check_reinplaced

    def spy(functional, rewritten, *args, **kwargs):
        checked.append(rewritten)
        return real(functional, rewritten, *args, **kwargs)

    monkeypatch.setattr(_checker, "check_reinplaced", spy)
    torch._dynamo.reset()
    s = program("adamw_foreach").setup()
    eager = program("adamw_foreach").setup()
    f = torch.compile(s.target, backend="fxinplace", options={"check": True})
    for _ in range(2):
        got, want = s.step(f), eager.step(eager.target)
        for k in want:
            assert torch.allclose(got[k], want[k], rtol=1e-4, atol=1e-6), k
    foreach_writes = [
        t
        for gm in checked
        for t in _targets(gm)
        if isinstance(t, torch._ops.OpOverload)
        and t._schema.name.startswith("aten::_foreach_")
        and t._schema.name.endswith("_")
    ]
    assert foreach_writes, "no _foreach_*_ node was checked"
