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
from torch.multiprocessing.reductions import StorageWeakRef
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


def _storage_key(t: torch.Tensor) -> object | None:
    try:
        return StorageWeakRef(t.untyped_storage())
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less layouts
        return None


def _shared_storage_groups(flat_args: list[Any]) -> list[list[int]]:
    """Indices of tensor inputs that share a storage (same dtype), in groups of two or more."""
    groups: dict[object, list[int]] = {}
    for i, a in enumerate(flat_args):
        if isinstance(a, torch.Tensor):
            key = _storage_key(a)
            if key is not None:
                groups.setdefault(key, []).append(i)
    return [g for g in groups.values() if len(g) > 1 and len({flat_args[i].dtype for i in g}) == 1]


def _wrap_inputs(flat_args: list[Any], reapply_views: bool) -> tuple[list[Any], set[int]]:
    """Functional tensors for the inputs, and which inputs alias another input.

    Inputs that share a storage (``f(x, x)``, ``f(x, x[1:])``) must see each
    other's writes, as in eager. They become views of one base: the whole
    storage, seen through the first of them (a flat ``as_strided``), each input
    then ``as_strided`` of it at its own geometry. Runs inside the region, so
    those views are recorded by the fallback.
    """
    wrapped = [_C._fz_wrap(a) if isinstance(a, torch.Tensor) else a for a in flat_args]
    aliased: set[int] = set()
    for group in _shared_storage_groups(flat_args):
        first = flat_args[group[0]]
        numel = first.untyped_storage().nbytes() // first.element_size()
        whole = torch.as_strided if reapply_views else torch.ops.aten.as_strided_copy.default
        base = _C._fz_wrap(whole(first, (numel,), (1,), 0))
        for i in group:
            a = flat_args[i]
            wrapped[i] = torch.as_strided(base, a.size(), a.stride(), a.storage_offset())
        aliased.update(group)
    return wrapped, aliased


def _write_back(
    original: torch.Tensor, functional: torch.Tensor, reapply_views: bool, aliased: bool
) -> Callable[[], None] | None:
    """Computes what ``original`` must become; returns the write-back to run after the region."""
    if aliased:
        # A view of the shared base from the start: copy its final value back.
        if not _C._fz_mutated(functional):
            return None
        new_value = _C._fz_unwrap(functional, reapply_views)
        return lambda: original.copy_(new_value)
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
        with _C._FunctionalizeRegion(reapply_views):
            wrapped, aliased = _wrap_inputs(flat_args, reapply_views)
            w_args, w_kwargs = tree_unflatten(wrapped, spec)
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
            # One write-back per tensor object: f(x, x) writes x once.
            first_index = {id(a): i for i, a in reversed(list(enumerate(flat_args)))}
            write_backs = [
                _write_back(original, functional, reapply_views, i in aliased)
                for i, (original, functional) in enumerate(zip(flat_args, wrapped, strict=True))
                if isinstance(original, torch.Tensor) and first_index[id(original)] == i
            ]
        for write_back in write_backs:
            if write_back is not None:
                write_back()
        return tree_unflatten(unwrapped, out_spec)

    return functionalized
