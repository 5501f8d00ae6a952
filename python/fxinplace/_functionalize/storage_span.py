"""Write-backs of memory an input's writes reached beyond its own elements.

``fxinplace.functionalize`` writes each input back over its own elements. Two kinds of
write land elsewhere in the storage, where the tensor the input was sliced from sees them:
as_strided through a set of inputs joined over their storage (between their elements), and
an ``out=`` argument that grew a view of an input past the input's last element.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import is_concrete_int, statically_known_true

from fxinplace._C import functionalize as kernels
from fxinplace._functionalize.input_geometry import (
    extent,
    geometry_of,
    metadata_change,
    provably_contiguous,
    storage_key,
)

__all__ = ["storage_write_backs"]


def storage_write_backs(
    inputs: list[tuple[torch.Tensor, torch.Tensor]], reapply_views: bool
) -> dict[int, tuple[torch.Tensor, Callable[[], None]]]:
    """Write-backs of memory an input's writes reached beyond its own elements, one per
    storage (keyed by it), each made through one of the inputs (returned with it), which its
    own write-back then puts back in its place:

    * a joined input set that as_strided addressed: a write through it may land between the
      inputs' elements (``x.as_strided((2,), (1,)).mul_(3)`` of ``x = a[::2]`` writes ``a[1]``);
    * an input whose view an ``out=`` argument grew past the input's last element
      (``torch.mul(a3, 2, out=x[...])`` of ``x = t[1:-1]`` writes ``t[3]``).
    """
    whole: dict[int, tuple[torch.Tensor, Callable[[], None]]] = {}
    for original, functional in inputs:
        key = storage_key(original)
        if key in whole or kernels.storage_changed(functional):
            continue
        span = kernels.storage_span(functional)
        if span is None:
            continue
        numel, offset, grown = span
        resize = False
        if grown:
            within = _within_storage(original, numel, offset)
            if within is None:
                continue
            numel, resize = within
        if _covers(original, functional, numel, offset):
            continue
        value = kernels.storage_span_value(functional, reapply_views)
        if value.dtype != original.dtype:
            # The span is the first input's dtype; inputs sharing a storage have one element
            # size, so its bits are this input's elements (x1 = x0.view(torch.int32)).
            view_op = torch.ops.aten.view.dtype if reapply_views else torch.ops.aten.view_copy.dtype
            value = view_op(value, original.dtype)
        if not statically_known_true(value.numel() == numel):
            slice_op = torch.ops.aten.slice.Tensor if reapply_views else torch.ops.aten.slice_copy.Tensor
            value = slice_op(value, 0, 0, numel)
        recorded = kernels.written_with_grad(functional)

        def write_back(
            original: torch.Tensor = original,
            value: torch.Tensor = value,
            offset: Any = offset,
            recorded: bool = recorded,
            resize: bool = resize,
        ) -> None:
            # Through the input itself (the graph's epilogue writes placeholders only).
            with torch.set_grad_enabled(recorded and torch.is_grad_enabled()):
                if resize:
                    original.as_strided_((0,), (1,), offset)
                    original.resize_(value.shape)
                else:
                    original.as_strided_(value.shape, (1,), offset)
                original.copy_(value)

        whole[key] = (original, write_back)
    return whole


def _within_storage(original: torch.Tensor, numel: Any, offset: Any) -> tuple[Any, bool] | None:
    """How many elements of a span grown from ``offset`` to write back, and whether the input
    must be resized over them (growing its storage where eager grew it). Past the storage the
    input came with is memory no tensor of the caller shows, so a concrete span is cut there
    (a graph cannot resize a placeholder with symbolic sizes to concrete ones); a symbolic
    one is resized over whole, as eager does. None where neither is possible without a guard
    (which would bake this trace's sizes into a symbolic graph)."""
    if not is_concrete_int(numel):
        return numel, True
    nbytes = original.untyped_storage().nbytes()
    if is_concrete_int(nbytes) and is_concrete_int(offset):
        available = int(nbytes) // original.element_size() - int(offset)
        return (min(int(numel), available), False) if available > 0 else None
    return (numel, False) if statically_known_true(offset + numel <= extent(original)) else None


def _covers(original: torch.Tensor, functional: torch.Tensor, numel: Any, offset: Any) -> bool:
    """The input ends up exactly over the span (``numel`` elements from ``offset``), so its
    own write-back writes all of it. Only where that is known without a guard (otherwise
    the span is written back too: the same values twice, correct at every size)."""
    geometry = metadata_change(original, functional)
    sizes, strides, start = geometry if geometry is not None else geometry_of(original)
    return (
        statically_known_true(start == offset)
        and statically_known_true(math.prod(sizes) == numel)
        and provably_contiguous(sizes, strides)
    )
