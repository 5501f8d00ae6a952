"""auto_functionalized_v2 (AFv2) nodes: reading one, what it returns while `metadata.propagate`
runs, and carrying out the planner's decision on it.

Reading, once. `torch.ops.higher_order.auto_functionalized_v2(op, **kwargs)` runs a mutable custom op
functionally: it clones each base in `_all_bases`, regenerates the op's mutated
arguments as views of the clones, calls the op and returns `(*op_outputs, *new_bases)`.
`_only_clone_these_bases` (None: all) restricts the cloning; a base not cloned is
mutated in place and returned as is. The view encoding in the kwargs is torch's own
(`read_view_information_from_args`), decoded here by torch's reader.

Metadata, without running the custom op: fresh tensors like the recorded outputs, and each
base's new value, which is the base itself when it is not cloned (the node writes it).

Applying the plan. Bases the planner let the op write in place stop being cloned: the node keeps
`_only_clone_these_bases` for the others, and users of such a base's new value
read the base. When no base is cloned any more and the node's users allow it, the
node becomes a direct call of the op on views of the bases.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch._higher_order_ops import auto_functionalize as afv2_impl
from torch.fx import GraphModule, Node

from fxinplace._reinplace.auto_functionalized.shared import MetadataStandIn, call_directly, new_value_getitems
from fxinplace._reinplace.auto_functionalized.shared import metadata_runners as stand_ins
from fxinplace._reinplace.errors import ReinplaceInputError
from fxinplace._reinplace.fx_edit import custom_op_called, like, replace_node, view_val
from fxinplace._torch_compat import has_out_semantics

AFV2 = torch.ops.higher_order.auto_functionalized_v2

# Keys of an AFv2 node's kwargs that are not arguments of the op.
_RESERVED = ("_all_bases", "_only_clone_these_bases", "_op_schema")

_aten = torch.ops.aten


# ----------------------------------------------------------------------------
# Reading the node


@dataclass
class AFv2Call:
    op: torch._ops.OpOverload
    bases: list[Node | None]
    cloned: tuple[int, ...]  # indices of the bases still cloned
    # Mutated argument name -> torch's ViewInfo (or a list of them, or None).
    views: dict[str, Any]
    others: dict[str, Any]  # the op's other arguments, by schema name
    num_outputs: int  # leading entries of the node's result that are the op's
    is_out: bool  # an out= op: AFv2 allocates its outputs, nothing is cloned

    def direct_reads(self) -> list[Node]:
        """The graph values the op reads directly (its non-mutated arguments)."""
        found: list[Node] = []
        for value in self.others.values():
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, Node):
                    found.append(v)
        return found

    def as_strided_bases(self) -> list[Node]:
        """The bases the op's arguments are views of through an as_strided encoding
        (`_x_size`, `_x_stride`, `_x_storage_offset`): they address the base's memory, not
        its logical elements, so the base must keep its layout."""
        infos = _flat(self.views.values())
        found = sorted({i.base_index for i in infos if isinstance(i, afv2_impl.AsStridedViewInfo)})
        return [self.bases[j] for j in found if self.bases[j] is not None]


def read_call(node: Node) -> AFv2Call:
    """Decode an AFv2 node; ReinplaceInputError naming it when it is malformed."""
    where = f"node {node.name!r} (auto_functionalized_v2)"
    op = custom_op_called(node, "auto_functionalized_v2")
    kwargs = dict(node.kwargs)
    bases = kwargs.get("_all_bases")
    if not isinstance(bases, (list, tuple)) or not all(b is None or isinstance(b, Node) for b in bases):
        raise ReinplaceInputError(f"{where}: _all_bases must be a list of graph values")
    bases = list(bases)
    only = kwargs.get("_only_clone_these_bases")
    if only is None:
        only = tuple(range(len(bases)))
    elif not isinstance(only, (list, tuple)) or not all(type(i) is int and 0 <= i < len(bases) for i in only):
        raise ReinplaceInputError(f"{where}: bad _only_clone_these_bases={only!r}")
    is_out = has_out_semantics(op)
    views: dict[str, Any] = {}
    if not is_out:
        names, types = afv2_impl.get_mutable_args(op)
        try:
            views = afv2_impl.read_view_information_from_args(names, types, kwargs, bases)
        except KeyError as e:
            raise ReinplaceInputError(f"{where}: missing view information {e}") from e
        for info in _flat(views.values()):
            if type(info.base_index) is not int or not 0 <= info.base_index < len(bases):
                raise ReinplaceInputError(
                    f"{where}: base index {info.base_index!r} is not an index into _all_bases"
                )
    names = {arg.name for arg in op._schema.arguments}
    others = {k: v for k, v in kwargs.items() if k in names and k not in views and k not in _RESERVED}
    num_outputs = len(op._schema.returns) if len(op._schema.returns) > 1 else 1
    return AFv2Call(op, bases, tuple(sorted(set(only))), views, others, num_outputs, is_out)


def _flat(values: Any) -> list:
    out: list = []
    for v in values:
        if isinstance(v, list):
            out.extend(x for x in v if x is not None)
        elif v is not None:
            out.append(v)
    return out


# ----------------------------------------------------------------------------
# What it returns while `metadata.propagate` runs


class _MetadataStandIn(MetadataStandIn):
    """Takes an AFv2 node's place while `metadata.propagate` runs: each base's new value is a
    fresh tensor laid out like the base, or the base itself when it is not cloned. Ops with
    out= semantics run torch's dense implementation on the meta or fake values.
    """

    op_name = "auto_functionalized_v2"

    def written_count(self, mutable_op: Any, kwargs: dict[str, Any]) -> int | None:
        return None if has_out_semantics(mutable_op) else len(kwargs.get("_all_bases") or [])

    def written_values(self, mutable_op: Any, kwargs: dict[str, Any]) -> list[Any]:
        only = kwargs.get("_only_clone_these_bases")
        return [
            b if b is None or (only is not None and i not in only) else like(b, b.device)
            for i, b in enumerate(kwargs.get("_all_bases") or [])
        ]

    def dense(self, mutable_op: Any, kwargs: dict[str, Any]) -> Any:
        # The dense implementation, not the operator: under FakeTensorMode the
        # operator's fake rule passes _only_clone_these_bases twice (torch 2.13).
        return afv2_impl.auto_functionalized_v2_dense(mutable_op, **kwargs)


def metadata_runners(gm: GraphModule, sample_args: tuple) -> dict[Node, Callable[..., Any]]:
    """What computes each AFv2 node's metadata (see _MetadataStandIn), for ``metadata.propagate``."""
    return stand_ins(gm, sample_args, AFV2, _MetadataStandIn)


# ----------------------------------------------------------------------------
# Carrying out the plan


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
    getitems = new_value_getitems(node, call, len(call.bases))
    if getitems is None or any(call.bases[j] is None for _, j in getitems):
        return False
    graph = gm.graph
    with graph.inserting_before(node):
        values: dict[str, Any] = dict(call.others)
        for name, view in call.views.items():
            if isinstance(view, list):
                values[name] = [_regenerate(graph, call.bases, v) for v in view]
            else:
                values[name] = _regenerate(graph, call.bases, view) if view is not None else None

    def replace_new_value(user: Node, j: int) -> None:
        # A base's new value: the base itself, written in place.
        replace_node(graph, user, call.bases[j], replaced)

    call_directly(graph, node, call, values, replace_new_value, replaced)
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
