"""Where an input of ``fxinplace.functionalize`` lies in its storage, in eager's terms.

Sizes, strides and storage offsets as plain values or SymInts: under a symbolic trace only
the inputs' own geometry is a graph input, never their storage's size.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.multiprocessing.reductions import StorageWeakRef

from fxinplace._C import functionalize as kernels

__all__ = [
    "contiguous_strides",
    "extent",
    "geometry_of",
    "geometry_extent",
    "metadata_change",
    "provably_contiguous",
    "repeats_memory",
    "storage_key",
]


def storage_key(t: torch.Tensor) -> object | None:
    try:
        return StorageWeakRef(t.untyped_storage())
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less layouts
        return None


def geometry_extent(size: Any, stride: Any, storage_offset: Any) -> Any:
    """Storage elements from the storage's start that a tensor of this geometry can address."""
    if any(s == 0 for s in size):
        return 0  # addresses nothing, whatever its offset (x0[1:3] of an empty x0 lies past its storage)
    return storage_offset + 1 + sum((s - 1) * st for s, st in zip(size, stride, strict=True))


def repeats_memory(geometry: tuple[Any, Any, Any]) -> bool:
    """Eager's internal overlap: a dim of size > 1 with stride 0 (an expanded tensor)."""
    size, stride, _ = geometry
    return all(s != 0 for s in size) and any(st == 0 and s > 1 for s, st in zip(size, stride, strict=True))


def contiguous_strides(sizes: list[Any]) -> list[Any]:
    """A contiguous tensor's strides for ``sizes``, computed rather than read off a meta
    tensor: under make_fx a torch.empty would be traced into the graph."""
    strides, inner = [], 1
    for size in reversed(sizes):
        strides.insert(0, inner)
        # (torch's strides step over a size-0 dim as over a size-1 one)
        inner = inner * (size if statically_known_true(size != 0) else torch.sym_max(size, 1))
    return strides


def provably_contiguous(sizes: list[Any], strides: list[Any]) -> bool:
    """Whether a tensor of this geometry is contiguous, known without a guard (a guard
    would bake this trace's sizes into a symbolic graph). A size-1 dim's stride is free."""
    return all(
        statically_known_true(size == 1) or statically_known_true(stride == want)
        for size, stride, want in zip(sizes, strides, contiguous_strides(sizes), strict=True)
    )


def extent(t: torch.Tensor) -> Any:
    """``geometry_extent`` of ``t``, from the tensor's own geometry rather than its storage's
    size: under symbolic tracing only the inputs' sizes and strides are graph inputs."""
    return geometry_extent(t.shape, t.stride(), t.storage_offset())


def geometry_of(t: torch.Tensor) -> tuple[list[Any], list[Any], Any]:
    return list(t.shape), list(t.stride()), t.storage_offset()


def metadata_change(original: torch.Tensor, functional: torch.Tensor) -> tuple[Any, Any, Any] | None:
    """Where t_()/unsqueeze_()/resize_()/out= resizing left an input in its storage, as
    (size, stride, storage_offset); None where its metadata did not change."""
    shared_base = kernels.joined_base(functional)
    geometry = kernels.eager_geometry(functional, original if shared_base is None else shared_base)
    # An aliased input is a view of the shared base from the start; an in-place view op
    # may leave an input where it was (squeeze_ of one with no size-1 dim, t_().t_()):
    # a second write-back after the storage's would copy the input onto itself.
    if geometry is not None and tuple(geometry) == geometry_of(original):
        return None
    return geometry
