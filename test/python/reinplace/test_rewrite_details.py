"""Details of the rewrite beyond the differential corpus: meta['val'], constants, explanations."""

import torch
from torch.func import functionalize
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace


def _trace(f, *args):
    return make_fx(functionalize(f))(*args)


def test_inserted_view_and_copy_carry_correct_vals():
    def f(x, y):
        return torch.select_scatter(x + 1, y, 0, 1)

    x, y = torch.randn(3, 4), torch.randn(4)
    gm = _trace(f, x, y)
    report = fxinplace.reinplace_report(gm, x, y, check=True)
    assert report.num_scatters_to_copy == 1
    (copy,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten.copy_.default]
    view = copy.args[0]
    assert view.target is torch.ops.aten.select.int
    assert tuple(view.meta["val"].shape) == (4,)
    assert copy.meta["val"] is view.meta["val"]
    assert torch.equal(gm(x, y), f(x, y))


def test_module_constants_are_read_never_written():
    weight = torch.randn(4, 4)

    def f(x):
        return (weight * 2).relu() + x

    x = torch.randn(4, 4)
    gm = _trace(f, x)
    assert any(n.op == "get_attr" for n in gm.graph.nodes)
    before = {n.target: getattr(gm, n.target).clone() for n in gm.graph.nodes if n.op == "get_attr"}
    report = fxinplace.reinplace_report(gm, x, check=True)
    by_node = {d.node: d for d in report.decisions}
    (mul,) = [n for n in gm.graph.nodes if n.op == "call_function" and "mul" in str(n.target)]
    assert by_node[mul.name].reason_code == "self_is_input"
    assert torch.allclose(gm(x), f(x))
    for name, value in before.items():
        assert torch.equal(getattr(gm, name), value)


def test_every_candidate_is_explained_with_its_culprit():
    def f(x):
        a = x.clone()
        b = a + 1
        c = a * 2
        return b, c

    x = torch.randn(2)
    gm = _trace(f, x)
    report = fxinplace.reinplace_report(gm, x, check=True)
    lines = report.explain().splitlines()
    assert any(line.startswith("add: keep: self or an alias of it is used later (see mul)") for line in lines)
    assert any(line.startswith("mul: inplace") for line in lines)
    assert not any(line.startswith("clone") and "view" in line for line in lines)


def test_stock_contract_same_object_and_recompiled():
    x = torch.randn(3)
    gm = _trace(lambda x: (x + 1).sin(), x)
    assert fxinplace.reinplace(gm, x, check=True) is gm
    assert "sin_" in gm.code
