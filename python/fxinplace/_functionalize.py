"""``fxinplace.functionalize``: a drop-in for ``torch.func.functionalize``.

Tensors entering ``func`` are wrapped in fxinplace functional tensors; every
op on them goes to a C++ fallback on our own dispatch key (see
``csrc/functionalize/``), which re-issues it as functional ops on the
unwrapped values. Outputs are synced and unwrapped, and inputs that ``func``
mutated get the new value copied back (under ``make_fx`` these are the
trailing ``copy_`` into placeholders).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from fxinplace import _C
from fxinplace._afv2_call import call_auto_functionalized_v2

__all__ = ["functionalize", "DISPATCH_KEY"]

_C._fz_register()
_C._fz_set_auto_functionalize_hook(call_auto_functionalized_v2)

#: The dispatch key our fallback owns (see ``csrc/functionalize/dispatch_key.h``).
DISPATCH_KEY: str = _C._fz_dispatch_key()

_REMOVE_MODES = {"mutations": True, "mutations_and_views": False}


def _check_not_nested(flat_args: list[Any]) -> None:
    if _C._fz_region_active():
        raise RuntimeError("fxinplace.functionalize cannot be nested inside another fxinplace.functionalize")
    if torch._C._are_functorch_transforms_active() or any(
        isinstance(a, torch.Tensor) and torch._is_functional_tensor(a) for a in flat_args
    ):
        raise RuntimeError(
            "fxinplace.functionalize cannot run inside torch.func.functionalize "
            "or another torch.func transform"
        )


def _write_back(
    original: torch.Tensor, functional: torch.Tensor, reapply_views: bool
) -> Callable[[], None] | None:
    """Computes what ``original`` must become; returns the write-back to run after the region."""
    geometry = _C._fz_inplace_view_geometry(functional, original)
    if geometry is None and not _C._fz_mutated(functional):
        return None
    new_value = _C._fz_unwrap(functional, reapply_views)

    def write_back() -> None:
        if geometry is not None:
            # t_()/unsqueeze_() on an input: eager changed its metadata too.
            original.as_strided_(*geometry)
        elif new_value.shape != original.shape:
            original.resize_(new_value.shape)
        original.copy_(new_value)

    return write_back


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """Returns ``func`` with mutations (and, with ``remove="mutations_and_views"``, views) removed.

    Same contract as ``torch.func.functionalize``: run it eagerly, or trace it with
    ``make_fx`` to record a functional graph.
    """
    if remove not in _REMOVE_MODES:
        raise ValueError(
            f"fxinplace.functionalize: remove must be 'mutations' or 'mutations_and_views', got {remove!r}"
        )
    reapply_views = _REMOVE_MODES[remove]

    @functools.wraps(func)
    def functionalized(*args: Any, **kwargs: Any) -> Any:
        flat_args, spec = tree_flatten((args, kwargs))
        _check_not_nested(flat_args)
        wrapped = [_C._fz_wrap(a) if isinstance(a, torch.Tensor) else a for a in flat_args]
        w_args, w_kwargs = tree_unflatten(wrapped, spec)
        with _C._FunctionalizeRegion(reapply_views):
            out = func(*w_args, **w_kwargs)
            flat_out, out_spec = tree_flatten(out)
            unwrapped = [
                _C._fz_unwrap(o, reapply_views)
                if isinstance(o, torch.Tensor) and _C._fz_is_functional(o)
                else o
                for o in flat_out
            ]
            # Every new input value first, then every copy_: the write-backs form
            # the graph's epilogue, with no compute between them.
            write_backs = [
                _write_back(original, functional, reapply_views)
                for original, functional in zip(flat_args, wrapped, strict=True)
                if isinstance(original, torch.Tensor)
            ]
        for write_back in write_backs:
            if write_back is not None:
                write_back()
        return tree_unflatten(unwrapped, out_spec)

    return functionalized
