"""Operator facts for the Python side: the native `_C.planner.op_facts` (everything the
planner asks of an operator lives there, in C++), plus the two answers that must
be Python objects: the in-place overload `foo_` that replaces `foo`, and the view
op a `*_scatter` inverts (for the view + copy_ rewrite)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from fxinplace import _C


@dataclass(frozen=True, slots=True)
class OpInfo:
    facts: _C.planner.OpFacts
    inplace: torch._ops.OpOverload | None
    inverted_view: torch._ops.OpOverload | None
    # The facts the per-node loops read, copied out of `facts` once per operator:
    # reading a bound C++ property costs far more than a Python attribute, and
    # these are read for every node of graphs with 100k nodes.
    mutates: bool
    passes_its_input_through: bool  # mutates (a write-back) or returns_its_input (wait_tensor)
    result_is_fresh: bool  # neither a view nor an alias the schema does not annotate
    keeps_self_geometry: bool  # fresh memory laid out as `self`, offset included
    single_view: bool  # returns one view of its first argument
    first_arg_name: str
    self_is_tensor: bool
    scatter: Any
    is_scatter: bool
    is_foreach: bool  # a `_foreach_*` op over a tensor list, with a `_foreach_*_` form
    commutative: bool  # foo(a, b) == foo(b, a) (add.Tensor: only without alpha)
    out: torch._ops.OpOverload | None  # `foo.out`, for an elementwise foo that has one
    out_arg_name: str
    # `foo.out` of foo.Tensor for `foo.Scalar` (add, sub, mul, div), which computes the same
    # values with the scalar passed as is (see OpFacts::tensor_sibling_out_overload)
    tensor_sibling_out: torch._ops.OpOverload | None
    tensor_sibling_out_arg_name: str


# Keyed by id(): OpOverload's __hash__ runs in Python and this is the hot path.
# The value holds the target, so the id cannot be reused while cached.
_cache: dict[int, tuple[Any, OpInfo]] = {}


def op_info(target: torch._ops.OpOverload) -> OpInfo:
    hit = _cache.get(id(target))
    if hit is None:
        hit = _cache[id(target)] = (target, _read(target))
    return hit[1]


def _overload(qualified_name: str, overload: str) -> torch._ops.OpOverload:
    namespace, name = qualified_name.split("::", 1)
    return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")


def _read(target: torch._ops.OpOverload) -> OpInfo:
    schema = target._schema
    facts = _C.planner.op_facts(schema.name, schema.overload_name)
    inplace = _overload(schema.name + "_", facts.inplace_overload) if facts.has_inplace else None
    inverted = _overload(*facts.inverted_view) if facts.scatter != _C.planner.ScatterKind.NONE else None
    out = _overload(schema.name, facts.out_overload) if facts.has_out else None
    sibling_out = (
        _overload(schema.name, facts.tensor_sibling_out_overload) if facts.has_tensor_sibling_out else None
    )
    return OpInfo(
        facts,
        inplace,
        inverted,
        mutates=facts.mutates,
        passes_its_input_through=facts.mutates or facts.returns_its_input,
        result_is_fresh=facts.view == _C.planner.ViewKind.NONE and not facts.aliases_without_annotation,
        single_view=facts.view == _C.planner.ViewKind.SINGLE and not facts.returns_its_input,
        keeps_self_geometry=facts.keeps_self_geometry,
        first_arg_name=facts.first_arg_name,
        self_is_tensor=facts.self_is_tensor,
        scatter=facts.scatter,
        is_scatter=facts.scatter != _C.planner.ScatterKind.NONE,
        is_foreach=facts.self_is_tensor_list and facts.has_inplace,
        commutative=facts.commutative,
        out=out,
        out_arg_name=facts.out_arg_name,
        tensor_sibling_out=sibling_out,
        tensor_sibling_out_arg_name=facts.tensor_sibling_out_arg_name,
    )
