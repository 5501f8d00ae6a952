"""
Native core of fxinplace: operator facts, the re-inplacing planner, its checker, and the functionalization kernels.
"""

from __future__ import annotations
import collections.abc
import torch
import typing

__all__: list[str] = [
    "Action",
    "CONJ_BIT",
    "CheckEffect",
    "CheckInductorCode",
    "CheckOutcome",
    "CheckReason",
    "CheckWriteRule",
    "Decision",
    "Destination",
    "GraphBuilder",
    "LayoutUse",
    "NEG_BIT",
    "OpFacts",
    "Plan",
    "Reason",
    "ScatterKind",
    "SlotDecision",
    "Symbol",
    "ViewKind",
    "check_rewrite",
    "inductor_may_write",
    "op_facts",
]

class ViewKind:
    """
    Members:

      NONE

      SINGLE

      MULTI
    """

    MULTI: typing.ClassVar[ViewKind]
    NONE: typing.ClassVar[ViewKind]
    SINGLE: typing.ClassVar[ViewKind]
    __members__: typing.ClassVar[dict[str, ViewKind]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class LayoutUse:
    """
    Members:

      LOGICAL

      RESHAPE

      STRIDES

      ABSOLUTE
    """

    ABSOLUTE: typing.ClassVar[LayoutUse]
    LOGICAL: typing.ClassVar[LayoutUse]
    RESHAPE: typing.ClassVar[LayoutUse]
    STRIDES: typing.ClassVar[LayoutUse]
    __members__: typing.ClassVar[dict[str, LayoutUse]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class Destination:
    """
    How an ATen op's result gets into a write slot's target.

    Members:

      SELF

      SWAPPED

      OUT
    """

    OUT: typing.ClassVar[Destination]
    SELF: typing.ClassVar[Destination]
    SWAPPED: typing.ClassVar[Destination]
    __members__: typing.ClassVar[dict[str, Destination]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class ScatterKind:
    """
    Members:

      NONE

      SELECT

      SLICE

      DIAGONAL

      AS_STRIDED
    """

    AS_STRIDED: typing.ClassVar[ScatterKind]
    DIAGONAL: typing.ClassVar[ScatterKind]
    NONE: typing.ClassVar[ScatterKind]
    SELECT: typing.ClassVar[ScatterKind]
    SLICE: typing.ClassVar[ScatterKind]
    __members__: typing.ClassVar[dict[str, ScatterKind]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class Action:
    """
    Members:

      KEEP

      INPLACE

      PARTIAL_INPLACE

      SCATTER_TO_COPY

      REMOVE_SCATTER

      REMOVE_COPY
    """

    INPLACE: typing.ClassVar[Action]
    KEEP: typing.ClassVar[Action]
    PARTIAL_INPLACE: typing.ClassVar[Action]
    REMOVE_COPY: typing.ClassVar[Action]
    REMOVE_SCATTER: typing.ClassVar[Action]
    SCATTER_TO_COPY: typing.ClassVar[Action]
    __members__: typing.ClassVar[dict[str, Action]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def label(self) -> str:
        """
        Its stable name, e.g. 'scatter_to_copy'.
        """
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class Reason:
    """
    Members:

      NOT_CANDIDATE

      VIEW

      DONE

      RESULT_NOT_SINGLE_TENSOR

      METADATA_MISMATCH

      SHAPE_MISMATCH

      SELF_OVERLAPS

      SELF_IS_INPUT

      INPUT_SHARED

      INPUT_NOT_WRITTEN_BACK

      RESULT_READ_AFTER_WRITE_BACK

      SELF_REPEATED

      OPERAND_ALIASES_SELF

      USED_LATER

      NO_INPLACE_VARIANT

      LAYOUT_SENSITIVE_USE

      COMPILER_FUSES

      SCATTER_KEPT_FOR_FUSION

      FOREACH_INTO_INTERMEDIATE

      SCATTER_UNPROVEN

      SELF_FLIPS_VALUES

      INDUCTOR_DTYPE_VIEW

      INDUCTOR_FUSED_READ

      INDUCTOR_OPAQUE_VIEW

      INDUCTOR_EMPTY_OUTPUT_VIEW

      INDUCTOR_LAZY_VIEW_BASE

      NO_COMPILER_INPLACE_LOWERING

      RETURNED_AS_PARTIAL_VIEW
    """

    COMPILER_FUSES: typing.ClassVar[Reason]
    DONE: typing.ClassVar[Reason]
    FOREACH_INTO_INTERMEDIATE: typing.ClassVar[Reason]
    INDUCTOR_DTYPE_VIEW: typing.ClassVar[Reason]
    INDUCTOR_EMPTY_OUTPUT_VIEW: typing.ClassVar[Reason]
    INDUCTOR_FUSED_READ: typing.ClassVar[Reason]
    INDUCTOR_LAZY_VIEW_BASE: typing.ClassVar[Reason]
    INDUCTOR_OPAQUE_VIEW: typing.ClassVar[Reason]
    INPUT_NOT_WRITTEN_BACK: typing.ClassVar[Reason]
    INPUT_SHARED: typing.ClassVar[Reason]
    LAYOUT_SENSITIVE_USE: typing.ClassVar[Reason]
    METADATA_MISMATCH: typing.ClassVar[Reason]
    NOT_CANDIDATE: typing.ClassVar[Reason]
    NO_COMPILER_INPLACE_LOWERING: typing.ClassVar[Reason]
    NO_INPLACE_VARIANT: typing.ClassVar[Reason]
    OPERAND_ALIASES_SELF: typing.ClassVar[Reason]
    RESULT_NOT_SINGLE_TENSOR: typing.ClassVar[Reason]
    RESULT_READ_AFTER_WRITE_BACK: typing.ClassVar[Reason]
    RETURNED_AS_PARTIAL_VIEW: typing.ClassVar[Reason]
    SCATTER_KEPT_FOR_FUSION: typing.ClassVar[Reason]
    SCATTER_UNPROVEN: typing.ClassVar[Reason]
    SELF_FLIPS_VALUES: typing.ClassVar[Reason]
    SELF_IS_INPUT: typing.ClassVar[Reason]
    SELF_OVERLAPS: typing.ClassVar[Reason]
    SELF_REPEATED: typing.ClassVar[Reason]
    SHAPE_MISMATCH: typing.ClassVar[Reason]
    USED_LATER: typing.ClassVar[Reason]
    VIEW: typing.ClassVar[Reason]
    __members__: typing.ClassVar[dict[str, Reason]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def code(self) -> str:
        """
        Its stable identifier, e.g. 'used_later'.
        """
    @property
    def name(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def value(self) -> int: ...

class OpFacts:
    """
    What the planner knows of an operator overload (read from its schema).
    """
    @property
    def aliases_without_annotation(self) -> bool: ...
    @property
    def collective(self) -> bool: ...
    @property
    def commutative(self) -> bool: ...
    @property
    def first_arg_name(self) -> str: ...
    @property
    def found(self) -> bool: ...
    @property
    def has_inplace(self) -> bool: ...
    @property
    def has_out(self) -> bool: ...
    @property
    def indexed_write(self) -> bool: ...
    @property
    def inplace_overload(self) -> str: ...
    @property
    def inverted_view(self) -> tuple[str, str]: ...
    @property
    def is_resize(self) -> bool: ...
    @property
    def layout_use(self) -> LayoutUse: ...
    @property
    def metadata_write_back(self) -> bool: ...
    @property
    def mutates(self) -> bool: ...
    @property
    def out_arg_name(self) -> str: ...
    @property
    def out_overload(self) -> str: ...
    @property
    def pointwise(self) -> bool: ...
    @property
    def reads_memory(self) -> bool: ...
    @property
    def returns_its_input(self) -> bool: ...
    @property
    def scatter(self) -> ScatterKind: ...
    @property
    def self_is_tensor(self) -> bool: ...
    @property
    def self_is_tensor_list(self) -> bool: ...
    @property
    def view(self) -> ViewKind: ...

class Symbol:
    """
    A symbolic size, stride or offset, known to the planner by identity.
    """
    def __init__(self, id: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __repr__(self) -> str: ...
    @property
    def id(self) -> int: ...

class SlotDecision:
    """
    The outcome for one write slot (an AFv2 base).
    """
    @property
    def culprit(self) -> int | None: ...
    @property
    def in_place(self) -> bool: ...
    @property
    def reason(self) -> Reason: ...

class Decision:
    """
    What the planner decided for one node, and why.
    """
    @property
    def action(self) -> Action: ...
    @property
    def culprit(self) -> int | None: ...
    @property
    def reason(self) -> Reason: ...
    @property
    def replacement(self) -> int | None: ...
    @property
    def slot(self) -> int:
        """
        ATen ops: the write slot taken (0: self; then the destinations given to GraphBuilder.op)
        """
    @property
    def slots(self) -> list[SlotDecision]: ...

class Plan:
    """
    One decision per node, in graph order.
    """
    def __len__(self) -> int: ...
    def changed(self) -> list[int]:
        """
        The nodes whose action is not KEEP, ascending.
        """
    def count(self, action: Action) -> int: ...
    def decision(self, node: typing.SupportsInt | typing.SupportsIndex) -> Decision: ...
    @property
    def walks(self) -> int: ...

class GraphBuilder:
    """
    Builds the planner's picture of a graph, one node per call, in graph order.
    """
    def __init__(self) -> None: ...
    def auto_functionalized(
        self,
        name: str,
        operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        results: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                collections.abc.Sequence[int | Symbol],
                collections.abc.Sequence[int | Symbol],
                int | Symbol,
                collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ],
        slots: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
                typing.SupportsInt | typing.SupportsIndex,
                bool,
            ]
        ],
        absolute_layout_reads: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [],
    ) -> int:
        """
        auto_functionalized_v2 (or auto_functionalized, v1); slots: (base node (v1: written argument), index of its new value in results, its position in the node's value, already not cloned); absolute_layout_reads: bases it views by storage offset and strides (as_strided encodings).
        """
    def compiler_facts(
        self,
        id: typing.SupportsInt | typing.SupportsIndex,
        realized: bool,
        extern_kernel: bool,
        inplace_form: bool,
        lacks_inplace_lowering: bool = False,
        opaque: bool = False,
    ) -> None:
        """
        What Inductor does with node id (read under the inductor policy only; facts accumulate): its value is in a buffer anyway; Inductor runs it as a library kernel; Inductor has an in-place form of it; Inductor has no lowering for its in-place form; Inductor runs it as a library kernel because of its tensors' types (a view so run hides writes through it).
        """
    def constant(
        self,
        name: str,
        results: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                collections.abc.Sequence[int | Symbol],
                collections.abc.Sequence[int | Symbol],
                int | Symbol,
                collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ],
    ) -> int: ...
    def dump(
        self,
        reuse_written_back_inputs: bool = False,
        dead_operand_destinations: bool = False,
        inductor: bool = False,
        outputs_taken_by_torch_compile: bool = False,
    ) -> str:
        """
        The planner's input as text, with today's decisions as expectations (see test/cpp/cases).
        """
    def foreach(
        self,
        name: str,
        operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        results: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                collections.abc.Sequence[int | Symbol],
                collections.abc.Sequence[int | Symbol],
                int | Symbol,
                collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ],
        self_list: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        collective: bool = False,
        operand_elements: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [],
    ) -> int:
        """
        A _foreach_* op with a _foreach_*_ form; self_list: the nodes of its first list, in order (result k may be written into self_list[k]; all or none); collective: a list collective (all_reduce_coalesced) rather than a _foreach_* op; operand_elements: for each operand, the list position it is passed at, -1 for one every element reads (empty: unknown).
        """
    def getitem(
        self,
        name: str,
        source: typing.SupportsInt | typing.SupportsIndex,
        index: typing.SupportsInt | typing.SupportsIndex,
        results: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                collections.abc.Sequence[int | Symbol],
                collections.abc.Sequence[int | Symbol],
                int | Symbol,
                collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ],
    ) -> int: ...
    def input(
        self,
        name: str,
        results: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                collections.abc.Sequence[int | Symbol],
                collections.abc.Sequence[int | Symbol],
                int | Symbol,
                collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ],
    ) -> int: ...
    def op(
        self,
        name: str,
        facts: OpFacts,
        self: typing.SupportsInt | typing.SupportsIndex | None,
        operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        results: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                collections.abc.Sequence[int | Symbol],
                collections.abc.Sequence[int | Symbol],
                int | Symbol,
                collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ],
        scatter_args: tuple[
            collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
            collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
            collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        ]
        | None = None,
        scatter_src: typing.SupportsInt | typing.SupportsIndex | None = None,
        scatter_view: tuple[
            collections.abc.Sequence[int | Symbol],
            collections.abc.Sequence[int | Symbol],
            int | Symbol,
            collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
        ]
        | None = None,
        destinations: collections.abc.Sequence[
            tuple[typing.SupportsInt | typing.SupportsIndex, Destination]
        ] = [],
    ) -> int:
        """
        An ATen operator overload. scatter_args (ints, sizes, strides): a *_scatter's view arguments when all are known; scatter_view: the geometry of that view on the recorded base; destinations: other operands its result may go into (node, SWAPPED or OUT), tried in order after self.
        """
    def other(
        self,
        name: str,
        operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        results: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                collections.abc.Sequence[int | Symbol],
                collections.abc.Sequence[int | Symbol],
                int | Symbol,
                collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ],
    ) -> int:
        """
        Any other call: reads its operands, returns fresh tensors.
        """
    def output(
        self, name: str, operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]
    ) -> int: ...
    def plan(
        self,
        reuse_written_back_inputs: bool = False,
        dead_operand_destinations: bool = False,
        inductor: bool = False,
        outputs_taken_by_torch_compile: bool = False,
    ) -> Plan: ...
    def write_back(
        self,
        name: str,
        written_input: typing.SupportsInt | typing.SupportsIndex,
        written: typing.SupportsInt | typing.SupportsIndex,
        value: typing.SupportsInt | typing.SupportsIndex | None,
        operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        results: collections.abc.Sequence[
            tuple[
                typing.SupportsInt | typing.SupportsIndex,
                collections.abc.Sequence[int | Symbol],
                collections.abc.Sequence[int | Symbol],
                int | Symbol,
                collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
                typing.SupportsInt | typing.SupportsIndex,
            ]
        ],
    ) -> int:
        """
        A write-back into a graph input: copy_(written, value), or resize_/as_strided_ (value None).
        """

