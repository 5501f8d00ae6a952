"""Tensor geometry as the planner reads it: sizes, strides and offset, where a
symbolic value (a SymInt of a dynamic-shape or data-dependent trace) is a
`_C.planner.Symbol` known only by identity, plus what can be proven about it without
adding guards (whether it is dense, and in which dim order)."""

from __future__ import annotations

from typing import Any

import torch

from fxinplace import _C


class Symbols:
    """Symbolic sizes, strides and offsets as `_C.planner.Symbol`s: one per distinct
    expression, so equal expressions compare equal in the planner and nothing
    else is assumed of them. A SymInt that is a known constant stays an int."""

    def __init__(self) -> None:
        self.ids: dict[Any, Any] = {}
        # Layouts seen already (by their expressions) -> their proven dense order:
        # proving costs symbolic arithmetic, and a graph repeats few layouts.
        self.dense_orders: dict[tuple, list[int] | None] = {}

    def extents(self, values: Any) -> list:
        return [v if type(v) is int else self.extent(v) for v in values]

    def extent(self, v: Any) -> Any:
        if type(v) is int:
            return v
        constant = v.node.maybe_as_int()
        if constant is not None:
            return constant
        return self.symbol(v.node.expr)

    def symbol(self, key: Any) -> Any:
        """The Symbol of an expression (or of any key naming a value: equal keys, equal values)."""
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = _C.planner.Symbol(len(self.ids))
        return found

    def geometry(self, t: torch.Tensor, offset: Any) -> tuple:
        """(sizes, strides, offset, proven_dense_order) of `t`, laid at `offset`."""
        if type(offset) is int and is_static(t):
            return (list(t.shape), list(t.stride()), offset, None)
        sizes, strides = t.shape, t.stride()
        key = (tuple(map(_expr, sizes)), tuple(map(_expr, strides)))
        if key not in self.dense_orders:
            self.dense_orders[key] = _proven_dense_order(sizes, strides)
        return (self.extents(sizes), self.extents(strides), self.extent(offset), self.dense_orders[key])


def _expr(v: Any) -> Any:
    return v if type(v) is int else v.node.expr


def _proven_dense_order(sizes: Any, strides: Any) -> list[int] | None:
    """If a symbolic tensor is non-overlapping and dense for every value of its
    symbols, its dims from the innermost out (size-1 dims left out); else None.
    Decided without adding guards: the dims are ordered by repeatedly taking one
    whose stride is statically the product of the sizes already taken, or
    max(1, that product) as empty_strided writes it (the two differ only when
    the product is 0, and then the tensor has no elements)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    def stride_is(stride: Any, expected: Any) -> bool:
        if statically_known_true(stride == expected):
            return True
        return isinstance(expected, torch.SymInt) and statically_known_true(
            stride == torch.sym_max(1, expected)
        )

    left = [d for d in range(len(sizes)) if not statically_known_true(sizes[d] == 1)]
    order: list[int] = []
    expected: Any = 1
    while left:
        step = next((d for d in left if stride_is(strides[d], expected)), None)
        if step is None:
            return None
        left.remove(step)
        order.append(step)
        expected = expected * sizes[step]
    return order


def is_static(t: torch.Tensor) -> bool:
    if not t._has_symbolic_sizes_strides:  # the common case, answered without a Python loop
        return True
    return all(type(s) is int for s in t.shape) and all(type(s) is int for s in t.stride())
