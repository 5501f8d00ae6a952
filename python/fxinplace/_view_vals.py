"""`meta['val']` for view nodes the rewrite inserts: the view replayed on its base's value."""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node


def view_val(view_op: Any, base: Node, args: tuple, kwargs: dict) -> Any:
    base_val = base.meta.get("val")
    if not isinstance(base_val, torch.Tensor):
        return None
    try:
        return view_op(base_val, *args, **kwargs)
    except Exception:  # noqa: BLE001 - no value is better than a wrong one
        return None
