"""Symbolic sizes written back into a graph: which size expressions the graph can compute
from its own inputs, and the nodes that compute them.

The memory plan lays a result into a dead buffer of another layout but the same byte count
as `as_strided(d, sizes, strides, 0)`. Under a dynamic-shape trace those sizes are
expressions of the graph's symbols (`s0`, `768*s1`): every symbol is an input's value, or a
size or stride of an input tensor, so `sym_size.int(x, 0) * 768` computes it again at run
time. Only sums, products and positive integer powers of such symbols count: anything else
(floor division, max, unbacked symbols) leaves the node out of that kind of reuse."""

from __future__ import annotations

import operator
from typing import Any

import sympy
import torch
from torch.fx import Graph, Node

_SOURCE_OPS = {"size": torch.ops.aten.sym_size.int, "stride": torch.ops.aten.sym_stride.int}


class SizeSources:
    """Where each plain symbol of the graph's inputs comes from: a SymInt input itself, or a
    size or stride of a tensor input (the first one seen)."""

    def __init__(self) -> None:
        self.sources: dict[sympy.Symbol, tuple[Node, str | None, int]] = {}
        self.known: dict[Any, bool] = {}

    def add_input(self, node: Node, value: Any) -> None:
        if isinstance(value, torch.SymInt):
            self._add(value, (node, None, 0))
        elif isinstance(value, torch.Tensor):
            for d, s in enumerate(value.shape):
                self._add(s, (node, "size", d))
            for d, s in enumerate(value.stride()):
                self._add(s, (node, "stride", d))

    def _add(self, v: Any, source: tuple[Node, str | None, int]) -> None:
        if isinstance(v, torch.SymInt):
            expr = v.node.expr
            if isinstance(expr, sympy.Symbol) and expr not in self.sources:
                self.sources[expr] = source

    def expressible(self, values: Any) -> bool:
        """Whether every value (ints or SymInts) can be computed from the graph's inputs."""
        return all(type(v) is int or self._expressible(v.node.expr) for v in values)

    def _expressible(self, expr: Any) -> bool:
        found = self.known.get(expr)
        if found is None:
            if isinstance(expr, sympy.Integer):
                found = True
            elif isinstance(expr, sympy.Symbol):
                found = expr in self.sources
            elif isinstance(expr, (sympy.Add, sympy.Mul)):
                found = all(self._expressible(a) for a in expr.args)
            elif isinstance(expr, sympy.Pow):
                base, exp = expr.args
                found = isinstance(exp, sympy.Integer) and exp > 0 and self._expressible(base)
            else:
                found = False
            self.known[expr] = found
        return found


class SizeWriter:
    """Emits the nodes that compute size expressions (each expression once per graph), before
    a given node."""

    def __init__(self, graph: Graph, sources: SizeSources) -> None:
        self.graph = graph
        self.sources = sources
        self.emitted: dict[Any, Any] = {}

    def values(self, values: Any) -> list:
        """Ints stay ints; a SymInt becomes the node (or int) computing its expression."""
        return [v if type(v) is int else self._emit(v.node.expr) for v in values]

    def _emit(self, expr: Any) -> Any:
        found = self.emitted.get(expr)
        if found is not None:
            return found
        if isinstance(expr, sympy.Integer):
            return int(expr)
        if isinstance(expr, sympy.Symbol):
            node, kind, dim = self.sources.sources[expr]
            found = node if kind is None else self._call(_SOURCE_OPS[kind], node, dim)
        elif isinstance(expr, sympy.Pow):
            base, exp = expr.args
            found = self._fold(operator.mul, [base] * int(exp))
        else:
            found = self._fold(operator.add if isinstance(expr, sympy.Add) else operator.mul, expr.args)
        self.emitted[expr] = found
        return found

    def _fold(self, op: Any, args: Any) -> Any:
        terms = [self._emit(a) for a in args]
        result = terms[0]
        for term in terms[1:]:
            result = self._call(op, result, term)
        return result

    def _call(self, op: Any, *args: Any) -> Node:
        node = self.graph.call_function(op, args)
        vals = [a.meta.get("val") if isinstance(a, Node) else a for a in args]
        if all(v is not None for v in vals):
            try:
                node.meta["val"] = op(*vals)
            except Exception:  # noqa: BLE001 - no value is better than a wrong one
                pass
        return node
