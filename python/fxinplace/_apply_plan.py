"""Carry the planner's decisions out on the fx.Graph, the way the stock pass edits it.

Nodes keep their names; users of a rewritten node read its replacement; a
scatter rewritten to `view + copy_` gets those two nodes inserted just before
it, created in graph order so FX gives them the same names the stock pass gets.
`meta['val']` of touched nodes is kept true: an in-place op returns its `self`.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import GraphModule, Node

from fxinplace._op_info import SCATTER_VIEWS, op_info

ACTION_KEEP, ACTION_INPLACE, ACTION_SCATTER_TO_COPY, ACTION_REMOVE_SCATTER = range(4)


def _final(i: int, replacement: list[int]) -> int:
    while replacement[i] >= 0 and replacement[i] != i:
        i = replacement[i]
    return i


def _view_val(view_op: Any, base: Node, args: tuple, kwargs: dict) -> Any:
    base_val = base.meta.get("val")
    if not isinstance(base_val, torch.Tensor):
        return None
    try:
        return view_op(base_val, *args, **kwargs)
    except Exception:
        return None


def apply_plan(gm: GraphModule, nodes: list[Node], decisions: list[tuple]) -> None:
    graph = gm.graph
    replacement = [d[3] if d[0] != ACTION_KEEP else -1 for d in decisions]
    to_erase: list[Node] = []
    for i, (node, (action, _reason, _culprit, _repl)) in enumerate(zip(nodes, decisions, strict=True)):
        if action == ACTION_KEEP:
            continue
        if action == ACTION_INPLACE:
            node.target = op_info(node.target).inplace
            self_val = nodes[replacement[i]].meta.get("val")
            if self_val is not None:
                node.meta["val"] = self_val
        elif action == ACTION_SCATTER_TO_COPY:
            view_op = SCATTER_VIEWS[node.target]
            base, src, rest = node.args[0], node.args[1], tuple(node.args[2:])
            with graph.inserting_before(node):
                view = graph.create_node("call_function", view_op, (base, *rest), node.kwargs)
                copy = graph.create_node("call_function", torch.ops.aten.copy_.default, (view, src), {})
            val = _view_val(view_op, base, rest, dict(node.kwargs))
            if val is not None:
                view.meta["val"] = val
                copy.meta["val"] = val
            to_erase.append(node)
        else:
            to_erase.append(node)
        node.replace_all_uses_with(nodes[_final(i, replacement)], propagate_meta=False)
    for node in reversed(to_erase):
        graph.erase_node(node)
