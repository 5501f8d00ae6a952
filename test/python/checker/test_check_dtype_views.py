"""The checker on values built through views of another element size (view(dtype),
view_as_real/view_as_complex, conj): a complex element whose real part one op
wrote through a float view and whose imaginary part another did is checked byte
for byte, so correct rewrites pass and broken ones are caught, not refused."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace._checker import copy_functional

aten = torch.ops.aten


def _zero_real_parts(x):
    t = x * 2
    t.view(torch.float32)[::2].zero_()  # the real parts: t's elements hold zero's bytes, then mul's
    return t.clone(), torch.view_as_complex(torch.view_as_real(t) * 3).conj()


_FUNCTIONALIZERS = {
    "torch.func": torch.func.functionalize,
    "fxinplace": fxinplace.functionalize,
    "fxinplace-views": lambda f: fxinplace.functionalize(f, remove="mutations_and_views"),
}


def _pair(name):
    x = torch.complex(torch.randn(3), torch.randn(3))
    gm = make_fx(_FUNCTIONALIZERS[name](_zero_real_parts))(x)
    functional = copy_functional(gm)
    fxinplace.reinplace(gm, x, check=True)  # the correct rewrite passes
    return functional, gm, x


def _only(gm, target):
    (found,) = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is target]
    return found


def _rejected(functional, gm, x) -> fxinplace.ReinplaceCheckError:
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, x)
    assert not info.value.cannot_check, str(info.value)
    return info.value


@pytest.mark.parametrize("name", ["torch.func", "fxinplace"])
def test_a_lost_write_through_a_float_view_of_complex_is_caught(name):
    functional, gm, x = _pair(name)
    gm.graph.erase_node(_only(gm, aten.zero_.default))  # the real parts keep mul's values
    error = _rejected(functional, gm, x)
    assert error.reason == "wrong_value" and error.node == "clone", str(error)
    assert "which holds mul's value at [0]" in str(error)
    assert "the functional graph has zero's value at [0] there" in str(error)


def test_a_lost_scatter_under_view_copy_dtype_is_caught():
    functional, gm, x = _pair("fxinplace-views")
    gm.graph.erase_node(_only(gm, aten.copy_.default))  # select_scatter's source never lands
    error = _rejected(functional, gm, x)
    assert error.reason == "wrong_value" and error.node == "view_copy_2", str(error)
    assert "the functional graph has zero's value at [0] there" in str(error)
