"""auto_functionalized (v1) nodes: reading one, what it returns while `metadata.propagate` runs,
and carrying out the planner's decision on it.

Reading, once. `torch.ops.higher_order.auto_functionalized(op, **kwargs)` runs a mutable custom op
functionally: `kwargs` holds every argument of the op by schema name; each argument
the schema marks written (`Tensor(a!)`, `Tensor(a!)?`, `Tensor(a!)[]`) is cloned
(`clone_preserve_strides`), the op runs on the clones, and the node returns
`(*op_outputs, *new value of each written argument, in schema order)` (a None argument
gives None, a list argument a list). `_only_clone_these_tensors` (None: all) names the
written arguments still cloned, as Inductor's re-inplacing leaves it; one not named is
mutated in place and returned as it is.

Unlike v2 the node names the arguments themselves, views included: a written view
(`x[0]`) is the op's own argument, and functionalization writes its new value back into
the base with a `*_scatter` after the node.

Metadata, without running the custom op: fresh tensors like the recorded outputs, and each
written argument's new value: a fresh tensor laid out like the argument (as
`clone_preserve_strides` makes it), or the argument itself when it is not cloned.

Applying the plan. The node becomes a direct call of its op, on each written argument itself
where the planner let the op write it in place, and on an explicit clone of it otherwise (what
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._higher_order_ops import auto_functionalize as af_impl
from torch.fx import Graph, GraphModule, Node

from fxinplace._reinplace.auto_functionalized.shared import MetadataStandIn, call_directly, new_value_getitems
from fxinplace._reinplace.auto_functionalized.shared import metadata_runners as stand_ins
from fxinplace._reinplace.errors import ReinplaceInputError
from fxinplace._reinplace.fx_edit import custom_op_called, like, replace_node

AFV1 = torch.ops.higher_order.auto_functionalized

_ONLY_CLONE = "_only_clone_these_tensors"

_aten = torch.ops.aten


# ----------------------------------------------------------------------------
# Reading the node


@dataclass
class AFv1Call:
    op: torch._ops.OpOverload
    # Each written argument in schema order: (name, a Node, a list of Nodes, or None).
    mutable: list[tuple[str, Any]]
    others: dict[str, Any]  # the op's other arguments, by schema name
    not_cloned: frozenset[str]  # written arguments outside _only_clone_these_tensors
    num_outputs: int  # leading entries of the node's result that are the op's
    # The op returns aliases of its arguments (an out= or in-place custom op): the
    # node is left alone, an opaque reader returning fresh tensors.
    aliased_returns: bool
    # Names of the written arguments that are write slots, in slot order (set by
    # `records` when it reads the node; the plan's slot k is slot_args[k]).
    slot_args: list[str] = field(default_factory=list)
    # Each written argument's (sizes, strides, storage offset) in the functional graph
    # (a list for a list argument; None where unknown or symbolic), also set by
    # `records`: the layout a clone of it must have.
    layouts: dict[str, Any] = field(default_factory=dict)

    def direct_reads(self) -> list[Node]:
        """The graph values the op reads directly (its non-written arguments)."""
        return _nodes(list(self.others.values()))

    def written(self) -> list[Node]:
        """The graph values of the written arguments, list elements included, in order."""
        return _nodes([value for _, value in self.mutable])


def read_v1_call(node: Node) -> AFv1Call:
    """Decode an auto_functionalized node; ReinplaceInputError naming it when it is malformed."""
    where = f"node {node.name!r} (auto_functionalized)"
    op = custom_op_called(node, "auto_functionalized")
    kwargs = dict(node.kwargs)
    schema_names = [arg.name for arg in op._schema.arguments]
    unknown = sorted(k for k in kwargs if k not in schema_names and k != _ONLY_CLONE)
    if unknown:
        raise ReinplaceInputError(f"{where}: {unknown} are not arguments of {op}")
    names, _ = af_impl.get_mutable_args(op)
    mutable: list[tuple[str, Any]] = []
    for name in names:
        if name not in kwargs:
            raise ReinplaceInputError(f"{where}: missing the written argument {name!r}")
        value = kwargs[name]
        if isinstance(value, (list, tuple)):
            if not all(isinstance(v, Node) for v in value):
                raise ReinplaceInputError(
                    f"{where}: written argument {name!r} must be a list of graph values"
                )
            value = list(value)
        elif value is not None and not isinstance(value, Node):
            raise ReinplaceInputError(
                f"{where}: written argument {name!r} must be a graph value, got {value!r}"
            )
        mutable.append((name, value))
    only = kwargs.get(_ONLY_CLONE)
    if only is None:
        not_cloned: frozenset[str] = frozenset()
    elif isinstance(only, (list, tuple)) and all(isinstance(n, str) for n in only):
        not_cloned = frozenset(n for n in names if n not in only)
    else:
        raise ReinplaceInputError(f"{where}: bad {_ONLY_CLONE}={only!r}")
    others = {k: v for k, v in kwargs.items() if k in schema_names and k not in names}
    returns = op._schema.returns
    aliased = any(r.alias_info is not None for r in returns)
    num_outputs = len(returns) if len(returns) > 1 else 1
    return AFv1Call(op, mutable, others, not_cloned, num_outputs, aliased)


def _nodes(values: list[Any]) -> list[Node]:
    found: list[Node] = []
    for value in values:
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, Node):
                found.append(v)
    return found


# ----------------------------------------------------------------------------
# What it returns while `metadata.propagate` runs


class _MetadataStandIn(MetadataStandIn):
    """Takes an auto_functionalized node's place while `metadata.propagate` runs: the new value
    of each written argument is a fresh tensor laid out like it (or the argument itself when
    it is not cloned). Ops whose outputs alias their arguments run torch's dense
    implementation on the meta or fake values.
    """

    op_name = "auto_functionalized"

    def written_count(self, mutable_op: Any, kwargs: dict[str, Any]) -> int | None:
        if any(r.alias_info is not None for r in mutable_op._schema.returns):
            return None
        return len(af_impl.get_mutable_args(mutable_op)[0])

    def written_values(self, mutable_op: Any, kwargs: dict[str, Any]) -> list[Any]:
        names, _ = af_impl.get_mutable_args(mutable_op)
        only = kwargs.get("_only_clone_these_tensors")
        return [
            kwargs[name] if only is not None and name not in only else _new_value(kwargs[name])
            for name in names
        ]

    def dense(self, mutable_op: Any, kwargs: dict[str, Any]) -> Any:
        return af_impl.auto_functionalized_dense(mutable_op, **kwargs)


def _new_value(arg: Any) -> Any:
    if isinstance(arg, torch.Tensor):
        return like(arg, arg.device)
    if isinstance(arg, (list, tuple)):
        return [_new_value(a) for a in arg]
    return arg


def metadata_runners(gm: GraphModule, sample_args: tuple) -> dict[Node, Callable[..., Any]]:
    """What computes each auto_functionalized node's metadata (see _MetadataStandIn)."""
    return stand_ins(gm, sample_args, AFV1, _MetadataStandIn)


# ----------------------------------------------------------------------------
# Carrying out the plan


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
    getitems = new_value_getitems(node, call, len(call.mutable))
    if getitems is None:
        return False
    for user, j in getitems:
        arg = call.mutable[j][1]
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

    def replace_new_value(user: Node, j: int) -> None:
        # A written argument's new value: the argument itself, written in place.
        new = values[call.mutable[j][0]]
        if isinstance(new, list):
            for item in list(user.users):
                replace_node(graph, item, new[item.args[1]], replaced)
            graph.erase_node(user)
        elif new is None:
            graph.erase_node(user)
        else:
            replace_node(graph, user, new, replaced)

    call_directly(graph, node, call, values, replace_new_value, replaced)


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
