"""Inputs the pass cannot take get a clear exception naming the node; odd-but-valid ones work."""

import pytest
import torch
from torch.func import functionalize
from torch.fx import Graph, GraphModule
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace import ReinplaceInputError


def _graph_module(build):
    g = Graph()
    build(g)
    return GraphModule(torch.nn.Module(), g)


def test_not_a_graph_module():
    with pytest.raises(TypeError, match="GraphModule"):
        fxinplace.reinplace(lambda x: x, torch.ones(2))


def test_wrong_number_of_sample_args():
    gm = make_fx(functionalize(lambda x, y: x + y))(torch.ones(2), torch.ones(2))
    with pytest.raises(TypeError, match="2 placeholders .* but 1 sample args"):
        fxinplace.reinplace(gm, torch.ones(2), check=True)


def test_call_module_is_rejected_by_name():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x)

    gm = torch.fx.symbolic_trace(M())
    with pytest.raises(ReinplaceInputError, match="'lin'.*call_module"):
        fxinplace.reinplace(gm, torch.ones(2), check=True)


def test_call_method_is_rejected_by_name():
    gm = torch.fx.symbolic_trace(lambda x: x.relu())
    with pytest.raises(ReinplaceInputError, match="'relu'.*call_method"):
        fxinplace.reinplace(gm, torch.ones(2), check=True)


def test_non_aten_tensor_function_is_rejected():
    gm = torch.fx.symbolic_trace(lambda x: torch.add(x, 1))
    with pytest.raises(ReinplaceInputError, match="'add'.*not an ATen operator overload"):
        fxinplace.reinplace(gm, torch.ones(2), check=True)


def test_overload_packet_is_rejected():
    def build(g):
        x = g.placeholder("x")
        g.output(g.call_function(torch.ops.aten.add, (x, 1)))

    with pytest.raises(ReinplaceInputError, match="overload packet"):
        fxinplace.reinplace(_graph_module(build), torch.ones(2), check=True)


def test_mutating_graph_is_rejected():
    def f(x):
        y = x.clone()
        y.add_(1)
        return y

    gm = make_fx(f)(torch.ones(3))  # not functionalized: keeps add_
    with pytest.raises(ReinplaceInputError, match="'add_'.*mutates"):
        fxinplace.reinplace(gm, torch.ones(3), check=True)


def test_trailing_copy_into_input_is_accepted():
    def f(x):
        x.mul_(2)
        return x + 1

    gm = make_fx(functionalize(f))(torch.ones(3))
    assert any(n.target is torch.ops.aten.copy_.default for n in gm.graph.nodes)
    fxinplace.reinplace(gm, torch.ones(3), check=True)
    x = torch.arange(3.0)
    out = gm(x)
    assert torch.equal(x, torch.arange(3.0) * 2)
    assert torch.equal(out, torch.arange(3.0) * 2 + 1)


def test_higher_order_op_is_rejected():
    from torch._higher_order_ops.triton_kernel_wrap import triton_kernel_wrapper_mutation

    def build(g):
        x = g.placeholder("x")
        g.output(g.call_function(triton_kernel_wrapper_mutation, (), {"kernel_idx": 0, "kwargs": {"x": x}}))

    with pytest.raises(ReinplaceInputError, match="higher-order op"):
        fxinplace.reinplace(_graph_module(build), torch.ones(2), check=True)


def test_sparse_sample_arg_is_rejected():
    gm = make_fx(functionalize(lambda x: x * 2))(torch.ones(2, 2))
    with pytest.raises(ReinplaceInputError, match="sample arg 0: sparse"):
        fxinplace.reinplace(gm, torch.ones(2, 2).to_sparse(), check=True)


def test_quantized_sample_arg_is_rejected():
    gm = make_fx(functionalize(lambda x: x * 2))(torch.ones(2, 2))
    q = torch.quantize_per_tensor(torch.ones(2, 2), 0.1, 0, torch.quint8)
    with pytest.raises(ReinplaceInputError, match="sample arg 0: quantized"):
        fxinplace.reinplace(gm, q, check=True)


def test_self_passed_by_keyword_is_handled():
    def build(g):
        x = g.placeholder("x")
        c = g.call_function(torch.ops.aten.clone.default, (x,))
        a = g.call_function(torch.ops.aten.add.Tensor, (), {"self": c, "other": x})
        g.output(a)

    gm = _graph_module(build)
    fxinplace.reinplace(gm, torch.ones(2), check=True)
    x = torch.tensor([1.0, 2.0])
    assert torch.equal(gm(x), torch.tensor([2.0, 4.0]))
    assert torch.equal(x, torch.tensor([1.0, 2.0]))


def test_graph_without_recorded_values_falls_back_to_fake_tensors():
    def build(g):
        x = g.placeholder("x")
        nz = g.call_function(torch.ops.aten.nonzero.default, (x,))
        c = g.call_function(torch.ops.aten.add.Tensor, (nz, 1))
        g.output(g.call_function(torch.ops.aten.mul.Tensor, (c, 2)))

    gm = _graph_module(build)
    report = fxinplace.reinplace_report(gm, torch.tensor([0.0, 3.0, 0.0, 4.0]), check=True)
    assert report.metadata_path == "fake"
    assert report.num_reinplaced == 2  # add writes into nonzero's result, mul into add's
    assert torch.equal(gm(torch.tensor([0.0, 3.0, 0.0, 4.0])), torch.tensor([[4], [8]]))


def test_int_sample_arg_passes_through():
    def f(x, n):
        return (x + n) * 2

    gm = make_fx(functionalize(f))(torch.ones(3), 2)
    fxinplace.reinplace(gm, torch.ones(3), 2, check=True)
    assert torch.equal(gm(torch.ones(3), 2), torch.full((3,), 6.0))


def test_meta_val_of_reinplaced_node_is_its_self():
    def f(x):
        return (x.clone() + 1).relu()

    gm = make_fx(functionalize(f))(torch.ones(2, 3))
    fxinplace.reinplace(gm, torch.ones(2, 3), check=True)
    (relu,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten.relu_.default]
    assert relu.meta["val"] is relu.args[0].meta["val"]
