"""`check_reinplaced` compares every output's layout with the functional graph's.

The functional graph's outputs are laid out as eager lays them out; a rewrite that
returns the same values in another layout (an in-place op on a transposed buffer
standing for an op whose result is contiguous) changes what the caller sees. Each
wrong rewrite is built by hand from the functional graph (so the tests do not depend
on what the planner does today), and the real pass on the same program must pass.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace._checker import copy_functional

aten = torch.ops.aten
POLICIES = ("stock", "compile", "inductor")


def _transposed_then_masked_scatter(x, m, s):
    y = x.t() * 1  # strides (1, 4), like x.t()
    return y.masked_scatter(m, s)  # a fresh result: strides (4, 1)


def _args():
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 4, generator=g), torch.rand(4, 4, generator=g) > 0.5, torch.randn(16, generator=g)


def _trace(fn, *args):
    return make_fx(torch.func.functionalize(fn))(*args)


def _only(gm, target):
    [node] = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is target]
    return node


def test_eager_lays_the_result_out_contiguously():
    x, m, s = _args()
    assert (x.t() * 1).stride() == (1, 4)
    assert _transposed_then_masked_scatter(x, m, s).stride() == (4, 1)


def test_an_in_place_scatter_into_the_transposed_buffer_is_caught():
    # masked_scatter -> masked_scatter_ on mul (dead afterwards): the values are right,
    # the output has mul's strides (1, 4) where eager has (4, 1).
    args = _args()
    gm = _trace(_transposed_then_masked_scatter, *args)
    functional = copy_functional(gm)
    _only(gm, aten.masked_scatter.default).target = aten.masked_scatter_.default
    gm.recompile()
    assert gm(*args).stride() == (1, 4)
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *args)
    error = info.value
    assert error.reason == "output_layout" and error.node == "output" and error.operand == "output[0]", error
    assert not error.cannot_check
    assert "has strides [1, 4]" in str(error), error
    assert "(eager's layout) has strides [4, 1]" in str(error), error


def test_an_in_place_op_on_a_buffer_of_another_layout_is_caught():
    # add(mul, 0) with mul = mul(t(x), 1), both of strides (1, 4); rewritten by hand as
    # add_ into a contiguous clone of mul: the same values, strides (4, 1).
    x = torch.randn(4, 4)
    gm = _trace(lambda x: x.t() * 1 + 0, x)  # add(mul(t(x), 1), 0): both (1, 4)
    functional = copy_functional(gm)
    # add reads mul's value: rewriting add as add_ into a contiguous clone of mul
    # gives mul's values at add's place with other strides.
    add = _only(gm, aten.add.Tensor)
    with gm.graph.inserting_before(add):
        clone = gm.graph.call_function(
            aten.clone.default, (add.args[0],), {"memory_format": torch.contiguous_format}
        )
    add.args = (clone, *add.args[1:])
    add.target = aten.add_.Tensor
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, x)
    assert info.value.reason == "output_layout", info.value
    assert "has strides [4, 1]" in str(info.value) and "has strides [1, 4]" in str(info.value)


def _view_output(x):
    y = x + 1
    return y[1:] * 3


def test_a_view_at_another_storage_offset_is_accepted():
    # mul(slice(add), 3) -> mul_ into the slice, as the stock pass rewrites it: the output
    # is add's buffer at offset 1, where eager returns a fresh tensor at offset 0. Values,
    # sizes and strides are eager's; the offset is not compared.
    x = torch.arange(3.0)
    gm = _trace(_view_output, x)
    functional = copy_functional(gm)
    mul = _only(gm, aten.mul.Tensor)
    mul.target = aten.mul_.Tensor
    gm.recompile()
    fxinplace.check_reinplaced(functional, gm, x)
    assert gm(x).storage_offset() == 1


def test_strides_of_dimensions_of_size_one_are_not_compared():
    # An output of shape (4, 1): its second stride addresses nothing (Inductor's
    # assert_size_stride ignores it too).
    x = torch.randn(4, 1)
    gm = _trace(lambda x: x * 2, x)
    functional = copy_functional(gm)
    mul = _only(gm, aten.mul.Tensor)
    with gm.graph.inserting_after(mul):
        strided = gm.graph.call_function(aten.as_strided.default, (mul, [4, 1], [1, 7]))
    gm.graph.output_node().replace_input_with(mul, strided)
    gm.recompile()
    assert gm(x).stride() == (1, 7)
    fxinplace.check_reinplaced(functional, gm, x)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_pass_keeps_eager_layouts(policy: str):
    args = _args()
    want = _transposed_then_masked_scatter(*args)
    gm = _trace(_transposed_then_masked_scatter, *args)
    fxinplace.reinplace(gm, *args, check=True, policy=policy)
    got = gm(*args)
    assert got.stride() == want.stride() and torch.equal(got, want)
