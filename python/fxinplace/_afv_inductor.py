"""The planner's decision on an auto_functionalized(_v2) node, for Inductor: the node
stays as it is and `meta["only_clone_these_tensors"]` lists what must still be cloned,
which Inductor's `decompose_auto_functionalized` reads when it expands the node into
clones and the mutable op (a base not cloned is written in place and returned as is)."""

from __future__ import annotations

from torch.fx import GraphModule, Node

from fxinplace._afv1_node import AFv1Call
from fxinplace._afv2_node import AFv2Call


def mark_clones_for_inductor(node: Node, call: AFv1Call | AFv2Call, in_place: list[bool]) -> None:
    """`in_place[k]`: the planner's slot k is written in place. v2 lists base indices,
    v1 argument names (written lists stay cloned: they have no slot)."""
    if isinstance(call, AFv1Call):
        written = {name for name, done in zip(call.slot_args, in_place, strict=True) if done}
        node.meta["only_clone_these_tensors"] = [
            name
            for name, arg in call.mutable
            if arg is not None and name not in written and name not in call.not_cloned
        ]
        return
    slot_bases = [j for j, b in enumerate(call.bases) if b is not None]
    written = {j for j, done in zip(slot_bases, in_place, strict=True) if done}
    node.meta["only_clone_these_tensors"] = [j for j in call.cloned if j not in written]


def with_clones_in_kwargs(gm: GraphModule) -> GraphModule:
    """A copy of `gm` in which each auto_functionalized(_v2) node states what it clones in
    its own kwargs (`_only_clone_these_tensors` / `_only_clone_these_bases`) rather than in
    Inductor's meta: the form `fxinplace.check_reinplaced` models."""
    from fxinplace._afv1_node import AFV1
    from fxinplace._afv2_node import AFV2
    from fxinplace._checker import copy_functional

    copy = copy_functional(gm)
    for node in copy.graph.nodes:
        only = node.meta.get("only_clone_these_tensors")
        if only is None or node.target not in (AFV1, AFV2):
            continue
        key = "_only_clone_these_bases" if node.target is AFV2 else "_only_clone_these_tensors"
        node.kwargs = {**node.kwargs, key: tuple(only)}
    copy.recompile()
    return copy
