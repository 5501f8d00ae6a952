"""What the plan's graph edits (`apply`, `auto_functionalized.v1`, `.v2`) share: an op's call
arranged from its arguments by name, and values for what they make: a view replayed on its
base's `meta['val']`, fresh memory laid out like a tensor."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node


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
