"""Reading an `auto_functionalized` (v1) node, once.

`torch.ops.higher_order.auto_functionalized(op, **kwargs)` runs a mutable custom op
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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch._higher_order_ops import auto_functionalize as af_impl
from torch.fx import Node

from fxinplace._errors import ReinplaceInputError

AFV1 = torch.ops.higher_order.auto_functionalized

_ONLY_CLONE = "_only_clone_these_tensors"


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
    # `_graph_records` when it reads the node; the plan's slot k is slot_args[k]).
    slot_args: list[str] = field(default_factory=list)
    # Each written argument's (sizes, strides, storage offset) in the functional graph
    # (a list for a list argument; None where unknown or symbolic), also set by
    # `_graph_records`: the layout a clone of it must have.
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
    if len(node.args) != 1 or not isinstance(node.args[0], torch._ops.OpOverload):
        raise ReinplaceInputError(
            f"{where}: only auto_functionalized of an operator overload is supported, "
            f"got {node.args[0] if node.args else None!r}"
        )
    op = node.args[0]
    if not af_impl.can_auto_functionalize(op):
        raise ReinplaceInputError(f"{where}: {op} cannot be auto-functionalized")
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
