"""Carrying out the planner's decision on an auto_functionalized (v1) node.

The node becomes a direct call of its op, on each written argument itself where the
planner let the op write it in place, and on an explicit clone of it otherwise (what
the node did, less the clones the plan removes). Getitems of a written argument's new
value then read the argument or its clone, getitems of the op's outputs the call.

A clone has the layout the node's own clone (`clone_preserve_strides`) has in the
functional graph, whatever memory the argument lives in after earlier rewrites:
`aten.clone(memory_format=contiguous_format)` for a contiguous argument at offset 0
(between two permutes for a dense one); otherwise fresh memory of the size
`clone_preserve_strides` takes, the argument scattered into it at its strides and
offset (`as_strided_scatter`), and viewed there.

When the node's users read it in ways a direct call cannot stand for (the whole tuple,
a list item other than by index), the node stays, cloning only the arguments not
written in place (`_only_clone_these_tensors`).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import Graph, GraphModule, Node

from fxinplace._afv1_node import AFv1Call
from fxinplace._afv2_apply import _arrange

_aten = torch.ops.aten


def apply_afv1(
    gm: GraphModule, node: Node, call: AFv1Call, in_place: dict[str, bool], layouts: dict[str, Any]
) -> dict[Node, Node]:
    """`in_place[name]`: the written argument `name` is written in place; `layouts`: each
    argument's layout in the functional graph (AFv1Call.layouts). Returns the nodes it
    erased, each with the node that now holds its value."""
    uncloned = {name for name, _ in call.mutable if name in call.not_cloned or in_place.get(name)}
    replaced: dict[Node, Node] = {}
    if _direct_call_possible(node, call):
        _direct_call(gm.graph, node, call, uncloned, layouts, replaced)
        return replaced
    still = tuple(name for name, value in call.mutable if value is not None and name not in uncloned)
    node.kwargs = {**node.kwargs, "_only_clone_these_tensors": still}
    val = node.meta.get("val")
    new_val = list(val) if isinstance(val, (tuple, list)) else None
    for user in list(node.users):
        if user.target is not operator.getitem or type(user.args[1]) is not int:
            continue
        j = user.args[1] - call.num_outputs
        if 0 <= j < len(call.mutable) and call.mutable[j][0] in uncloned:
            arg = call.mutable[j][1]
            if isinstance(arg, Node):
                user.replace_all_uses_with(arg)
                replaced[user] = arg
                gm.graph.erase_node(user)
    for j, (name, arg) in enumerate(call.mutable):
        if new_val is not None and name in uncloned and call.num_outputs + j < len(new_val):
            new_val[call.num_outputs + j] = _val_of(arg)
    if new_val is not None:
        node.meta["val"] = type(val)(new_val)
    return replaced


def _val_of(arg: Any) -> Any:
    if isinstance(arg, Node):
        return arg.meta.get("val")
    if isinstance(arg, list):
        return [_val_of(a) for a in arg]
    return arg


def _direct_call_possible(node: Node, call: AFv1Call) -> bool:
    has_returns = bool(call.op._schema.returns)
    for user in node.users:
        if user.target is not operator.getitem or type(user.args[1]) is not int:
            return False
        k = user.args[1]
        if not 0 <= k < call.num_outputs + len(call.mutable):
            return False
        if k < call.num_outputs:
            if not has_returns and user.users:
                return False  # reads the None an op without outputs returns
            continue
        arg = call.mutable[k - call.num_outputs][1]
        if arg is None and user.users:
            return False
        if isinstance(arg, list):
            for item in user.users:
                if item.target is not operator.getitem or type(item.args[1]) is not int:
                    return False
                if not 0 <= item.args[1] < len(arg):
                    return False
    return True


def _direct_call(
    graph: Graph, node: Node, call: AFv1Call, uncloned: set[str], layouts: dict[str, Any], replaced: dict
) -> None:
    """Replace the node by a call of the op (see the module doc)."""
    with graph.inserting_before(node):
        values: dict[str, Any] = dict(call.others)
        for name, arg in call.mutable:
            if arg is None or name in uncloned:
                values[name] = arg
            elif isinstance(arg, list):
                found = layouts.get(name)
                found = found if isinstance(found, list) and len(found) == len(arg) else [None] * len(arg)
                values[name] = [_clone(graph, a, layout) for a, layout in zip(arg, found, strict=True)]
            else:
                values[name] = _clone(graph, arg, layouts.get(name))
        args, kwargs = _arrange(call.op, values)
        direct = graph.call_function(call.op, tuple(args), kwargs)
    returns = call.op._schema.returns
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        n = len(returns)
        direct.meta["val"] = None if n == 0 else val[0] if n == 1 else tuple(val[:n])
    for user in list(node.users):
        k = user.args[1]
        if k >= call.num_outputs:
            new = values[call.mutable[k - call.num_outputs][0]]
            if isinstance(new, list):
                for item in list(user.users):
                    element = new[item.args[1]]
                    item.replace_all_uses_with(element)
                    replaced[item] = element
                    graph.erase_node(item)
                graph.erase_node(user)
                continue
            if new is None:
                graph.erase_node(user)
                continue
            replacement = new
        elif len(returns) == 1:
            replacement = direct
        elif not returns:
            graph.erase_node(user)
            replaced[user] = direct
            continue
        else:
            with graph.inserting_after(direct):
                replacement = graph.call_function(operator.getitem, (direct, k))
            replacement.meta.update(user.meta)
        user.replace_all_uses_with(replacement)
        replaced[user] = replacement
        graph.erase_node(user)
    graph.erase_node(node)
    replaced[node] = direct


def _clone(graph: Graph, arg: Node, layout: Any) -> Node:
    """`clone_preserve_strides(arg)` as ATen ops, in the argument's functional layout
    (sizes, strides, offset), with their `meta['val']`."""
    if layout is None or not _no_overlap(layout[0], layout[1]):
        return _call(graph, _aten.clone.default, (arg,))  # unknown: clone it as it is
    sizes, strides, offset = layout
    # A dense layout at offset 0 is a permutation of a contiguous one.
    order = sorted(range(len(sizes)), key=lambda d: (-strides[d], d))
    permuted = _contiguous_strides([sizes[d] for d in order])
    if offset == 0 and all(strides[d] == permuted[i] for i, d in enumerate(order)):
        contiguous = {"memory_format": torch.contiguous_format}
        if order == sorted(order):
            return _call(graph, _aten.clone.default, (arg,), contiguous)
        view = _call(graph, _aten.permute.default, (arg, order))
        clone = _call(graph, _aten.clone.default, (view,), contiguous)
        return _call(graph, _aten.permute.default, (clone, [order.index(d) for d in range(len(order))]))
    needed = 0 if 0 in sizes else offset + 1 + sum((n - 1) * st for n, st in zip(sizes, strides, strict=True))
    memory = _call(graph, _aten.new_empty.default, (arg, [needed]))
    filled = _call(graph, _aten.as_strided_scatter.default, (memory, arg, sizes, strides, offset))
    return _call(graph, _aten.as_strided.default, (filled, sizes, strides, offset))


def _call(graph: Graph, op: Any, args: tuple, kwargs: dict | None = None) -> Node:
    out = graph.call_function(op, args, kwargs or {})
    try:
        val = op(*torch.fx.node.map_arg(args, lambda n: n.meta["val"]), **(kwargs or {}))
    except Exception:  # noqa: BLE001 - no value is better than a wrong one
        return out
    out.meta["val"] = val
    return out


def _contiguous_strides(sizes: list[int]) -> list[int]:
    strides, step = [], 1
    for n in reversed(sizes):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def _no_overlap(sizes: list[int], strides: list[int]) -> bool:
    """No two elements share memory (sufficient: each stride passes every smaller dim's reach)."""
    reach = 0
    for stride, n in sorted((st, n) for n, st in zip(sizes, strides, strict=True) if n > 1):
        if stride <= reach:
            return False
        reach += (n - 1) * stride
    return True
