"""
The functionalization kernels behind fxinplace's own dispatch key.
"""

from __future__ import annotations
import collections.abc
import torch
import typing

__all__: list[str] = [
    "Region",
    "alias_group",
    "dispatch_key",
    "eager_geometry",
    "from_current_region",
    "is_functional",
    "joined_base",
    "left_behind",
    "mutated",
    "reapply_views",
    "region_active",
    "register",
    "resized_base_sizes",
    "set_auto_functionalize_hook",
    "share_inputs",
    "storage_changed",
    "storage_span",
    "storage_span_value",
    "unwrap",
    "wrap",
    "written_with_grad",
]

class Region:
    def __enter__(self) -> None: ...
    def __exit__(self, *args) -> None: ...
    def __init__(self, arg0: bool) -> None: ...

def alias_group(arg0: torch.Tensor) -> int:
    """
    An id of the functional tensor's alias group (the tensors over one storage).
    """

def dispatch_key() -> str: ...
def eager_geometry(arg0: torch.Tensor, arg1: torch.Tensor) -> tuple | None:
    """
    Where eager leaves an input in its storage (size, stride, storage_offset) when in-place view ops (t_, unsqueeze_) or resizing (resize_, out=) changed its metadata; None otherwise. `original` is the input's base as it entered (the input, or the flat base of inputs sharing a storage).
    """

def from_current_region(arg0: torch.Tensor) -> bool: ...
def is_functional(arg0: torch.Tensor) -> bool: ...
def joined_base(t: torch.Tensor) -> torch.Tensor | None:
    """
    The flat base an input's set was joined over (the unwrapped value it started as), or None while its inputs are separate.
    """

def left_behind(t: torch.Tensor, reapply_views: bool) -> list:
    """
    What the memory of the input's alias group holds at each layout its base left, oldest first, as (geometry, value): each time a resize replaced the base after a write, eager's geometry of the base before (sizes, strides, storage offset) and its value then; without a resize, (None, the written base at the input's own geometry) where it was written. Written back before the input's final value, they restore the memory an in-place view op or a shrinking resize left the input off.
    """

def mutated(arg0: torch.Tensor) -> bool: ...
def reapply_views() -> bool: ...
def region_active() -> bool: ...
def register() -> None:
    """
    Registers the functionalization fallback on its dispatch key (once; errors if the key is taken).
    """

def resized_base_sizes(arg0: torch.Tensor) -> list[int | torch.SymInt] | None:
    """
    The sizes of the input's base after resize_/out= resized it (None if it was not resized): the input is resized to them first, so its storage grows as in eager.
    """

def set_auto_functionalize_hook(arg0: typing.Any) -> None: ...
def share_inputs(
    wrapped: collections.abc.Sequence[torch.Tensor], originals: collections.abc.Sequence[torch.Tensor]
) -> None:
    """
    Inputs that share one storage (or one input with gaps), each already wrapped: joined into one alias group where the sharing shows (see csrc/functionalize/input_alias_set.h).
    """

def storage_changed(arg0: torch.Tensor) -> bool:
    """
    Whether set_() pointed the tensor at another tensor's storage.
    """

def storage_span(t: torch.Tensor) -> tuple | None:
    """
    The memory an input's writes may have reached beyond its own elements, as (numel, storage offset, grown), or None: a joined input set that as_strided addressed (its flat base, from offset 0), or an input's group whose storage an out=/resize_ of a view grew (grown: from the base's offset, maybe past the storage the input came with).
    """

def storage_span_value(t: torch.Tensor, reapply_views: bool) -> torch.Tensor:
    """
    The value of the memory storage_span describes, flat.
    """

def unwrap(arg0: torch.Tensor, arg1: bool) -> torch.Tensor: ...
def wrap(t: torch.Tensor, eager_layout: bool = False) -> torch.Tensor:
    """
    Wraps t in a new functional tensor; eager_layout: t is laid out as eager lays it out (an input).
    """

def written_with_grad(arg0: torch.Tensor) -> bool:
    """
    Whether some write into the tensor's alias group happened with grad mode on.
    """
