"""
The re-inplacing planner: operator facts, the graph builder, plans and their reasons.
"""

from __future__ import annotations
from ._pybind_enum import PybindEnum
import collections.abc
import typing

__all__: list[str] = [
    "Action",
    "CONJ_BIT",
    "Decision",
    "Destination",
    "GraphBuilder",
    "LayoutUse",
    "MemoryDecision",
    "MemoryReason",
    "NEG_BIT",
    "OpFacts",
    "Plan",
    "Reason",
    "ScatterKind",
    "SlotDecision",
    "Symbol",
    "ViewKind",
    "has_backend_kernel",
    "inductor_may_write",
    "op_facts",
]

_Results: typing.TypeAlias = collections.abc.Sequence[
    tuple[
        typing.SupportsInt | typing.SupportsIndex,
        collections.abc.Sequence[int | Symbol],
        collections.abc.Sequence[int | Symbol],
        int | Symbol,
        collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None,
        typing.SupportsInt | typing.SupportsIndex,
    ]
]

class ViewKind(PybindEnum):
    """
    Whether a node's result is a view: none, one, or a list of views (split, unbind).
    """

    MULTI: typing.ClassVar[ViewKind]
    NONE: typing.ClassVar[ViewKind]
    SINGLE: typing.ClassVar[ViewKind]
    __members__: typing.ClassVar[dict[str, ViewKind]]

class LayoutUse(PybindEnum):
    """
    How a view depends on its source's layout: not at all, to reshape, on strides, on storage offsets.
    """

    ABSOLUTE: typing.ClassVar[LayoutUse]
    LOGICAL: typing.ClassVar[LayoutUse]
    RESHAPE: typing.ClassVar[LayoutUse]
    STRIDES: typing.ClassVar[LayoutUse]
    __members__: typing.ClassVar[dict[str, LayoutUse]]

class Destination(PybindEnum):
    """
    How an ATen op's result gets into a write slot's target.
    """

    OUT: typing.ClassVar[Destination]
    SELF: typing.ClassVar[Destination]
    SWAPPED: typing.ClassVar[Destination]
    __members__: typing.ClassVar[dict[str, Destination]]

class ScatterKind(PybindEnum):
    """
    Which view a *_scatter node inverts, if any.
    """

    AS_STRIDED: typing.ClassVar[ScatterKind]
    DIAGONAL: typing.ClassVar[ScatterKind]
    NONE: typing.ClassVar[ScatterKind]
    SELECT: typing.ClassVar[ScatterKind]
    SLICE: typing.ClassVar[ScatterKind]
    __members__: typing.ClassVar[dict[str, ScatterKind]]

class Action(PybindEnum):
    INPLACE: typing.ClassVar[Action]
    KEEP: typing.ClassVar[Action]
    PARTIAL_INPLACE: typing.ClassVar[Action]
    REMOVE_CAST: typing.ClassVar[Action]
    REMOVE_COPY: typing.ClassVar[Action]
    REMOVE_SCATTER: typing.ClassVar[Action]
    SCATTER_TO_COPY: typing.ClassVar[Action]
    __members__: typing.ClassVar[dict[str, Action]]
    @property
    def label(self) -> str:
        """
        Its stable name, e.g. 'scatter_to_copy'.
        """

class Reason(PybindEnum):
    COMPILER_FUSES: typing.ClassVar[Reason]
    DONE: typing.ClassVar[Reason]
    EMPTY_RESULT: typing.ClassVar[Reason]
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
    RETURNED_FROM_DONATED_INPUT: typing.ClassVar[Reason]
    SCATTER_KEPT_FOR_FUSION: typing.ClassVar[Reason]
    SCATTER_UNPROVEN: typing.ClassVar[Reason]
    SELF_FLIPS_VALUES: typing.ClassVar[Reason]
    SELF_IS_INPUT: typing.ClassVar[Reason]
    SELF_OVERLAPS: typing.ClassVar[Reason]
    SELF_REPEATED: typing.ClassVar[Reason]
    SHAPE_MISMATCH: typing.ClassVar[Reason]
    USED_LATER: typing.ClassVar[Reason]
    VIEW: typing.ClassVar[Reason]
    VIEW_OUTSIDE_SELF: typing.ClassVar[Reason]
    WRITES_OUTSIDE_INPUT: typing.ClassVar[Reason]
    WRITE_BACK_REORDERS_RESULT: typing.ClassVar[Reason]
    __members__: typing.ClassVar[dict[str, Reason]]
    @property
    def code(self) -> str:
        """
        Its stable identifier, e.g. 'used_later'.
        """
    @property
    def text(self) -> str: ...

class MemoryReason(PybindEnum):
    NOT_ALLOCATING: typing.ClassVar[MemoryReason]
    NO_DEAD_BUFFER: typing.ClassVar[MemoryReason]
    NO_OUT_KERNEL: typing.ClassVar[MemoryReason]
    REUSED: typing.ClassVar[MemoryReason]
    SEVERAL_RESULTS: typing.ClassVar[MemoryReason]
    WOULD_RAISE_PEAK: typing.ClassVar[MemoryReason]
    WRITTEN_IN_PLACE: typing.ClassVar[MemoryReason]
    __members__: typing.ClassVar[dict[str, MemoryReason]]
    @property
    def code(self) -> str:
        """
        Its stable identifier, e.g. 'reused'.
        """
    @property
    def text(self) -> str: ...

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
    def has_tensor_sibling_out(self) -> bool: ...
    @property
    def indexed_write(self) -> bool: ...
    @property
    def inplace_overload(self) -> str: ...
    @property
    def inplace_stores_converted(self) -> bool: ...
    @property
    def inverted_view(self) -> tuple[str, str]: ...
    @property
    def is_resize(self) -> bool: ...
    @property
    def keeps_self_geometry(self) -> bool: ...
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
    def tensor_sibling_out_arg_name(self) -> str: ...
    @property
    def tensor_sibling_out_overload(self) -> str: ...
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

