"""Emitting ``auto_functionalized_v2`` for custom ops that mutate their arguments.

The C++ fallback (``csrc/functionalize/auto_functionalize.cpp``) hands over the
op, its unwrapped arguments, where each mutated argument sits in its base, and
the bases. ``auto_functionalized_v2`` is a Python higher-order op: called here,
under ``make_fx`` it is recorded as one node (which Inductor and
``fxinplace.reinplace`` understand); in eager it clones the bases, regenerates
the views and runs the op on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

# (base index, size, stride, storage offset) of one mutated tensor.
MutatedView = tuple[int, list[int], list[int], int]


def _slice_of_base(view: MutatedView, base: torch.Tensor) -> tuple[int, int, int] | None:
    """(dim, start, end) when ``view`` is ``base.slice(dim, start, end)``."""
    _, size, stride, offset = view
    if list(stride) != list(base.stride()) or len(size) != base.dim():
        return None
    differing = [d for d in range(base.dim()) if size[d] != base.size(d)]
    if len(differing) != 1:
        return None
    dim = differing[0]
    delta = offset - base.storage_offset()
    if base.stride(dim) == 0 or delta % base.stride(dim) != 0:
        return None
    start = delta // base.stride(dim)
    if start < 0 or start + size[dim] > base.size(dim):
        return None
    return dim, start, start + size[dim]


def _encode(kwargs: dict[str, Any], prefix: str, view: MutatedView, bases: Sequence[torch.Tensor]) -> None:
    base_index, size, stride, offset = view
    base = bases[base_index]
    kwargs[f"{prefix}_base_index"] = base_index
    if (
        list(size) == list(base.size())
        and list(stride) == list(base.stride())
        and offset == base.storage_offset()
    ):
        return
    sliced = _slice_of_base(view, base)
    if sliced is not None:
        kwargs[f"{prefix}_slice_dim"], kwargs[f"{prefix}_slice_start"], kwargs[f"{prefix}_slice_end"] = sliced
        return
    kwargs[f"{prefix}_size"] = list(size)
    kwargs[f"{prefix}_stride"] = list(stride)
    kwargs[f"{prefix}_storage_offset"] = offset


def call_auto_functionalized_v2(
    qualified_name: str,
    overload: str,
    args: list[Any],
    mutated: list[list[MutatedView]],
    bases: list[torch.Tensor],
) -> list[Any]:
    """Runs the op functionally; returns ``[*op_results, *new_bases]``."""
    namespace, name = qualified_name.split("::")
    op = getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")
    kwargs: dict[str, Any] = {}
    written = 0
    for arg, value in zip(op._schema.arguments, args, strict=True):
        if arg.alias_info is None or not arg.alias_info.is_write:
            kwargs[arg.name] = value
            continue
        views = mutated[written]
        written += 1
        if isinstance(arg.type, torch.ListType):
            kwargs[f"_{arg.name}_length"] = len(views)
            for i, view in enumerate(views):
                _encode(kwargs, f"_{arg.name}_{i}", view, bases)
        elif views:
            _encode(kwargs, f"_{arg.name}", views[0], bases)
        else:
            kwargs[f"_{arg.name}_base_index"] = None
    kwargs["_all_bases"] = list(bases)
    out = torch.ops.higher_order.auto_functionalized_v2(op, **kwargs)
    num_returns = len(op._schema.returns)
    # An op returning () still leaves one (None) slot before the new bases.
    results = list(out[:num_returns])
    return results + list(out[max(num_returns, 1) :])
