"""Carrying out the planner's decision on an auto_functionalized_v2 node.

Bases the planner let the op write in place stop being cloned: the node keeps
`_only_clone_these_bases` for the others, and users of such a base's new value
read the base. When no base is cloned any more and the node's users allow it, the
node becomes a direct call of the op on views of the bases.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch._higher_order_ops import auto_functionalize as afv2_impl
from torch.fx import GraphModule, Node

from fxinplace._afv2_node import AFv2Call
from fxinplace._view_vals import view_val

_aten = torch.ops.aten


def apply_afv2(gm: GraphModule, node: Node, call: AFv2Call, in_place: list[bool]) -> dict[Node, Node]:
    """`in_place[k]`: slot k (the k-th non-None base) is written in place. Returns
    the nodes it erased, each with the node that now holds its value."""
    slot_bases = [j for j, b in enumerate(call.bases) if b is not None]
    written = {j for j, done in zip(slot_bases, in_place, strict=True) if done}
    still_cloned = tuple(j for j in call.cloned if j not in written and call.bases[j] is not None)
    replaced: dict[Node, Node] = {}
    if not still_cloned and _direct_call(gm, node, call, replaced):
        return replaced
    node.kwargs = {**node.kwargs, "_only_clone_these_bases": still_cloned}
    for user in list(node.users):
        if user.target is operator.getitem and type(user.args[1]) is int:
            j = user.args[1] - call.num_outputs
            if j in written:
                user.replace_all_uses_with(call.bases[j])
                replaced[user] = call.bases[j]
                gm.graph.erase_node(user)
    return replaced


def _direct_call(gm: GraphModule, node: Node, call: AFv2Call, replaced: dict[Node, Node]) -> bool:
    """Replace the node by a call of the op on the bases; False if its users prevent it."""
    getitems = []
    for user in node.users:
        if user.target is not operator.getitem or type(user.args[1]) is not int:
            return False
        k = user.args[1]
        if not 0 <= k < call.num_outputs + len(call.bases):
            return False
        if k < call.num_outputs and not call.op._schema.returns and user.users:
            return False  # reads the None an op without outputs returns
        if k >= call.num_outputs and call.bases[k - call.num_outputs] is None:
            return False
        getitems.append(user)
    graph = gm.graph
    with graph.inserting_before(node):
        values: dict[str, Any] = dict(call.others)
        for name, view in call.views.items():
            if isinstance(view, list):
                values[name] = [_regenerate(graph, call.bases, v) for v in view]
            else:
                values[name] = _regenerate(graph, call.bases, view) if view is not None else None
        args, kwargs = _arrange(call.op, values)
        direct = graph.call_function(call.op, tuple(args), kwargs)
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        n = len(call.op._schema.returns)
        direct.meta["val"] = None if n == 0 else val[0] if n == 1 else tuple(val[:n])
    returns = call.op._schema.returns
    for user in getitems:
        k = user.args[1]
        if k >= call.num_outputs:
            replacement = call.bases[k - call.num_outputs]
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
    return True


def _regenerate(graph: torch.fx.Graph, bases: list[Any], view: Any) -> Any:
    """The FX nodes for one of torch's ViewInfo records, as ATen view ops."""
    if view is None:
        return None
    base = bases[view.base_index]
    if isinstance(view, afv2_impl.NotView):
        return base
    if isinstance(view, afv2_impl.AliasViewInfo):
        op, args = _aten.alias.default, ()
    elif isinstance(view, afv2_impl.SliceViewInfo):
        op, args = _aten.slice.Tensor, (view.dim, view.start, view.end)
    else:
        op, args = _aten.as_strided.default, (list(view.size), list(view.stride), view.storage_offset)
    out = graph.call_function(op, (base, *args))
    val = view_val(op, base, torch.fx.node.map_arg(args, lambda n: n.meta.get("val")), {})
    if val is not None:
        out.meta["val"] = val
    return out


def _arrange(op: torch._ops.OpOverload, values: dict[str, Any]) -> tuple[list, dict]:
    """Positional arguments up to the first missing or keyword-only one, the rest by name."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True
    for arg in op._schema.arguments:
        if arg.name not in values:
            positional = False
            continue
        if positional and not arg.kwarg_only:
            args.append(values[arg.name])
        else:
            positional = False
            kwargs[arg.name] = values[arg.name]
    return args, kwargs