class MemoryDecision:
    """
    The memory walk's outcome for one node (memory_plan.h).
    """
    @property
    def bytes(self) -> int: ...
    @property
    def donor(self) -> int | None: ...
    @property
    def freed_after(self) -> int | None: ...
    @property
    def reason(self) -> MemoryReason: ...
    @property
    def restrided(self) -> bool: ...

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
    def memory(self) -> list[MemoryDecision]:
        """
        plan_memory: one memory decision per node (empty without it).
        """
    def reuses(self) -> list[tuple[int, int, bool]]:
        """
        plan_memory: (node, donor, restrided) for each node whose result goes into the donor's dead buffer; restrided: through as_strided(donor, the result's sizes, strides, 0), the donor being laid out otherwise.
        """
    @property
    def bytes_reused(self) -> int:
        """
        plan_memory: the bytes of every result written into a dead buffer.
        """
    @property
    def modelled_peak(self) -> int:
        """
        plan_memory: the peak model's live bytes at the peak (reuses never raise it).
        """
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
        results: _Results,
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
    def cast_slot(
        self, op: typing.SupportsInt | typing.SupportsIndex, cast: typing.SupportsInt | typing.SupportsIndex
    ) -> None:
        """
        Node `cast` is `_to_copy(op, dtype=<op's self's dtype>)`, the only user of op's result, and op's in-place form stores its result converted (OpFacts.inplace_stores_converted): op may write self through the cast, which then goes (policy 'compile').
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
        results: _Results,
    ) -> int: ...
    def donated_input(self, id: typing.SupportsInt | typing.SupportsIndex) -> None:
        """
        Input id is a donated buffer (AOTAutograd's bw_donated_idxs): plan_memory may reuse it once dead.
        """
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
        results: _Results,
        self_list: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        collective: bool = False,
        operand_elements: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [],
        keeps_self_geometry: bool = False,
    ) -> int:
        """
        A _foreach_* op with a _foreach_*_ form; self_list: the nodes of its first list, in order (result k may be written into self_list[k]; all or none); collective: a list collective (all_reduce_coalesced) rather than a _foreach_* op; operand_elements: for each operand, the list position it is passed at, -1 for one every element reads (empty: unknown); keeps_self_geometry: result k is laid out as self_list[k], storage offset included (_foreach_copy).
        """
    def getitem(
        self,
        name: str,
        source: typing.SupportsInt | typing.SupportsIndex,
        index: typing.SupportsInt | typing.SupportsIndex,
        results: _Results,
    ) -> int: ...
    def input(
        self,
        name: str,
        results: _Results,
    ) -> int: ...
    def internal_output(self, id: typing.SupportsInt | typing.SupportsIndex) -> None:
        """
        Node id is returned only to the compiled program (AOTAutograd's saved activations of a forward graph, a backward's gradients), never to the caller's code: plan_memory may return it as a view of a dead buffer.
        """
    def memory_facts(
        self,
        id: typing.SupportsInt | typing.SupportsIndex,
        device: typing.SupportsInt | typing.SupportsIndex,
        result_bytes: typing.SupportsInt | typing.SupportsIndex,
        out_kernel: bool,
        byte_size: int | Symbol = 0,
        restridable: bool = False,
    ) -> None:
        """
        Memory facts of a node with one tensor result (read under plan_memory only): a code per device, the result's bytes (a hint for symbolic sizes), whether its op has an out= kernel of its own on that device, its byte count as an extent (a Symbol per distinct expression), and whether the graph can express its sizes and strides (so that, when dense from offset 0, it may take an as_strided view of a dead buffer of that byte count).
        """
    def op(
        self,
        name: str,
        facts: OpFacts,
        self: typing.SupportsInt | typing.SupportsIndex | None,
        operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        results: _Results,
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
        results: _Results,
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
        plan_memory: bool = False,
        shared_inputs_disjoint: bool = False,
    ) -> Plan: ...
    def traced_symbolically(self) -> None:
        """
        The graph was traced with symbolic shapes, even where a guard fixed every size: its recorded strides of size-1 dims need not be eager's.
        """
    def write_back(
        self,
        name: str,
        written_input: typing.SupportsInt | typing.SupportsIndex,
        written: typing.SupportsInt | typing.SupportsIndex,
        value: typing.SupportsInt | typing.SupportsIndex | None,
        operands: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex],
        results: _Results,
    ) -> int:
        """
        A write-back into a graph input: copy_(written, value), or resize_/as_strided_ (value None).
        """

def has_backend_kernel(name: str, overload: str, device_type: str) -> bool:
    """
    Whether the overload has a kernel of its own for device_type's backend (not only a composite one), e.g. has_backend_kernel('aten::mm', 'out', 'cpu').
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
