"""Carrying out the planner's decision on an auto_functionalized (v1) node.

The node becomes a direct call of its op, on each written argument itself where the
planner let the op write it in place, and on an explicit clone of it otherwise (what
the node did, less the clones the plan removes). Getitems of a written argument's new
value then read the argument or its clone, getitems of the op's outputs the call.

A clone keeps the argument's strides and storage offset, as the node's own
`clone_preserve_strides` does: `aten.clone` where that is what it gives (a dense
argument at offset 0), else the same three steps as ATen ops (the storage up to the
argument's last element viewed flat, cloned, viewed back).

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
from fxinplace._metadata import _static

_aten = torch.ops.aten


def apply_afv1(gm: GraphModule, node: Node, call: AFv1Call, in_place: dict[str, bool]) -> dict[Node, Node]:
    """`in_place[name]`: the written argument `name` is written in place. Returns the
    nodes it erased, each with the node that now holds its value."""
    uncloned = {name for name, _ in call.mutable if name in call.not_cloned or in_place.get(name)}
    replaced: dict[Node, Node] = {}
    if _direct_call_possible(node, call):
        _direct_call(gm.graph, node, call, uncloned, replaced)
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


def _direct_call(graph: Graph, node: Node, call: AFv1Call, uncloned: set[str], replaced: dict) -> None:
    """Replace the node by a call of the op (see the module doc)."""
    with graph.inserting_before(node):
        values: dict[str, Any] = dict(call.others)
        for name, arg in call.mutable:
            if arg is None or name in uncloned:
                values[name] = arg
            elif isinstance(arg, list):
                values[name] = [_clone(graph, a) for a in arg]
            else:
                values[name] = _clone(graph, arg)
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


def _clone(graph: Graph, arg: Node) -> Node:
    """`clone_preserve_strides(arg)` as ATen ops, with their `meta['val']`."""
    val = arg.meta.get("val")
    if not isinstance(val, torch.Tensor) or not _static(val) or type(val.storage_offset()) is not int:
        return _call(graph, _aten.clone.default, (arg,))
    if val.storage_offset() == 0 and _clone_keeps_strides(val):
        return _call(graph, _aten.clone.default, (arg,))
    needed = _needed(val)
    flat = _call(graph, _aten.as_strided.default, (arg, [needed], [1], 0))
    buffer = _call(graph, _aten.clone.default, (flat,))
    return _call(
        graph, _aten.as_strided.default, (buffer, list(val.shape), list(val.stride()), val.storage_offset())
    )


def _call(graph: Graph, op: Any, args: tuple) -> Node:
    out = graph.call_function(op, args)
    try:
        val = op(*torch.fx.node.map_arg(args, lambda n: n.meta["val"]))
    except Exception:  # noqa: BLE001 - no value is better than a wrong one
        return out
    out.meta["val"] = val
    return out


def _clone_keeps_strides(t: torch.Tensor) -> bool:
    """`aten.clone(t)` (preserve_format) has `t`'s strides: `t` is non-overlapping and dense."""
    return torch.empty_like(t, device="meta").stride() == t.stride()


def _needed(t: torch.Tensor) -> int:
    if t.numel() == 0:
        return 0
    return t.storage_offset() + 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True))
