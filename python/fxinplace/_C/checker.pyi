"""
The independent checker of re-inplaced graphs (it shares no code with the planner).
"""

from __future__ import annotations
from ._pybind_enum import PybindEnum
import collections.abc
import typing

__all__: list[str] = [
    "CheckEffect",
    "CheckInductorCode",
    "CheckNode",
    "CheckOutcome",
    "CheckReason",
    "CheckResult",
    "CheckWriteRule",
    "check_rewrite",
]

class CheckEffect(PybindEnum):
    """
    What a checker effect does to memory (check_model.h).
    """

    COPY: typing.ClassVar[CheckEffect]
    FILL: typing.ClassVar[CheckEffect]
    GROW: typing.ClassVar[CheckEffect]
    __members__: typing.ClassVar[dict[str, CheckEffect]]

class CheckWriteRule(PybindEnum):
    """
    Which aliasing and input rules a checked node's writes follow.
    """

    CUSTOM_OP: typing.ClassVar[CheckWriteRule]
    FOREACH_INPLACE: typing.ClassVar[CheckWriteRule]
    INPLACE: typing.ClassVar[CheckWriteRule]
    NONE: typing.ClassVar[CheckWriteRule]
    OUT: typing.ClassVar[CheckWriteRule]
    WRITE_BACK: typing.ClassVar[CheckWriteRule]
    __members__: typing.ClassVar[dict[str, CheckWriteRule]]

class CheckInductorCode(PybindEnum):
    """
    How Inductor runs a checked node (inductor_contract.h).
    """

    ANY_INDEX: typing.ClassVar[CheckInductorCode]
    EXTERN: typing.ClassVar[CheckInductorCode]
    NONE: typing.ClassVar[CheckInductorCode]
    POINTWISE: typing.ClassVar[CheckInductorCode]
    __members__: typing.ClassVar[dict[str, CheckInductorCode]]

class CheckOutcome(PybindEnum):
    """
    Whether a rewrite was proven, refuted, or could not be checked.
    """

    CANNOT_CHECK: typing.ClassVar[CheckOutcome]
    OK: typing.ClassVar[CheckOutcome]
    VIOLATION: typing.ClassVar[CheckOutcome]
    __members__: typing.ClassVar[dict[str, CheckOutcome]]

class CheckReason(PybindEnum):
    """
    The checker's verdicts (csrc/checker/check_reasons.h).
    """

    __members__: typing.ClassVar[dict[str, CheckReason]]
    cannot_check: typing.ClassVar[CheckReason]
    constant_written: typing.ClassVar[CheckReason]
    final_input: typing.ClassVar[CheckReason]
    foreach_self_overlap: typing.ClassVar[CheckReason]
    functional_raised: typing.ClassVar[CheckReason]
    fused_read_hazard: typing.ClassVar[CheckReason]
    input_written: typing.ClassVar[CheckReason]
    metadata_changed: typing.ClassVar[CheckReason]
    ok: typing.ClassVar[CheckReason]
    operand_count: typing.ClassVar[CheckReason]
    operand_overlaps_other_element: typing.ClassVar[CheckReason]
    operand_overlaps_self: typing.ClassVar[CheckReason]
    operand_overlaps_written: typing.ClassVar[CheckReason]
    output_aliases_input: typing.ClassVar[CheckReason]
    output_aliases_output: typing.ClassVar[CheckReason]
    output_layout: typing.ClassVar[CheckReason]
    raised: typing.ClassVar[CheckReason]
    self_overlap: typing.ClassVar[CheckReason]
    write_through_dtype_view: typing.ClassVar[CheckReason]
    wrong_argument: typing.ClassVar[CheckReason]
    wrong_dtype: typing.ClassVar[CheckReason]
    wrong_shape: typing.ClassVar[CheckReason]
    wrong_value: typing.ClassVar[CheckReason]
    @property
    def text(self) -> str:
        """
        What it means, in words.
        """

class CheckNode:
    """
    One node of a checked graph (check_model.h): what it reads, what it does to memory, and which rules its writes follow. reads: (arg, source, ref, values_read); effects and prepare: (CheckEffect, dst ref, src ref, slot, nbytes); ref: (storage, sizes, strides, offset, itemsize, dtype).
    """
    def __init__(
        self,
        *,
        name: str,
        op: str,
        counterpart: typing.SupportsInt | typing.SupportsIndex,
        prepare: list,
        reads: list,
        effects: list,
        write_rule: CheckWriteRule,
        pointwise: bool = False,
        self_operand: typing.SupportsInt | typing.SupportsIndex = -1,
        written_operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [],
        is_output: bool = False,
        self_operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [],
        element_of: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [],
        commutative_pair: bool = False,
        inductor: CheckInductorCode,
    ) -> None: ...
    @property
    def name(self) -> str: ...

class CheckResult:
    """
    The checker's verdict on one rewrite.
    """
    @property
    def message(self) -> str:
        """
        names the node, the operand and the values involved
        """
    @property
    def node(self) -> int:
        """
        index of the rewritten node; -1: after the last (final inputs)
        """
    @property
    def operand(self) -> int:
        """
        index into that node's reads, or -1
        """
    @property
    def outcome(self) -> CheckOutcome: ...
    @property
    def reason(self) -> CheckReason: ...

def check_rewrite(problem: tuple) -> CheckResult:
    """
    Simulate a functional graph and its rewrite on tagged memory (see csrc/checker/rewrite_checker.h).
    """
