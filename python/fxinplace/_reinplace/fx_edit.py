"""What the plan's graph edits (`apply`, `auto_functionalized.v1`, `.v2`) share: an op's call
arranged from its arguments by name, values for what they make (a view replayed on its base's
`meta['val']`, fresh memory laid out like a tensor), and the rewiring of an
auto_functionalized node's getitems onto the direct call of its op that replaces it, and the
custom op such a node calls (checked as the pass needs it)."""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch._higher_order_ops import auto_functionalize
from torch.fx import Graph, Node

from fxinplace._reinplace.errors import ReinplaceInputError


def custom_op_called(node: Node, hop: str) -> torch._ops.OpOverload:
    """The custom op an auto_functionalized(_v2) node calls; ReinplaceInputError naming the
    node when it calls no operator overload, or one torch cannot auto-functionalize."""
    where = f"node {node.name!r} ({hop})"
    if len(node.args) != 1 or not isinstance(node.args[0], torch._ops.OpOverload):
        raise ReinplaceInputError(
            f"{where}: only {hop} of an operator overload is supported, "
            f"got {node.args[0] if node.args else None!r}"
        )
    op = node.args[0]
    if not auto_functionalize.can_auto_functionalize(op):
        raise ReinplaceInputError(f"{where}: {op} cannot be auto-functionalized")
    return op


def view_val(view_op: Any, base: Node, args: tuple, kwargs: dict) -> Any:
    """`meta['val']` for a view node the rewrite inserts: the view replayed on its base's value."""
    base_val = base.meta.get("val")
    if not isinstance(base_val, torch.Tensor):
        return None
    try:
        return view_op(base_val, *args, **kwargs)
    except Exception:  # noqa: BLE001 - no value is better than a wrong one
        return None


def arrange(op: torch._ops.OpOverload, values: dict[str, Any]) -> tuple[list, dict]:
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


def like(t: torch.Tensor, device: Any) -> torch.Tensor:
    """Fresh memory laid out like `t` (offset included, as clone_preserve_strides does)."""
    needed = 1 + t.storage_offset() + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True))
    if any(s == 0 for s in t.shape):
        needed = t.storage_offset()
    buffer = torch.empty(needed, dtype=t.dtype, device=device)
    return buffer.as_strided(t.shape, t.stride(), t.storage_offset())


# An auto_functionalized node (v1 or v2) called in place becomes a direct call of its op:
#   af = auto_functionalized(op, x=a, ...); y = getitem(af, 0); a2 = getitem(af, 1)
#   -> y = op(a, ...) ; users of a2 read a
# Its value is a tuple: the op's own outputs, then the written arguments' new values.


def give_direct_call_its_value(node: Node, direct: Node, op: torch._ops.OpOverload) -> None:
    """The direct call's `meta['val']`: the leading items of the replaced node's value."""
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        n = len(op._schema.returns)
        direct.meta["val"] = None if n == 0 else val[0] if n == 1 else tuple(val[:n])


def replace_node(graph: Graph, old: Node, new: Any, replaced: dict[Node, Any]) -> None:
    """Users of `old` read `new`; `old` goes (`replaced` records it)."""
    old.replace_all_uses_with(new)
    replaced[old] = new
    graph.erase_node(old)


def replace_output_getitem(
    graph: Graph, user: Node, direct: Node, op: torch._ops.OpOverload, replaced: dict[Node, Any]
) -> None:
    """`getitem(node, k)` of the op's own k-th output: the direct call itself (one output), a
    getitem of it (several), or nothing (an op that returns nothing)."""
    returns = op._schema.returns
    if not returns:
        graph.erase_node(user)
        replaced[user] = direct
        return
    if len(returns) == 1:
        replace_node(graph, user, direct, replaced)
        return
    with graph.inserting_after(direct):
        replacement = graph.call_function(operator.getitem, (direct, user.args[1]))
    replacement.meta.update(user.meta)
    replace_node(graph, user, replacement, replaced)
