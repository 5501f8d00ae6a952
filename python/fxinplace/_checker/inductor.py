"""How Inductor runs a node, for `check_reinplaced(compiler="inductor")`.

Part of the checker, independent of the pass: asked of Inductor itself (its
lowerings, fallbacks and decompositions), never of the planner's facts. The
answer feeds rule 5 of the checker (csrc/checker/inductor_contract.h):

* EXTERN: a library kernel or fallback (mm, convolution, custom ops,
  higher-order ops, ops with no lowering): its operands are realized buffers
  before it runs, so its reads are never fused into a later write;
* POINTWISE: generated code computing element e from element e of each
  operand (broadcast); for a write (`copy_`, `_foreach_*_`, a pointwise `op_`)
  the written element e comes from element e of its operands;
* ANY_INDEX: generated code that may read any element of its operands (flip,
  roll, a reduction, a gather); for a write, a scatter (`index_put_`).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from fxinplace import _C

_aten = torch.ops.aten
_prims = torch.ops.prims
_Code = _C.checker.CheckInductorCode

# Lowered to templates or extern kernels that realize their inputs, though not
# all are in Inductor's needs_realized_inputs (addmm and baddbmm are lowered by
# tuned_* kernels that realize theirs).
_MATMUL_LIKE = {
    getattr(getattr(_aten, name), overload)
    for name, overload in (
        ("mm", "default"),
        ("bmm", "default"),
        ("addmm", "default"),
        ("baddbmm", "default"),
        ("addmv", "default"),
        ("_int_mm", "default"),
        ("convolution", "default"),
        ("convolution_backward", "default"),
    )
    if hasattr(_aten, name)
}
# Generated code element for element though not tagged pointwise.
_INDEX_PRESERVING = {
    _aten.clone.default,
    _aten._to_copy.default,
    _aten.copy.default,
    _aten.copy_.default,
    _aten.alias.default,
    _aten.lift_fresh_copy.default,
    _prims.convert_element_type.default,
}


@functools.cache
def _tables() -> tuple[Any, Any, Any, Any]:
    from torch._inductor import lowering
    from torch._inductor.decomposition import select_decomp_table

    return lowering.lowerings, lowering.fallbacks, lowering.needs_realized_inputs, select_decomp_table()


def _is_foreach(target: torch._ops.OpOverload) -> bool:
    return target._schema.name.startswith("aten::_foreach_")


def inductor_code(target: Any, rule: Any) -> Any:
    """How Inductor runs a node of `target` (`rule`: its CheckWriteRule)."""
    if rule == _C.checker.CheckWriteRule.WRITE_BACK:
        # Functionalization's write-back: copy_ is generated (dst[i] = src[i]); resize_ and
        # as_strided_ read no values.
        return _Code.POINTWISE if target is _aten.copy_.default else _Code.EXTERN
    if rule == _C.checker.CheckWriteRule.CUSTOM_OP or not isinstance(target, torch._ops.OpOverload):
        return _Code.EXTERN
    lowerings, fallbacks, realized, decompositions = _tables()
    if target in fallbacks or target in realized or target in _MATMUL_LIKE:
        return _Code.EXTERN
    if target not in lowerings and target not in decompositions:
        return _Code.EXTERN  # an implicit fallback
    if torch.Tag.pointwise in target.tags or target in _INDEX_PRESERVING or _is_foreach(target):
        return _Code.POINTWISE
    return _Code.ANY_INDEX
