"""Mirrors of PyTorch's own tests of the stock pass (``test/test_fx_reinplace_pass.py``),
with the op counts the stock pass leaves."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import randn, symint
from ..stock_programs import scatter_into_mirror_of_b, scatter_op_views


@reinplace_case(lambda: (torch.ones(2),), expect={"aten.add_.Tensor": 1, "aten.add.Tensor": 0})
def stock_basic(x):
    a = x.clone()
    return a.add(1)


@reinplace_case(lambda: (torch.ones(2),), expect={"aten.add.Tensor": 1, "aten.add_.Tensor": 1})
def stock_with_view(x):
    a = x.clone()
    a_view = a.view(-1)
    # Not reinplaceable: an alias of ``a`` (a_view) is used later.
    a.add(1)
    # Reinplaceable.
    return a_view.add(1)


@reinplace_case(
    lambda: (torch.ones(4),), expect={"aten.add.Tensor": 1, "aten.ge.Tensor": 1, "aten.ge_.Tensor": 0}
)
def stock_different_metadata(a_):
    a = a_.clone()
    b = a + 1
    # ge() would have to change b's dtype: not reinplaceable.
    return torch.ge(b, a)


@reinplace_case(lambda: (torch.ones(1),), expect={"aten.add.Tensor": 1, "aten.add_.Tensor": 0})
def stock_overlapping_memory(a_):
    a = a_.clone()
    b = a.expand(4, 4)
    # b has internal overlap: not reinplaceable.
    return b.add(1)


@reinplace_case(
    lambda: (torch.ones(4),),
    expect={"aten.add_.Tensor": 2, "aten.add.Tensor": 0, "aten.select_scatter.default": 0},
)
def stock_scatter_op(a_):
    a, e = scatter_op_views(a_)
    return a + e


@reinplace_case(lambda: (torch.ones(4, 4),), expect={"aten.add_.Tensor": 1, "aten.select_scatter.default": 0})
def stock_scatter_twice(a_):
    a = a_.clone()
    b = a[:, 1]
    c = b[1]
    c.add_(1)
    return a


@reinplace_case(
    lambda: (torch.ones(4, 4),),
    expect={"aten.add_.Tensor": 1, "aten.select_scatter.default": 0, "aten.copy_.default": 0},
)
def stock_scatter_twice_different_view_op_valid(a_):
    # Scatters c_updated into exactly the region that c occupies.
    return scatter_into_mirror_of_b(a_, mirror_offset=1, index=1)


@reinplace_case(
    lambda: (torch.ones(4, 4),),
    expect={"aten.add.Tensor": 1, "aten.select_scatter.default": 0, "aten.copy_.default": 1},
)
def stock_scatter_twice_different_view_op_invalid(a_):
    # Same base geometry as b, but scatters into a different slot than c's.
    return scatter_into_mirror_of_b(a_, mirror_offset=1, index=0)


@reinplace_case(
    lambda: (randn(4, 4),),
    expect={"aten.add.Tensor": 1, "aten.select_scatter.default": 0, "aten.copy_.default": 1},
)
def stock_scatter_twice_different_view_op_invalid2(a_):
    # Base has a different offset than c's base: the add must not be reinplaced.
    return scatter_into_mirror_of_b(a_, mirror_offset=0, index=1)


@reinplace_case(lambda: (), expect={"aten.add_.Tensor": 1, "aten.diagonal_scatter.default": 0})
def stock_out_node_updated():
    x = torch.zeros(2, 2)
    y = x.diagonal()
    y_updated = y.add(1)
    z = torch.diagonal_scatter(x, y_updated)
    # The output [z] must be rewired to [x].
    return [z]


@reinplace_case(lambda: (), expect={"aten.copy_.default": 1, "aten.slice_scatter.default": 0})
def stock_index_mutation():
    a = torch.zeros(4, 4, 4)
    a[:, 2:] = torch.ones(4, 2, 4)
    return a


@reinplace_case(
    lambda: (randn(4, 8), 2), make_trace_args=lambda: (randn(4, 8), symint(2)), expect={"aten.add_.Tensor": 1}
)
@reinplace_case(lambda: (randn(4, 8), 2), name="stock_sym_input_int_baked", expect={"aten.add_.Tensor": 1})
@reinplace_case(
    lambda: (randn(4, 8), 2),
    name="stock_sym_input_symbolic_tracing",
    tracing_mode="symbolic",
    expect={"aten.add_.Tensor": 1},
)
def stock_sym_input(x, index):
    a = torch.select(x, 0, index)
    clone = a.clone()
    return clone.add(1)


@reinplace_case(
    lambda: (randn(4, 4), torch.tensor([0, 2]), randn(2, 4, seed=1)),
    expect={"aten.index_put_.default": 1, "aten.index_put.default": 0},
)
def stock_index_put_mutation(x, idx, v):
    a = x.clone()
    a[idx] = v
    return a


@reinplace_case(
    lambda: (randn(4, 4), 2), make_trace_args=lambda: (randn(4, 4), symint(2)), expect={"aten.add_.Tensor": 1}
)
def stock_int_arg_add(x, n):
    a = x.clone()
    return a.add(n)


# A SymInt cannot reach a real-tensor view kernel: trace symbolically instead.
@reinplace_case(lambda: (randn(4, 4), 2), tracing_mode="symbolic", expect={"aten.add_.Tensor": 1})
def stock_int_arg_view_and_add(x, n):
    a = x.clone()
    return a.view(n, -1).add(n)
