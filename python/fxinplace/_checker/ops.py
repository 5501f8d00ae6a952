"""The checker's own operator tables: what it knows of an operator, written here
rather than read from the re-inplacing pass's operator facts, so that the checker
stays independent of what it checks (the pass's facts live in C++,
csrc/torch/op_facts.cpp; these agree with them, and test_check_ops.py compares)."""

from __future__ import annotations

from functools import cache
from typing import Any

import torch

from fxinplace._checker.refs import _is_write

_aten = torch.ops.aten
_AFV2 = torch.ops.higher_order.auto_functionalized_v2
_AFV1 = torch.ops.higher_order.auto_functionalized

_WRITE_BACK_OPS = (_aten.copy_.default, _aten.resize_.default, _aten.as_strided_.default)
# Ops that read only their operands' metadata: their results are checked as
# scalar arguments of the nodes that use them.
_METADATA_QUERIES = {
    _aten.sym_size.int,
    _aten.sym_stride.int,
    _aten.sym_numel.default,
    _aten.sym_storage_offset.default,
}
# Ops whose tensor operands contribute only their shape, dtype and layout.
_SHAPE_ONLY = {
    f"aten::{name}"
    for name in (
        "empty_like zeros_like ones_like full_like rand_like randn_like randint_like "
        "new_empty new_empty_strided new_zeros new_ones new_full"
    ).split()
}
# Ops that read only the shape of their `self` (fill's value is read).
_SHAPE_ONLY_SELF = {"aten::fill", "aten::zero"}
# The view each scatter writes its source through, taken on the scatter's result.
_SCATTER_VIEWS = {
    "aten::select_scatter": _aten.select.int,
    "aten::slice_scatter": _aten.slice.Tensor,
    "aten::diagonal_scatter": _aten.diagonal.default,
    "aten::as_strided_scatter": _aten.as_strided.default,
}
# Factories of a constant tensor, by schema name: the value every element holds (or the
# name of the argument that gives it). A memory plan writes one into a dead buffer as
# `fill_(d, value)`.
_CONSTANT_FACTORIES: dict[str, Any] = {
    **dict.fromkeys(("aten::zeros", "aten::zeros_like", "aten::new_zeros"), 0),
    **dict.fromkeys(("aten::ones", "aten::ones_like", "aten::new_ones"), 1),
    **dict.fromkeys(("aten::full", "aten::full_like", "aten::new_full"), "fill_value"),
    "aten::scalar_tensor": "s",
}
_CLONES = {"aten::clone", "aten::alias_copy", "aten::lift_fresh_copy", "aten::detach_copy"}
# Tensor-tensor overloads, by (schema name, overload name), whose two tensor operands
# commute, so that `b.foo_(a)` may stand for `foo(a, b)`. add.Tensor only without alpha
# (`commutative_pair` checks that nothing else is passed); sub, div, pow do not commute;
# the Scalar overloads have one tensor operand. Only ops with an in-place form `foo_`
# (maximum and minimum have none). eq and ne commute too but are not listed, as the
# pass's facts do not list them: a rewrite swapping their operands is not accepted.
_COMMUTATIVE = frozenset(
    {
        ("aten::add", "Tensor"),
        ("aten::mul", "Tensor"),
        ("aten::bitwise_and", "Tensor"),
        ("aten::bitwise_or", "Tensor"),
        ("aten::bitwise_xor", "Tensor"),
        ("aten::logical_and", ""),
        ("aten::logical_or", ""),
        ("aten::logical_xor", ""),
        ("aten::hypot", ""),
    }
)


# Ops returning booleans whose in-place form `foo_(a, ...)` stores those booleans converted
# to a's dtype (ATen's comparison and logical kernels), so that `a.ge_(b)` holds what the
# functional `_to_copy(ge(a, b), dtype=a.dtype)` computes (how functionalization records it).
_STORES_CONVERTED = frozenset(
    {
        "aten::eq",
        "aten::ne",
        "aten::lt",
        "aten::le",
        "aten::gt",
        "aten::ge",
        "aten::logical_and",
        "aten::logical_or",
        "aten::logical_xor",
    }
)


@cache
def _inductor_inplace_forms() -> dict:
    """The in-place ops Inductor provides where ATen has none (Inductor's own prims)."""
    from torch._inductor import inductor_prims

    return {_aten._unsafe_index_put.default: inductor_prims._unsafe_index_put_}


def _inplace_of(functional_target: Any, target: Any) -> bool:
    """Whether `target` is an in-place overload of `functional_target` (aten::foo_ of aten::foo,
    or the in-place form Inductor provides where ATen has none)."""
    if not isinstance(functional_target, torch._ops.OpOverload) or not isinstance(
        target, torch._ops.OpOverload
    ):
        return False
    if target._schema.name == functional_target._schema.name + "_":
        return True
    # Inductor's forms are prims (importing Inductor to look is not free).
    return target.namespace == "prims" and _inductor_inplace_forms().get(functional_target) is target


def _out_form_of(functional_target: Any, target: Any) -> bool:
    """Whether `target` is `foo.out` for the functional `foo`: the same operator, with one
    written, keyword-only argument."""
    if not isinstance(functional_target, torch._ops.OpOverload) or not isinstance(
        target, torch._ops.OpOverload
    ):
        return False
    if target._schema.name != functional_target._schema.name or target is functional_target:
        return False
    written = [a for a in target._schema.arguments if _is_write(a)]
    return len(written) == 1 and written[0].kwarg_only


def _is_foreach_inplace(target: Any) -> bool:
    """A `_foreach_*_` op: writes its first argument, a tensor list, element by element."""
    if not isinstance(target, torch._ops.OpOverload) or not target._schema.name.startswith("aten::_foreach_"):
        return False
    args = target._schema.arguments
    return bool(args) and _is_write(args[0]) and isinstance(args[0].type, torch.ListType)
