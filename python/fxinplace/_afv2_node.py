"""Reading an `auto_functionalized_v2` (AFv2) node, once.

`torch.ops.higher_order.auto_functionalized_v2(op, **kwargs)` runs a mutable custom op
functionally: it clones each base in `_all_bases`, regenerates the op's mutated
arguments as views of the clones, calls the op and returns `(*op_outputs, *new_bases)`.
`_only_clone_these_bases` (None: all) restricts the cloning; a base not cloned is
mutated in place and returned as is. The view encoding in the kwargs is torch's own
(`read_view_information_from_args`), decoded here by torch's reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch._higher_order_ops import auto_functionalize as afv2_impl
from torch.fx import Node

from fxinplace._errors import ReinplaceInputError
from fxinplace._torch_compat import has_out_semantics

AFV2 = torch.ops.higher_order.auto_functionalized_v2

# Keys of an AFv2 node's kwargs that are not arguments of the op.
_RESERVED = ("_all_bases", "_only_clone_these_bases", "_op_schema")


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
    if len(node.args) != 1 or not isinstance(node.args[0], torch._ops.OpOverload):
        raise ReinplaceInputError(
            f"{where}: only auto_functionalized_v2 of an operator overload is supported, "
            f"got {node.args[0] if node.args else None!r}"
        )
    op = node.args[0]
    if not afv2_impl.can_auto_functionalize(op):
        raise ReinplaceInputError(f"{where}: {op} cannot be auto-functionalized")
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
