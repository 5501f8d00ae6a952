"""The checker's shared small helpers: the enums and verdicts of the native half,
its own exceptions, a recorded operand (`_Ref`), and schema and value helpers the
other modules of `fxinplace._checker` use."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from fxinplace import _C

# Tuple layouts shared with csrc/python/checker_bindings.cpp; its enums.
_FILL = _C.checker.CheckEffect.FILL
_COPY = _C.checker.CheckEffect.COPY
_GROW = _C.checker.CheckEffect.GROW
_RULE_NONE = _C.checker.CheckWriteRule.NONE
_RULE_INPLACE = _C.checker.CheckWriteRule.INPLACE
_RULE_OUT = _C.checker.CheckWriteRule.OUT
_RULE_WRITE_BACK = _C.checker.CheckWriteRule.WRITE_BACK
_RULE_CUSTOM_OP = _C.checker.CheckWriteRule.CUSTOM_OP
_RULE_FOREACH = _C.checker.CheckWriteRule.FOREACH_INPLACE
_OK, _CANNOT_CHECK = _C.checker.CheckOutcome.OK, _C.checker.CheckOutcome.CANNOT_CHECK
# The checker's verdicts (csrc/checker/check_reasons.h): ReinplaceCheckError.reason is the name.
_REASON = _C.checker.CheckReason


class _CannotCheck(Exception):
    pass


class _FunctionalRaised(_CannotCheck):
    def __init__(self, message: str, node: str) -> None:
        super().__init__(message)
        self.node = node


@dataclass(frozen=True, eq=False)
class _Ref:
    """A tensor operand as it was when a node ran."""

    ref: tuple  # (storage, sizes, strides, offset, itemsize, dtype)
    source: str  # the fx node it came from
    tensor: torch.Tensor


_DTYPES: dict[torch.dtype, int] = {}


def _dtype_code(dtype: torch.dtype) -> int:
    return _DTYPES.setdefault(dtype, len(_DTYPES))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _op_name(target: Any) -> str:
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__name__", str(target))


def _is_write(arg: Any) -> bool:
    return arg.alias_info is not None and arg.alias_info.is_write


def _bind(target: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Schema argument name -> value, defaults filled in."""
    bound: dict[str, Any] = {}
    for i, arg in enumerate(target._schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            bound[arg.name] = args[i]
        elif arg.name in kwargs:
            bound[arg.name] = kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
    return bound


def _needed(t: torch.Tensor) -> int:
    """Elements of storage `clone_preserve_strides(t)` copies: up to t's last element."""
    if t.numel() == 0:
        return 0
    return t.storage_offset() + 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True))


def _is_cuda(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and v.device.type == "cuda"


def _walk(prefix: str, value: Any, out: list) -> None:
    if isinstance(value, _Ref):
        out.append((prefix, value))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _walk(f"{prefix}[{i}]", v, out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(f"{prefix}[{k!r}]", v, out)


def _same_kind(a: Any, b: Any) -> bool:
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype


def _list_element(arg: str) -> int:
    """k for an operand named `xs[k]`; -1 for a tensor argument beside the lists."""
    _name, bracket, index = arg.partition("[")
    return int(index[:-1]) if bracket else -1


def _foreach_layout(target: torch._ops.OpOverload, reads: list[tuple]) -> tuple[list[int], list[int]]:
    """(the operand of each element of the self list, in order; the list element each
    operand belongs to: k for `other[k]`, -1 for a tensor argument beside the lists)."""
    written = target._schema.arguments[0].name
    selves: dict[int, int] = {}
    element_of = []
    for i, r in enumerate(reads):
        name, bracket, index = r[0].partition("[")
        element = int(index[:-1]) if bracket else -1
        element_of.append(element)
        if name == written:
            selves[element] = i
    if sorted(selves) != list(range(len(selves))):
        raise _CannotCheck(f"{_op_name(target)} has a self list with holes")
    return [selves[k] for k in range(len(selves))], element_of


def _scalar_view(value: Any) -> Any:
    """A value with tensors blanked out, comparable across the two runs."""
    if isinstance(value, torch.Tensor):
        return "<tensor>"
    if isinstance(value, (list, tuple)):
        return tuple(_scalar_view(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, complex) and (math.isnan(value.real) or math.isnan(value.imag)):
        return ("complex", _scalar_view(value.real), _scalar_view(value.imag))  # nan != nan
    return value


def _show(value: Any) -> str:
    return repr(list(value)) if isinstance(value, tuple) else repr(value)


def _run_target(target: Any, args: tuple, kwargs: dict) -> Any:
    """Run a node's target. auto_functionalized(_v2) told what to clone (as Inductor's
    graphs state it) runs its eager implementation directly: torch 2.13's fake rules for
    those operators pass the argument themselves and would get it twice on fake inputs."""
    from torch._higher_order_ops import auto_functionalize as af

    if (
        target is torch.ops.higher_order.auto_functionalized
        and kwargs.get("_only_clone_these_tensors") is not None
    ):
        return af.auto_functionalized_dense(*args, **kwargs)
    if (
        target is torch.ops.higher_order.auto_functionalized_v2
        and kwargs.get("_only_clone_these_bases") is not None
    ):
        return af.auto_functionalized_v2_dense(*args, **kwargs)
    return target(*args, **kwargs)


class _Records(Protocol):
    """What the rules (`rules._Translator`) record into: the recorder's side they
    see. A protocol, so the rules need no import of the recorder that drives them."""

    functional: _Records | None  # the functional graph's recorder; None for it
    targets: dict[str, Any]
    scalars: dict[str, dict[str, Any]]
    afv2_queue: dict[Any, list[str]]

    def add(
        self, node: Any, counterpart: int, prepare: list, reads: list, effects: list, **facts: Any
    ) -> None: ...

    def finding(self, reason: Any, message: str, node: Any) -> None: ...

    def slot(self, name: str, key: tuple, t: torch.Tensor, label: str) -> int: ...

    def ref(self, t: torch.Tensor) -> tuple: ...

    def prefix_ref(self, t: torch.Tensor, n: int) -> tuple: ...
