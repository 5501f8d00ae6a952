"""Programs on which the stock pass is unsound (each function says why): marked
``require_stock_match=False``, so the harness skips the code comparison and only checks
the native pass against eager."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.reinplace_differential import reinplace_case

from ..inputs import randn, x44, x44_y44


@reinplace_case(x44, require_stock_match=False)
def unsound_overlapping_self(x):
    # as_strided((3, 3), (1, 1)) reads element i + j: the view overlaps itself.
    # ATen calls that overlap "too hard" and lets mul_ run, in an order-dependent
    # way; the stock pass only refuses stride-0 overlap, so it emits mul_ here.
    a = x.clone()
    return torch.as_strided(a, (3, 3), (1, 1), 2) * -0.75


@reinplace_case(x44, require_stock_match=False)
def unsound_partial_overlap(x):
    a = x + 1
    # Stock turns this into a.add_(a.t()): self partially overlaps an operand, which
    # ATen rejects at run time ("some elements of the input tensor and the written-to
    # tensor refer to a single memory location").
    return a + a.t()


@reinplace_case(lambda: (randn(4), randn(1, 4, seed=1)), require_stock_match=False)
def unsound_numel_not_shape(x, y):
    a = x.clone()
    # self (4,) and result (1, 4) have the same numel but different shapes; stock only
    # compares numel, emits a.add_(y), which raises (cannot broadcast into self).
    return a.add(y)


@reinplace_case(x44_y44, require_stock_match=False)
def unsound_scatter_geometry_not_storage(x, y):
    a = x.clone()
    c = a.select(0, 1)
    c2 = c.add(1)
    other = y.clone()
    # The scatter writes (the pre-add) c into ``other``, a different storage with the
    # same geometry as ``a``. Stock compares geometry only, treats it as the inverse of
    # ``c = a.select(0, 1)``, deletes it and reinplaces the add: ``out`` loses row 1.
    out = torch.select_scatter(other, c, 0, 1)
    return c2, out


@reinplace_case(x44, tracing_mode="symbolic", require_stock_match=False)
def unsound_sym_size_node(x):
    a = x.clone()
    # With tracing_mode="symbolic" the graph holds aten.sym_size.int (Tensor in, int
    # out); stock calls .numel() on the int result and raises AttributeError.
    return a.view(x.shape[0] * 2, -1).add(1)
