"""Exact memory facts about small eager tensors, in bytes.

The random program generator only emits a write when eager PyTorch gives it one
meaning: the written-to tensor has no two elements at one address, and every
tensor the write reads either shares no byte with the written region or is
exactly that region (then each element is read before it is written). Views
that change the dtype (``x.view(torch.int32)``, ``torch.view_as_real``) mean
elements of different sizes share storage, so overlap is decided on byte
addresses, not element offsets. Tensors here are tiny; enumerating every
element is exact and cheap.
"""

from __future__ import annotations

import torch

__all__ = [
    "byte_addresses",
    "element_offsets",
    "injective",
    "read_ok",
    "same_region",
    "storage_id",
]


def storage_id(t: torch.Tensor) -> int:
    """Identity of ``t``'s StorageImpl (views share it; distinct empty storages do not)."""
    return t.untyped_storage()._cdata


def element_offsets(t: torch.Tensor) -> list[int]:
    """Storage offset, in elements of ``t.dtype``, of every element of ``t``."""
    offsets = [t.storage_offset()]
    for size, stride in zip(t.shape, t.stride(), strict=True):
        offsets = [o + i * stride for o in offsets for i in range(size)]
    return offsets if t.numel() else []


def byte_addresses(t: torch.Tensor) -> set[int]:
    """Every storage byte ``t``'s elements cover."""
    size = t.element_size()
    return {o * size + b for o in element_offsets(t) for b in range(size)}


def injective(t: torch.Tensor) -> bool:
    """No two elements of ``t`` share an address (an in-place op on ``t`` is defined)."""
    offsets = element_offsets(t)
    return len(set(offsets)) == len(offsets)


def same_region(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` address the same bytes element by element (dtype may differ, size may not)."""
    size = a.element_size()
    return (
        storage_id(a) == storage_id(b)
        and size == b.element_size()
        and a.shape == b.shape
        and a.storage_offset() * size == b.storage_offset() * size
        and all(sa * size == sb * size for sa, sb in zip(a.stride(), b.stride(), strict=True))
    )


def read_ok(written: torch.Tensor, read: torch.Tensor) -> bool:
    """Writing ``written`` while reading ``read`` has one meaning in eager."""
    if storage_id(written) != storage_id(read) or written.numel() == 0 or read.numel() == 0:
        return True
    if same_region(written, read):
        return True
    return byte_addresses(written).isdisjoint(byte_addresses(read))
