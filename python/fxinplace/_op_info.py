"""Per-operator facts (view kind, in-place sibling, ...) read natively from schemas, cached."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import torch

from fxinplace import _C

# The four view ops whose `*_scatter` inverse functionalization emits.
SCATTER_KINDS: dict[Any, int] = {
    torch.ops.aten.select_scatter.default: 1,
    torch.ops.aten.slice_scatter.default: 2,
    torch.ops.aten.diagonal_scatter.default: 3,
    torch.ops.aten.as_strided_scatter.default: 4,
}
SCATTER_VIEWS: dict[Any, Any] = {
    torch.ops.aten.select_scatter.default: torch.ops.aten.select.int,
    torch.ops.aten.slice_scatter.default: torch.ops.aten.slice.Tensor,
    torch.ops.aten.diagonal_scatter.default: torch.ops.aten.diagonal.default,
    torch.ops.aten.as_strided_scatter.default: torch.ops.aten.as_strided.default,
}

# Ops that return their (first) input itself although their schema, and their
# fake kernel, say the result is fresh: waiting on a collective hands back the
# very buffer the collective wrote. They are views of their input to the pass.
RETURNS_ITS_INPUT = {torch.ops._c10d_functional.wait_tensor.default}

# Ops whose result shares its input's memory at run time although their schema
# does not say so; the metadata pass runs them (or, for RETURNS_ITS_INPUT, passes
# the input through) instead of trusting `meta['val']`.
ALIASING_WITHOUT_ANNOTATION = {torch.ops.aten._unsafe_view.default, *RETURNS_ITS_INPUT}

# Elementwise in effect though not tagged pointwise: reading self's own memory
# through an identically laid-out alias is safe for them.
ELEMENTWISE_UNTAGGED = {torch.ops.aten.copy.default}

VIEW_NONE, VIEW_SINGLE, VIEW_MULTI = 0, 1, 2

# Views whose result is the same logical elements for any input strides and
# offset, so moving their input into another buffer (re-inplacing) is invisible
# to them. Every other view is assumed to depend on the layout (`view` may fail
# on other strides; `as_strided` addresses absolute storage offsets).
LOGICAL_VIEWS = {
    f"aten::{name}"
    for name in (
        "select slice narrow t transpose permute unsqueeze squeeze expand expand_as diagonal "
        "unbind split split_with_sizes chunk tensor_split alias detach unfold movedim swapaxes "
        "swapdims lift_fresh real imag"
    ).split()
}
LAYOUT_LOGICAL, LAYOUT_RESHAPE, LAYOUT_STRIDES, LAYOUT_ABSOLUTE = 0, 1, 2, 3
RESHAPE_OPS = {"aten::view", "aten::_reshape_alias", "aten::reshape", "aten::_unsafe_view"}
ABSOLUTE_LAYOUT_OPS = {torch.ops.aten.as_strided.default, torch.ops.aten.as_strided_scatter.default}


@dataclass(frozen=True)
class OpInfo:
    view: int
    self_is_tensor: bool
    mutates: bool
    pointwise: bool
    first_arg_name: str
    inplace: torch._ops.OpOverload | None
    scatter_kind: int
    is_resize: bool
    aliases_without_annotation: bool
    returns_its_input: bool
    layout_use: int


# Keyed by id(): OpOverload's __hash__ runs in Python and this is the hot path.
# The value holds the target, so the id cannot be reused while cached.
_cache: dict[int, tuple[Any, OpInfo]] = {}


def op_info(target: torch._ops.OpOverload) -> OpInfo:
    hit = _cache.get(id(target))
    if hit is None:
        hit = _cache[id(target)] = (target, _read(target))
    return hit[1]


def _read(target: torch._ops.OpOverload) -> OpInfo:
    schema = target._schema
    facts = _C.op_facts(schema.name, schema.overload_name)
    inplace = None
    if facts["has_inplace"]:
        namespace, name = schema.name.split("::", 1)
        packet = getattr(getattr(torch.ops, namespace), name + "_")
        inplace = getattr(packet, facts["inplace_overload"] or "default")
    returns_its_input = target in RETURNS_ITS_INPUT
    return OpInfo(
        view=VIEW_SINGLE if returns_its_input else facts["view"],
        self_is_tensor=facts["self_is_tensor"],
        mutates=facts["mutates"],
        pointwise=facts["pointwise"] or target in ELEMENTWISE_UNTAGGED,
        first_arg_name=facts["first_arg_name"],
        inplace=inplace,
        scatter_kind=SCATTER_KINDS.get(target, 0),
        is_resize=target is torch.ops.aten.resize.default,
        aliases_without_annotation=target in ALIASING_WITHOUT_ANNOTATION,
        returns_its_input=returns_its_input,
        layout_use=_layout_use(target, facts["view"]),
    )


def _layout_use(target: torch._ops.OpOverload, view: int) -> int:
    name = target._schema.name
    if target in ABSOLUTE_LAYOUT_OPS:
        return LAYOUT_ABSOLUTE
    if name in RESHAPE_OPS and target._schema.overload_name in ("", "default"):
        return LAYOUT_RESHAPE
    if view != VIEW_NONE and name not in LOGICAL_VIEWS:
        return LAYOUT_STRIDES
    return LAYOUT_LOGICAL


def is_getitem(target: Any) -> bool:
    return target is operator.getitem
