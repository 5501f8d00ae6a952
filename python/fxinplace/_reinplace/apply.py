"""Carry the planner's decisions out on the fx.Graph, the way the stock pass edits it.

Nodes keep their names; users of a rewritten node read its replacement; a
scatter rewritten to `view + copy_` gets those two nodes inserted just before
it, created in graph order so FX gives them the same names the stock pass gets.
`meta['val']` of touched nodes is kept true: an in-place op returns its `self`.
"""

from __future__ import annotations

import torch
from torch.fx import GraphModule, Node

from fxinplace import _C
from fxinplace._reinplace.auto_functionalized.v1 import AFv1Call, apply_afv1, read_v1_call
from fxinplace._reinplace.auto_functionalized.v2 import AFv2Call, apply_afv2, read_call
from fxinplace._reinplace.fx_edit import view_val
from fxinplace._reinplace.inductor_policy import inductor_inplace_form, mark_clones_for_inductor
from fxinplace._reinplace.op_info import op_info

_INPLACE = _C.planner.Action.INPLACE
_SCATTER_TO_COPY = _C.planner.Action.SCATTER_TO_COPY


def apply_plan(
    gm: GraphModule,
    nodes: list[Node],
    plan: _C.planner.Plan,
    afv2_calls: dict[int, AFv2Call | AFv1Call],
    destinations: dict[int, list] | None = None,
    *,
    for_inductor: bool = False,
) -> None:
    """for_inductor: auto_functionalized(_v2) nodes keep their form and get Inductor's
    `meta["only_clone_these_tensors"]` (its `decompose_auto_functionalized` reads it);
    `_unsafe_index_put` becomes Inductor's `prims._unsafe_index_put_`."""
    graph = gm.graph
    changed = plan.changed()
    # Each decision's fields read once: a bound property read costs more than the edit.
    decisions = [plan.decision(i) for i in changed]
    replacement = {i: d.replacement for i, d in zip(changed, decisions, strict=True)}
    to_erase: list[Node] = []
    # Nodes an auto_functionalized(_v2) rewrite erased -> what holds their value now.
    erased: dict[Node, Node] = {}

    def live(k: int) -> Node:
        node = nodes[k]
        while node in erased:
            node = erased[node]
        return node

    for i, d in zip(changed, decisions, strict=True):
        node = nodes[i]
        call = afv2_calls.get(i)
        if call is not None and for_inductor:
            mark_clones_for_inductor(node, call, [s.in_place for s in d.slots])
            continue
        if isinstance(call, AFv1Call):
            # Read again: rewrites of earlier nodes changed its arguments.
            in_place = dict(zip(call.slot_args, [s.in_place for s in d.slots], strict=True))
            erased.update(apply_afv1(gm, node, read_v1_call(node), in_place, call.layouts))
            continue
        if call is not None:
            erased.update(apply_afv2(gm, node, read_call(node), [s.in_place for s in d.slots]))
            continue
        action = d.action
        if action == _INPLACE and op_info(node.target).is_foreach:
            erased.update(_foreach_in_place(graph, node))
            continue
        via = (destinations or {})[i][d.slot - 1][1] if action == _INPLACE and d.slot > 0 else None
        if via is not None and via != _C.planner.Destination.SELF:
            # The destination is the memory the planner chose (its replacement): the
            # operand named may be a getitem an earlier `_foreach_*_` rewrite erased, or
            # a scatter removed as a no-op, whose value lives elsewhere now.
            _write_into_another_operand(node, live(_final(i, replacement)), via)
            node.meta["val"] = live(replacement[i]).meta.get("val")
        elif action == _INPLACE:
            # Also `ge(a, b)` whose cast `_to_copy(ge, dtype=a.dtype)` goes (REMOVE_CAST):
            # `ge_(a, b)` stores the converted booleans itself.
            node.target = op_info(node.target).inplace or inductor_inplace_form(node.target)
            self_val = live(replacement[i]).meta.get("val")
            if self_val is not None:
                node.meta["val"] = self_val
        elif action == _SCATTER_TO_COPY:
            _insert_view_and_copy(graph, node)
            to_erase.append(node)
        else:  # REMOVE_SCATTER, REMOVE_COPY, REMOVE_CAST
            to_erase.append(node)
        node.replace_all_uses_with(live(_final(i, replacement)), propagate_meta=False)
    for node in reversed(to_erase):
        graph.erase_node(node)


def _final(i: int, replacement: dict[int, int | None]) -> int:
    """Follow replacements to the node that really holds the value."""
    nxt = replacement.get(i)
    while nxt is not None and nxt != i:
        i = nxt
        nxt = replacement.get(i)
    return i


def _write_into_another_operand(node: Node, target: Node, via: _C.planner.Destination) -> None:
    """`foo(a, b)` with `b` dead afterwards (and `a` not): `b.foo_(a)` for a commutative foo
    (SWAPPED), or `foo.out(a, b, out=b)` (OUT). Elementwise either way: each element of `b` is
    read before it is written, which out= and in-place kernels allow for exactly `b`'s elements."""
    info = op_info(node.target)
    if via == _C.planner.Destination.SWAPPED:
        node.target = info.inplace
        node.args = (node.args[1], node.args[0])
    else:
        node.target = info.out
        node.kwargs = {**node.kwargs, info.out_arg_name: target}


def _foreach_in_place(graph: torch.fx.Graph, node: Node) -> dict[Node, Node]:
    """`ys = _foreach_add(xs, 1); y0 = ys[0]` -> `_foreach_add_(xs, 1)`, users of `y0` read `xs[0]`.

    The in-place form returns nothing: each getitem of the result goes, its users
    reading the list element it now lives in (earlier rewrites already updated the list's
    nodes, as they did every user's arguments). Returns erased getitem -> that element.
    """
    self_list = node.args[0] if node.args else node.kwargs[op_info(node.target).facts.first_arg_name]
    node.target = op_info(node.target).inplace
    node.meta["val"] = None
    moved: dict[Node, Node] = {}
    for user in list(node.users):
        element = self_list[user.args[1]]
        user.replace_all_uses_with(element, propagate_meta=False)
        graph.erase_node(user)
        moved[user] = element
    return moved


def _insert_view_and_copy(graph: torch.fx.Graph, node: Node) -> None:
    """`x_scatter(base, src, *args)` -> `view(base, *args).copy_(src)`, just before it."""
    view_op = op_info(node.target).inverted_view
    base, src, rest = node.args[0], node.args[1], tuple(node.args[2:])
    with graph.inserting_before(node):
        view = graph.create_node("call_function", view_op, (base, *rest), node.kwargs)
        copy = graph.create_node("call_function", torch.ops.aten.copy_.default, (view, src), {})
    val = view_val(view_op, base, rest, dict(node.kwargs))
    if val is not None:
        view.meta["val"] = val
        copy.meta["val"] = val
