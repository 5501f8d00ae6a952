"""The checker's out= rule (issue 18): `f.out(args, out=d)` writing a buffer that is none
of f's operands, as the memory plan emits it. A correct reuse passes; a buffer still read
afterwards, or one an operand shares, is rejected with the node named."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace._checker import copy_functional

aten = torch.ops.aten


def _functional_and_copy(fn, *args):
    gm = make_fx(fn)(*args)
    return copy_functional(gm), gm


def _mm_nodes(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is aten.mm.default]


def _write_out(node, out):
    node.target = aten.mm.out
    node.kwargs = {**node.kwargs, "out": out}


def _dead_then_new(a, b, c):
    d = torch.mm(a, b)
    s = d.sum()
    return torch.mm(c, b) + s


def _read_after(a, b, c):
    d = torch.mm(a, b)
    y = torch.mm(c, b)
    return y + d  # d is read after y


def _operand_view(a, b):
    d = torch.mm(a, b)
    return torch.mm(d.t(), b)  # reads d through a view


ARGS = (torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4))


def test_an_out_write_into_a_dead_buffer_passes():
    functional, gm = _functional_and_copy(_dead_then_new, *ARGS)
    d, y = _mm_nodes(gm)
    _write_out(y, d)
    gm.recompile()
    fxinplace.check_reinplaced(functional, gm, *ARGS)


def test_an_out_write_into_a_buffer_read_later_is_caught():
    functional, gm = _functional_and_copy(_read_after, *ARGS)
    d, y = _mm_nodes(gm)
    _write_out(y, d)
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *ARGS)
    assert info.value.reason == "wrong_value" and info.value.node == "add", str(info.value)
    assert "holds mm_1's value" in str(info.value)


def test_an_out_write_overlapping_an_operand_is_caught():
    functional, gm = _functional_and_copy(_operand_view, *ARGS[:2])
    d, y = _mm_nodes(gm)
    _write_out(y, d)
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *ARGS[:2])
    assert info.value.reason == "operand_overlaps_self" and info.value.node == "mm_1", str(info.value)
    assert "writes out= out (mm) while reading operand self (t), which shares its memory" in str(info.value)


def _zeros_after_a_dead_buffer(a, b):
    d = torch.mm(a, b)
    s = d.sum()
    z = torch.zeros_like(a)
    return z + s


def _factory_as_fill(gm, value):
    """The memory plan's rewrite of `zeros_like(a)` into mm's dead buffer: fill_(mm, value)."""
    (d,) = _mm_nodes(gm)
    (z,) = [n for n in gm.graph.nodes if n.target is aten.zeros_like.default]
    z.target = aten.fill_.Scalar
    z.args, z.kwargs = (d, value), {}
    gm.recompile()


def test_a_constant_factory_written_as_fill_of_a_dead_buffer_passes():
    functional, gm = _functional_and_copy(_zeros_after_a_dead_buffer, *ARGS[:2])
    _factory_as_fill(gm, 0)
    fxinplace.check_reinplaced(functional, gm, *ARGS[:2])


def test_a_fill_with_another_value_than_the_factorys_is_caught():
    functional, gm = _functional_and_copy(_zeros_after_a_dead_buffer, *ARGS[:2])
    _factory_as_fill(gm, 1)
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *ARGS[:2])
    assert info.value.reason == "wrong_argument" and info.value.node == "zeros_like", str(info.value)
    assert "fills with 1 where the functional graph's aten.zeros_like.default fills with 0" in str(info.value)


def test_a_fill_of_a_buffer_read_later_is_caught():
    def fn(a, b):
        d = torch.mm(a, b)
        z = torch.zeros_like(a)
        return z + d  # d is read after z

    functional, gm = _functional_and_copy(fn, *ARGS[:2])
    _factory_as_fill(gm, 0)
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *ARGS[:2])
    assert info.value.reason == "wrong_value" and info.value.node == "add", str(info.value)
