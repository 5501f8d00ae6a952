"""Random programs on another device (a GPU): the same inputs with the same aliasing, and the
program's own tensors made there.

    with default_device("cuda"):
        report = check_compiled(on_device(program_for(seed), "cuda"))

``make_args`` still builds its inputs on the CPU (its generator is a CPU one, so the values
are the CPU run's); ``to_device_keeping_aliases`` then moves each storage once and rebuilds
every input as the same view of it (slices, transposes, dtype views, the same tensor twice,
conj bits), so a program's inputs alias each other on the device exactly as on the CPU.
Tensors the program itself makes (``torch.tensor([0, 2])``, ``torch.ones(3)``) follow the
default device, which ``default_device`` sets for the whole check (Dynamo guards on it).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.utils._pytree as pytree

__all__ = ["ProgramOnDevice", "default_device", "on_device", "to_device_keeping_aliases"]


def to_device_keeping_aliases(args: Any, device: str | torch.device) -> Any:
    """``args`` (any pytree) with every tensor on ``device``: one copy of each storage, each
    view rebuilt as the same view of its base's copy (so ``_base`` relations, which
    AOTAutograd reads to tell aliased inputs apart, stay), other tensors over the copied
    storage."""
    storages: dict[int, torch.UntypedStorage] = {}
    moved: dict[int, torch.Tensor] = {}

    def storage_copy(t: torch.Tensor) -> torch.UntypedStorage:
        storage = t.untyped_storage()
        key = storage.data_ptr() if storage.nbytes() else id(t)
        if key not in storages:
            raw = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)  # every byte
            storages[key] = raw.to(device, copy=True).untyped_storage()
        return storages[key]

    def rebuild(t: torch.Tensor) -> torch.Tensor:
        plain = t.detach()
        base = t._base
        if base is not None:
            b = move(base)
            try:
                b = b if b.dtype == t.dtype else b.view(t.dtype)
                r = b.as_strided(plain.size(), plain.stride(), plain.storage_offset())
            except RuntimeError:  # a dtype view of a base whose shape allows no other view
                base = None
        if base is None:
            r = torch.empty(0, dtype=t.dtype, device=device).set_(
                storage_copy(t), plain.storage_offset(), plain.size(), plain.stride()
            )
        if t.is_conj() != r.is_conj():
            r = r.conj()
        if t.is_neg() != r.is_neg():
            r = r._neg_view()
        return r.requires_grad_(t.requires_grad) if t.is_leaf and base is None else r

    def move(t: Any) -> Any:
        if not isinstance(t, torch.Tensor):
            return t
        if id(t) not in moved:
            moved[id(t)] = rebuild(t)
        return moved[id(t)]

    return pytree.tree_map(move, args)


@contextlib.contextmanager
def default_device(device: str | torch.device | None) -> Iterator[None]:
    """Tensors made without a device go to ``device`` inside (nothing changes for None)."""
    if device is None:
        yield
        return
    before = torch.get_default_device()
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(before)


@dataclasses.dataclass(frozen=True)
class ProgramOnDevice:
    """A random program whose inputs are moved to ``device``: what ``check_compiled`` reads of a
    ``RandomProgram`` (``seed``, ``sizes``, ``features``, ``fn``, ``make_args``, ``source``)."""

    program: Any  # a RandomProgram
    device: str

    @property
    def seed(self) -> int:
        return self.program.seed

    @property
    def sizes(self) -> tuple[int, int]:
        return self.program.sizes

    @property
    def features(self) -> frozenset[str]:
        return self.program.features

    @property
    def source(self) -> str:
        return f"# inputs moved to {self.device!r}, aliasing kept\n" + self.program.source

    @property
    def fn(self) -> Callable[..., Any]:
        return self.program.fn

    def make_args(self, n: int) -> Any:
        with torch.device("cpu"):
            args = self.program.make_args(n)
        return to_device_keeping_aliases(args, self.device)


def on_device(program: Any, device: str | None) -> Any:
    """``program`` itself for None or "cpu", else a ``ProgramOnDevice``."""
    return program if device in (None, "cpu") else ProgramOnDevice(program, device)