class CheckEffect:
    """
    What a checker effect does to memory (check_model.h).

    Members:

      FILL

      COPY

      GROW
    """

    COPY: typing.ClassVar[CheckEffect]
    FILL: typing.ClassVar[CheckEffect]
    GROW: typing.ClassVar[CheckEffect]
    __members__: typing.ClassVar[dict[str, CheckEffect]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class CheckWriteRule:
    """
    Which aliasing and input rules a checked node's writes follow.

    Members:

      NONE

      INPLACE

      WRITE_BACK

      CUSTOM_OP

      FOREACH_INPLACE
    """

    CUSTOM_OP: typing.ClassVar[CheckWriteRule]
    FOREACH_INPLACE: typing.ClassVar[CheckWriteRule]
    INPLACE: typing.ClassVar[CheckWriteRule]
    NONE: typing.ClassVar[CheckWriteRule]
    WRITE_BACK: typing.ClassVar[CheckWriteRule]
    __members__: typing.ClassVar[dict[str, CheckWriteRule]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class CheckInductorCode:
    """
    How Inductor runs a checked node (inductor_contract.h).

    Members:

      NONE

      EXTERN

      POINTWISE

      ANY_INDEX
    """

    ANY_INDEX: typing.ClassVar[CheckInductorCode]
    EXTERN: typing.ClassVar[CheckInductorCode]
    NONE: typing.ClassVar[CheckInductorCode]
    POINTWISE: typing.ClassVar[CheckInductorCode]
    __members__: typing.ClassVar[dict[str, CheckInductorCode]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class CheckOutcome:
    """
    Members:

      OK

      VIOLATION

      CANNOT_CHECK
    """

    CANNOT_CHECK: typing.ClassVar[CheckOutcome]
    OK: typing.ClassVar[CheckOutcome]
    VIOLATION: typing.ClassVar[CheckOutcome]
    __members__: typing.ClassVar[dict[str, CheckOutcome]]
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class CheckReason:
    """
    The checker's verdicts (csrc/checker/check_reasons.h).

    Members:

      ok

      wrong_value

      wrong_shape

      wrong_dtype

      operand_count

      wrong_argument

      metadata_changed

      final_input

      output_aliases_input

      output_aliases_output

      output_layout

      input_written

      constant_written

      self_overlap

      operand_overlaps_self

      foreach_self_overlap

      operand_overlaps_other_element

      operand_overlaps_written

      write_through_dtype_view

      fused_read_hazard

      raised

      cannot_check

      functional_raised
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
    def __eq__(self, other: typing.Any) -> bool: ...
    def __getstate__(self) -> int: ...
    def __hash__(self) -> int: ...
    def __index__(self) -> int: ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __int__(self) -> int: ...
    def __ne__(self, other: typing.Any) -> bool: ...
    def __repr__(self) -> str: ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None: ...
    def __str__(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def text(self) -> str:
        """
        What it means, in words.
        """
    @property
    def value(self) -> int: ...

class _FunctionalizeRegion:
    def __enter__(self) -> None: ...
    def __exit__(self, *args) -> None: ...
    def __init__(self, arg0: bool) -> None: ...

def _fz_alias_group(arg0: torch.Tensor) -> int:
    """
    An id of the functional tensor's alias group (the tensors over one storage).
    """

def _fz_dispatch_key() -> str: ...
def _fz_eager_geometry(arg0: torch.Tensor, arg1: torch.Tensor) -> tuple | None:
    """
    Where eager leaves an input in its storage (size, stride, storage_offset) when in-place view ops (t_, unsqueeze_) or resizing (resize_, out=) changed its metadata; None otherwise. `original` is the input's base as it entered (the input, or the flat base of inputs sharing a storage).
    """

def _fz_from_current_region(arg0: torch.Tensor) -> bool: ...
def _fz_is_functional(arg0: torch.Tensor) -> bool: ...
def _fz_joined_base(t: torch.Tensor) -> torch.Tensor | None:
    """
    The flat base an input's set was joined over (the unwrapped value it started as), or None while its inputs are separate.
    """

def _fz_mutated(arg0: torch.Tensor) -> bool: ...
def _fz_reapply_views() -> bool: ...
def _fz_region_active() -> bool: ...
def _fz_register() -> None:
    """
    Registers the functionalization fallback on its dispatch key (once; errors if the key is taken).
    """

def _fz_resized_base_sizes(arg0: torch.Tensor) -> list[int | torch.SymInt] | None:
    """
    The sizes of the input's base after resize_/out= resized it (None if it was not resized): the input is resized to them first, so its storage grows as in eager.
    """

def _fz_set_auto_functionalize_hook(arg0: typing.Any) -> None: ...
def _fz_share_inputs(
    wrapped: collections.abc.Sequence[torch.Tensor], originals: collections.abc.Sequence[torch.Tensor]
) -> None:
    """
    Inputs that share one storage (or one input with gaps), each already wrapped: joined into one alias group where the sharing shows (see csrc/functionalize/input_alias_set.h).
    """

def _fz_storage_changed(arg0: torch.Tensor) -> bool:
    """
    Whether set_() pointed the tensor at another tensor's storage.
    """

def _fz_unwrap(arg0: torch.Tensor, arg1: bool) -> torch.Tensor: ...
def _fz_wrap(t: torch.Tensor, eager_layout: bool = False) -> torch.Tensor:
    """
    Wraps t in a new functional tensor; eager_layout: t is laid out as eager lays it out (an input).
    """

def _fz_written_with_grad(arg0: torch.Tensor) -> bool:
    """
    Whether some write into the tensor's alias group happened with grad mode on.
    """

def check_rewrite(problem: tuple) -> tuple:
    """
    Simulate a functional graph and its rewrite on tagged memory (see csrc/checker/rewrite_checker.h); returns (outcome, node, operand, reason, message): a CheckOutcome, node and operand indices, a CheckReason.
    """

def inductor_may_write(facts: OpFacts, extern_kernel: bool) -> bool:
    """
    Whether the planner's Inductor policy lets an op with these facts write in place at all.
    """

def op_facts(name: str, overload: str) -> OpFacts:
    """
    Facts of an operator overload, e.g. op_facts('aten::add', 'Tensor').
    """

CONJ_BIT: int = 65536
NEG_BIT: int = 131072
