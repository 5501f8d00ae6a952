"""`fxinplace.check_reinplaced`: an independent check of a re-inplaced graph.

Written apart from the pass: it shares none of the planner's alias, geometry
or overlap code, nor its metadata (`_metadata`, `_graph_records`). Both graphs
are run for real on copies of the sample args (same random seed), and each
node's tensors are recorded as (storage, sizes, strides, offset, itemsize) as
they are when the node runs. From that, every node becomes a list of what it
reads and what it writes, and the simulation in csrc/core/rewrite_checker.cpp
proves the rewritten graph reads, element by element, the values the
functional graph defines (see rewrite_checker.h for the rules it checks).

What a node does to memory, decided here from the op alone:

* a view (its result shares storage with an operand, found in the real run)
  writes nothing;
* ops that only move values (clone, copy, _to_copy to the same dtype, the
  four `*_scatter` ops, `*_copy` variants of views) copy their operands'
  tags; every other op fills its fresh results with the functional node's
  own tags. An in-place op `foo_` does what the functional `foo` it stands
  for does, into its `self`; a `_foreach_foo_(xs, ...)` puts what
  `_foreach_foo` computes as its result k into xs[k] (ATen's in-place rule
  per list element, and no element's operand touching another's xs[j]);
* auto_functionalized_v2 clones the bases it is told to clone (as torch's
  `clone_preserve_strides`: the storage up to the base's last element), reads
  its arguments regenerated on them (torch's own view decoding), then the op
  writes every mutated argument and its outputs with fresh tags. Its direct
  call (the pass's rewrite when no base is cloned) is matched to the
  functional node calling the same op, in order; auto_functionalized (v1)
  likewise, cloning the written arguments themselves;
* functionalization's write-backs (`copy_`/`resize_`/`as_strided_` into a
  placeholder) write the input.

Non-tensor arguments (sizes, dims, scalars) of a rewritten node must equal
those of the functional node of the same name, since tags do not see them.

Outputs must also have the functional graph's layout (strides, storage offset).
Under `compiler="inductor"` each rewritten node also says how Inductor runs it
(`_check_inductor.inductor_code`: extern, pointwise, any index), and the
simulation proves Inductor's contract (csrc/core/inductor_contract.h).
Verdicts are `_C.CheckReason`s (csrc/core/check_reasons.h).

Costs: two real runs of the graph, and O(elements read and written) for the
simulation. For tests; not meant for production-sized graphs.
"""

from __future__ import annotations

import contextlib
import math
import operator
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg

from fxinplace import _C
from fxinplace._op_info import op_info as _op_info
from fxinplace._torch_compat import has_out_semantics

_aten = torch.ops.aten
_AFV2 = torch.ops.higher_order.auto_functionalized_v2
_AFV1 = torch.ops.higher_order.auto_functionalized

# Tuple layouts shared with csrc/python/checker_bindings.cpp; its enums.
_FILL, _COPY, _GROW = _C.CheckEffect.FILL, _C.CheckEffect.COPY, _C.CheckEffect.GROW
_RULE_NONE = _C.CheckWriteRule.NONE
_RULE_INPLACE = _C.CheckWriteRule.INPLACE
_RULE_WRITE_BACK = _C.CheckWriteRule.WRITE_BACK
_RULE_CUSTOM_OP = _C.CheckWriteRule.CUSTOM_OP
_RULE_FOREACH = _C.CheckWriteRule.FOREACH_INPLACE
_OK, _CANNOT_CHECK = _C.CheckOutcome.OK, _C.CheckOutcome.CANNOT_CHECK
# The checker's verdicts (csrc/core/check_reasons.h): ReinplaceCheckError.reason is the name.
_REASON = _C.CheckReason
#: What `check_reinplaced(compiler=...)` also proves the rewrite sound for.
COMPILERS = (None, "inductor")

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
_CLONES = {"aten::clone", "aten::alias_copy", "aten::lift_fresh_copy", "aten::detach_copy"}


class ReinplaceCheckError(AssertionError):
    """`check_reinplaced` found the rewritten graph wrong, or could not check it.

    `node` is the rewritten graph's node at fault (None: the graph as a whole,
    e.g. an input's final contents), `operand` the operand concerned (or None),
    `reason` a stable name from the checker's table of reasons
    (`fxinplace._C.CheckReason`, csrc/core/check_reasons.h: "wrong_value",
    "input_written", "operand_overlaps_self", "output_layout", ...,
    "fused_read_hazard", "raised"; "cannot_check" when the checker could not
    model the graphs, "functional_raised" (FunctionalGraphRaisedError) when the
    functional graph raises on the sample args; `cannot_check` is then True);
    `reason_text` says what it means.
    """

    def __init__(
        self,
        message: str,
        *,
        node: str | None = None,
        operand: str | None = None,
        reason: str = "",
        cannot_check: bool = False,
    ) -> None:
        super().__init__(message)
        self.node = node
        self.operand = operand
        self.reason = reason
        self.cannot_check = cannot_check

    @property
    def reason_text(self) -> str:
        """The reason in words (the checker's table)."""
        found = getattr(_REASON, self.reason, None)
        return found.text if found is not None else ""


class FunctionalGraphRaisedError(ReinplaceCheckError, RuntimeError):
    """The functional graph itself raises when run on the sample args, so it
    defines no values to check the rewrite against. Not a verdict on the
    rewrite: the graph is broken for these args (make_fx, for one, keeps an op
    that raised inside a try/except of the traced program). A RuntimeError as
    well as a ReinplaceCheckError (with `cannot_check` True, `reason`
    "functional_raised"); `node` names the functional graph's node that raised.
    """


class _CannotCheck(Exception):
    pass


class _FunctionalRaised(_CannotCheck):
    def __init__(self, message: str, node: str) -> None:
        super().__init__(message)
        self.node = node


def check_reinplaced(
    functional_gm: GraphModule,
    reinplaced_gm: GraphModule,
    *sample_args: Any,
    inputs_written_back_may_be_written: bool = False,
    compiler: str | None = None,
) -> None:
    """Raise ReinplaceCheckError unless `reinplaced_gm` provably computes what
    `functional_gm` computes on `sample_args` (outputs, output aliasing, inputs'
    final contents), writes no graph input but by write-backs, and breaks no
    aliasing rule of its in-place ops. Graphs are checked at the sample args'
    concrete sizes.

    Sample args may be real or FakeTensors (what AOTAutograd hands a compiler),
    with any fake mode active or none: only their sizes, strides, offsets,
    dtypes and storage sharing matter (see `_Inputs`). Symbolic sizes are
    checked at their hints, the sizes of the example the graph was traced
    from: a proof for that size only. A size with no hint, or an op whose
    output depends on values it cannot have from fake args, is a
    ReinplaceCheckError with `cannot_check` True.

    inputs_written_back_may_be_written: any node may write the bytes of a
    graph input that the functional graph writes back (what
    `reinplace(policy="compile")` does); every read and the final contents are
    still proven.

    compiler="inductor": also prove the rewrite sound as Inductor lowers it
    (what `reinplace(policy="inductor", check=True)` asks): no in-place write
    through a view of another dtype than its buffer's, and no write whose fused
    producers read the written buffer at other elements where the rewrite
    introduced it (csrc/core/inductor_contract.h states both rules)."""
    if compiler not in COMPILERS:
        raise ValueError(f"check_reinplaced: unknown compiler {compiler!r}; expected one of {COMPILERS}")
    for gm in (functional_gm, reinplaced_gm):
        if not isinstance(gm, GraphModule):
            raise TypeError(f"check_reinplaced expects torch.fx.GraphModules, got {type(gm).__name__}")
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    # A compiler may call us inside its fake mode (AOTAutograd does): the runs
    # choose their own mode (see _Inputs), whatever is active around them.
    with unset_fake_temporarily():
        _check(functional_gm, reinplaced_gm, sample_args, inputs_written_back_may_be_written, compiler)


def _check(
    functional_gm: GraphModule,
    reinplaced_gm: GraphModule,
    sample_args: tuple,
    inputs_written_back_may_be_written: bool,
    compiler: str | None = None,
) -> None:
    try:
        inputs = _Inputs(functional_gm, sample_args)
        slots: list[tuple] = []
        functional = _Recorder(functional_gm, inputs, slots, None)
        functional.run()
        rewritten = _Recorder(reinplaced_gm, inputs, slots, functional, compiler=compiler)
        failure = rewritten.run()
    except _FunctionalRaised as e:
        raise FunctionalGraphRaisedError(
            f"fxinplace: cannot check the rewritten graph: {e}; it defines no values to check against",
            node=e.node,
            reason=_REASON.functional_raised.name,
            cannot_check=True,
        ) from e.__cause__
    except _CannotCheck as e:
        raise ReinplaceCheckError(
            f"fxinplace: cannot check the rewritten graph: {e}",
            reason=_REASON.cannot_check.name,
            cannot_check=True,
        ) from e
    problem = (
        inputs.table(),
        slots,
        functional.graph_tuple(),
        rewritten.graph_tuple(),
        inputs_written_back_may_be_written,
        compiler == "inductor",
    )
    outcome, index, operand, reason, message = _C.check_rewrite(problem)
    # Findings are (position, node, operand, reason, message, cannot_check); the
    # earliest in the rewritten graph is reported.
    findings = list(rewritten.findings)
    if outcome != _OK and (failure is None or index >= 0):
        node = rewritten.check_nodes[index] if index >= 0 else None
        operand_name = rewritten.reads[index][operand] if index >= 0 and operand >= 0 else None
        where = index if index >= 0 else math.inf
        findings.append((where, node, operand_name, reason.name, message, outcome == _CANNOT_CHECK))
    if failure is not None:
        findings.append(failure)
    if not findings:
        return
    _where, node, operand_name, reason, message, cannot = min(findings, key=lambda f: f[0])
    prefix = "fxinplace: cannot check the rewritten graph: " if cannot else "fxinplace: rewritten graph: "
    raise ReinplaceCheckError(
        prefix + message, node=node, operand=operand_name, reason=reason, cannot_check=cannot
    )


def copy_functional(gm: Any) -> GraphModule | None:
    """A copy of `gm`'s graph to check against after the pass rewrites `gm`
    (node names kept; attributes shared, the pass never writes them)."""
    if not isinstance(gm, GraphModule):
        return None  # the pass itself reports it
    graph = torch.fx.Graph()
    result = graph.graph_copy(gm.graph, {}, return_output_node=True)
    if result is not None:
        value, output = result
        graph.output(value, output.type)
    return GraphModule(gm, graph)


# ----------------------------------------------------------------------------
# Graph inputs


class _Inputs:
    """The storages of the sample args and module constants: numbered the same
    in both graphs, copied afresh for each run.

    Real sample args: each run works on clones of their storages, for real.
    Fake ones (FakeTensors, with sizes that may be symbolic): each run works
    on fresh fake tensors of the same sizes (symbolic ones at their hints),
    strides, offsets and storage sharing, in a fake mode of the checker's own
    without symbolic shapes, so that every size the recorder sees is concrete.
    The checker needs nothing else of the args: tags stand for their values.
    """

    def __init__(self, gm: GraphModule, sample_args: tuple) -> None:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(sample_args):
            raise _CannotCheck(
                f"the graph has {len(placeholders)} placeholders but {len(sample_args)} sample args"
            )
        self.sample_args = sample_args
        self.names: list[list[str]] = []
        self.rows: list[list] = []  # [nbytes, itemsize, constant]
        self.by_storage: dict[int, int] = {}
        self.by_attr: dict[str, int] = {}
        self.fake_mode: Any = None
        if any(_is_fake(a) for a in sample_args):
            from torch._subclasses.fake_tensor import FakeTensorMode

            # Real tensors met in a fake run (module constants, a higher-order
            # op's captured tensors) are faked on the way.
            self.fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        # Each placeholder's (storage offset, sizes, strides), concrete.
        self.layouts: list[tuple[int, list[int], list[int]] | None] = []
        for node, arg in zip(placeholders, sample_args, strict=True):
            if isinstance(arg, torch.Tensor):
                what = f"sample arg {node.name}"
                if arg.layout != torch.strided:
                    raise _CannotCheck(f"{what} has layout {arg.layout} (only strided tensors are modelled)")
                self.layouts.append(
                    (
                        _concrete(arg.storage_offset(), what),
                        [_concrete(v, what) for v in arg.shape],
                        [_concrete(v, what) for v in arg.stride()],
                    )
                )
                self._add(node.name, arg, arg.untyped_storage()._cdata, False)
            else:
                self.layouts.append(None)
                if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                    _concrete(arg, f"sample arg {node.name}")

    def _add(self, name: str, t: torch.Tensor, key: Any, constant: bool) -> int:
        table = self.by_attr if constant else self.by_storage
        found = table.get(key)
        if found is None:
            found = table[key] = len(self.rows)
            nbytes = _concrete(t.untyped_storage().nbytes(), f"the storage of {name}")
            self.rows.append([nbytes, t.element_size(), constant])
            self.names.append([])
        if name not in self.names[found]:
            self.names[found].append(name)
        return found

    def constant(self, target: str, t: torch.Tensor) -> int:
        return self._add(target, t, target, True)

    def table(self) -> list[tuple]:
        return [("/".join(n), *row) for n, row in zip(self.names, self.rows, strict=True)]

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Where a graph runs: in the checker's fake mode for fake args; for real
        ones, on a fixed random seed (both graphs draw the same numbers)."""
        if self.fake_mode is not None:
            with self.fake_mode, torch.no_grad():
                yield
            return
        devices = sorted({a.device.index or 0 for a in _leaves(self.sample_args) if _is_cuda(a)})
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(0)
            yield

    def fresh_storage(self, t: torch.Tensor, nbytes: int) -> Any:
        """A storage for a run's copy of `t`'s: its clone, or a fake one of `nbytes` (in `running`)."""
        if self.fake_mode is None:
            return t.untyped_storage().clone()
        return torch.empty(nbytes, dtype=torch.uint8, device=t.device).untyped_storage()

    def copies(self) -> list[Any]:
        """Fresh copies of the sample args, sharing storage as the originals do (in `running`)."""
        storages: dict[int, Any] = {}
        out = []
        for arg, layout in zip(self.sample_args, self.layouts, strict=True):
            if isinstance(arg, torch.Tensor):
                key = arg.untyped_storage()._cdata
                if key not in storages:
                    storages[key] = self.fresh_storage(arg, self.rows[self.by_storage[key]][0])
                out.append(_on_storage(arg, storages[key], layout))
            elif isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                out.append(_concrete(arg, "a sample arg"))
            else:
                out.append(arg)
        return out


def _is_fake(v: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(v, FakeTensor)


def _concrete(v: Any, what: str) -> Any:
    """A size, stride or scalar as a plain number: a symbolic one at its hint."""
    if not isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return v
    hint = v.node.hint
    if hint is None:
        raise _CannotCheck(
            f"{what} has a symbolic size or value with no hint ({v}; data-dependent): "
            "the checker runs the graphs at concrete sizes"
        )
    return hint


def _beyond_fake(e: Exception) -> bool:
    """Whether a fake run raised for want of values or of a fake kernel, not
    because the graph is wrong: a data-dependent output or shape, an op with no
    fake implementation."""
    from torch._subclasses import fake_tensor
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    kinds = (
        fake_tensor.DataDependentOutputException,
        fake_tensor.DynamicOutputShapeException,
        fake_tensor.UnsupportedOperatorException,
        fake_tensor.UnsupportedFakeTensorException,
        GuardOnDataDependentSymNode,
    )
    return isinstance(e, kinds)


def _on_storage(t: torch.Tensor, storage: Any, layout: tuple | None = None) -> torch.Tensor:
    offset, sizes, strides = layout or (t.storage_offset(), t.shape, t.stride())
    fresh = torch.empty(0, dtype=t.dtype, device=t.device)
    return fresh.set_(storage, offset, sizes, strides)


# ----------------------------------------------------------------------------
# Recording a run


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


class _Recorder:
    """Runs one graph and records what each node reads and writes (see the module doc).

    `functional` is None for the functional graph; for the rewritten graph it is
    the functional graph's recorder, whose nodes and values it is matched to.
    """

    def __init__(
        self,
        gm: GraphModule,
        inputs: _Inputs,
        slots: list[tuple],
        functional: _Recorder | None,
        *,
        compiler: str | None = None,
    ) -> None:
        self.gm = gm
        self.compiler = compiler
        self.inputs = inputs
        self.slots = slots
        self.functional = functional
        self.storage_index: dict[int, int] = {}
        self.storages: list[list] = []  # [nbytes, {itemsizes}, input, dtype (-1: several)]
        self.nodes: list[tuple] = []
        self.check_nodes: list[str] = []  # fx node name of each recorded node
        self.reads: list[list[str]] = []  # operand names of each recorded node
        self.index_of: dict[str, int] = {}  # fx node name -> recorded node index
        self.slot_of: dict[tuple, int] = {}  # (fx node name, key) -> slot
        self.targets: dict[str, Any] = {}
        self.scalars: dict[str, dict[str, Any]] = {}
        self.findings: list[tuple] = []
        self.afv2_queue: dict[Any, list[str]] = {}
        self.env: dict[Node, Any] = {}

    # -- storages and refs --------------------------------------------------

    def storage(self, t: torch.Tensor, input_index: int = -1) -> int:
        """The storage of `t`; the first tensor seen on it (a graph input's, or the
        value that allocated it) gives the buffer's dtype."""
        key = t.untyped_storage()._cdata
        found = self.storage_index.get(key)
        if found is None:
            found = self.storage_index[key] = len(self.storages)
            self.storages.append([t.untyped_storage().nbytes(), set(), input_index, _dtype_code(t.dtype)])
        elif input_index >= 0 and self.storages[found][3] != _dtype_code(t.dtype):
            self.storages[found][3] = -1  # inputs of several dtypes share it
        return found

    def ref(self, t: torch.Tensor) -> tuple:
        if t.layout != torch.strided or t.is_quantized or t.is_nested:
            raise _CannotCheck(f"a tensor of layout {t.layout} (only strided tensors are modelled)")
        s = self.storage(t)
        self.storages[s][1].add(t.element_size())
        return (
            s,
            list(t.shape),
            list(t.stride()),
            t.storage_offset(),
            t.element_size(),
            _dtype_code(t.dtype),
        )

    def prefix_ref(self, t: torch.Tensor, n: int) -> tuple:
        s = self.storage(t)
        self.storages[s][1].add(t.element_size())
        return (s, [n], [1], 0, t.element_size(), _dtype_code(t.dtype))

    def graph_tuple(self) -> tuple:
        storages = []
        for nbytes, itemsizes, input_index, dtype in self.storages:
            granularity = math.gcd(*itemsizes) if itemsizes else 1
            storages.append((nbytes, granularity, input_index, dtype))
        return (storages, self.nodes)

    # -- running ------------------------------------------------------------

    def run(self) -> tuple | None:
        """Runs the graph; for the rewritten graph, returns the finding if a node raises."""
        with self.inputs.running():
            args = iter(zip(self.inputs.copies(), self.inputs.sample_args, strict=True))
            for node in self.gm.graph.nodes:
                if node.op == "placeholder":
                    value, sample = next(args)
                    self.env[node] = value
                    if isinstance(value, torch.Tensor):
                        self.storage(value, self.inputs.by_storage[sample.untyped_storage()._cdata])
                        self.ref(value)
                elif node.op == "get_attr":
                    self.env[node] = self.attr(node)
                elif node.op == "call_function":
                    failure = self.call(node)
                    if failure is not None:
                        return failure
                elif node.op == "output":
                    self.output(node)
                else:
                    raise _CannotCheck(
                        f"node {node.name} is a {node.op} node (only ATen graphs are modelled)"
                    )
        return None

    def attr(self, node: Node) -> Any:
        obj: Any = self.gm
        for part in node.target.split("."):
            obj = getattr(obj, part)
        if not isinstance(obj, torch.Tensor):
            return obj  # a submodule (a higher-order op's subgraph)
        index = self.inputs.constant(node.target, obj)
        copy = _on_storage(obj.detach(), self.inputs.fresh_storage(obj, self.inputs.rows[index][0]))
        self.storage(copy, index)
        self.ref(copy)
        return copy

    def snap(self, node: Node) -> Any:
        """Node -> its value now, tensors as _Refs."""
        value = self.env[node]

        def one(v: Any) -> Any:
            return _Ref(self.ref(v), node.name, v) if isinstance(v, torch.Tensor) else v

        if isinstance(value, (list, tuple)):
            return type(value)(one(v) for v in value)
        return one(value)

    def call(self, node: Node) -> tuple | None:
        args = map_arg(node.args, lambda n: self.env[n])
        kwargs = map_arg(node.kwargs, lambda n: self.env[n])
        snap_args = map_arg(node.args, self.snap)
        snap_kwargs = map_arg(node.kwargs, self.snap)
        try:
            value = _run_target(node.target, args, kwargs)
        except Exception as e:  # noqa: BLE001 - reported with the node
            if self.inputs.fake_mode is not None and _beyond_fake(e):
                raise _CannotCheck(
                    f"node {node.name} ({_op_name(node.target)}) cannot run on fake example inputs "
                    f"({type(e).__name__}: {e}); the checker needs real sample args for it"
                ) from e
            message = f"node {node.name} ({_op_name(node.target)}) raised when run on the sample args: "
            message += f"{type(e).__name__}: {e}"
            if self.functional is None:
                raise _FunctionalRaised(f"the functional graph's {message}", node.name) from e
            # Still check what it read: a wrong operand is the likelier cause,
            # and is reported first (same position, found first).
            _Translator(self, node, snap_args, snap_kwargs, args, kwargs, None).reads_only()
            return (len(self.nodes) - 1, node.name, None, _REASON.raised.name, message, False)
        self.env[node] = value
        _Translator(self, node, snap_args, snap_kwargs, args, kwargs, value).translate()
        return None

    def output(self, node: Node) -> None:
        leaves = _leaves(map_arg(node.args[0], self.snap))
        reads = [
            (f"output[{i}]", leaf.source, leaf.ref, True)
            for i, leaf in enumerate(leaves)
            if isinstance(leaf, _Ref)
        ]
        counterpart = -1
        if self.functional is not None:
            counterpart = self.functional.index_of.get("output", -1)
        self.add(node, counterpart, [], reads, [], is_output=True)
        self.index_of["output"] = len(self.nodes) - 1

    def add(
        self,
        node: Node,
        counterpart: int,
        prepare: list,
        reads: list,
        effects: list,
        *,
        rule: Any = _RULE_NONE,
        pointwise: bool = False,
        self_operand: int = -1,
        written: list[int] | None = None,
        is_output: bool = False,
        foreach: tuple[list[int], list[int]] | None = None,
        commutative_pair: bool = False,
    ) -> None:
        self.index_of[node.name] = len(self.nodes)
        self.check_nodes.append(node.name)
        self.reads.append([r[0] for r in reads])
        op = "" if node.op == "output" else _op_name(node.target)
        inductor = _C.CheckInductorCode.NONE
        if self.compiler == "inductor" and node.op != "output":
            from fxinplace._check_inductor import inductor_code

            inductor = inductor_code(node.target, rule)
        self.nodes.append(
            (
                node.name,
                op,
                counterpart,
                prepare,
                reads,
                effects,
                rule,
                pointwise,
                self_operand,
                written or [],
                is_output,
                *(foreach or ([], [])),
                commutative_pair,
                inductor,
            )
        )

    def finding(self, reason: Any, message: str, node: Node) -> None:
        """A finding of the frontend's own; `reason` a CheckReason."""
        position = len(self.nodes) - 0.5  # before the next recorded node runs
        text = f"node {node.name} ({_op_name(node.target)}): {message}"
        self.findings.append((position, node.name, None, reason.name, text, False))

    # -- slots ----------------------------------------------------------------

    def slot(self, name: str, key: tuple, t: torch.Tensor, label: str) -> int:
        """The tag space of the functional value (node `name`, `key`); created
        by the functional graph, looked up by the rewritten one."""
        # A value the functional graph never computes gets tags of its own, equal
        # to nothing the functional graph holds: reading it is a wrong value.
        if self.functional is not None:
            found = self.functional.slot_of.get((name, key))
            if found is not None:
                return found
            label = f"{label} (a value the functional graph does not compute)"
        else:
            self.slot_of[(name, key)] = len(self.slots)
        self.slots.append((label, list(t.shape), t.element_size(), _dtype_code(t.dtype)))
        return len(self.slots) - 1


def _is_cuda(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and v.device.type == "cuda"


# ----------------------------------------------------------------------------
# Translating one node


class _Translator:
    def __init__(
        self, rec: _Recorder, node: Node, snap_args: Any, snap_kwargs: Any, args: Any, kwargs: Any, value: Any
    ) -> None:
        self.rec = rec
        self.node = node
        self.snap_args = snap_args
        self.snap_kwargs = snap_kwargs
        self.args = args
        self.kwargs = kwargs
        self.value = value
        self.target = node.target
        self.functional = rec.functional
        # The functional node whose values this one computes (see fill).
        self.counterpart_name = node.name

    @property
    def is_functional(self) -> bool:
        return self.functional is None

    def translate(self) -> None:
        rec, node, target = self.rec, self.node, self.target
        rec.targets[node.name] = target
        if target is operator.getitem:
            return  # names an item of a value; reads nothing
        if target is _AFV2:
            self.auto_functionalized()
            return
        if target is _AFV1:
            self.auto_functionalized_v1()
            return
        if not isinstance(target, torch._ops.OpOverload):
            self.opaque()
            return
        self.compare_scalars()
        if target in _METADATA_QUERIES:
            return
        schema = target._schema
        if any(_is_write(a) for a in schema.arguments):
            self.mutating()
            return
        self.functional_op(target, self.counterpart_same_target())

    def reads_only(self) -> None:
        """Records a node that raised: its operands and aliasing are checked, it writes nothing."""
        target, node = self.target, self.node
        if not isinstance(target, torch._ops.OpOverload) or target.namespace not in ("aten", "prims"):
            self.rec.add(node, -1, [], [], [])
            return
        reads = self.operands(target, self.snap_args, self.snap_kwargs)
        twin = self.twin_target()
        matched = twin is target or _inplace_of(twin, target)
        counterpart = self.functional.index_of.get(node.name, -1) if matched else -1
        written = [a.name for a in target._schema.arguments if _is_write(a)]
        if not written:
            self.rec.add(node, counterpart, [], reads, [])
            return
        if _is_foreach_inplace(target):
            layout = _foreach_layout(target, reads)
            self.rec.add(node, counterpart, [], reads, [], rule=_RULE_FOREACH, pointwise=True, foreach=layout)
            return
        self_operand = next((i for i, r in enumerate(reads) if r[0] == written[0]), -1)
        if target is _aten.copy_.default and self_operand >= 0:
            reads[self_operand] = (*reads[self_operand][:3], False)
        pointwise = torch.Tag.pointwise in target.tags or target is _aten.copy_.default
        rule = _RULE_WRITE_BACK if self.is_write_back() else _RULE_INPLACE
        self.rec.add(
            node, counterpart, [], reads, [], rule=rule, pointwise=pointwise, self_operand=self_operand
        )

    # -- counterparts ---------------------------------------------------------

    def twin_target(self) -> Any:
        if self.functional is None:
            return None
        return self.functional.targets.get(self.node.name)

    def counterpart_same_target(self) -> int:
        if self.functional is None or self.twin_target() is not self.target:
            return -1
        return self.functional.index_of.get(self.node.name, -1)

    def compare_scalars(self) -> None:
        """Non-tensor arguments must be those of the functional node of the same name."""
        rec, node = self.rec, self.node
        bound = _bind(self.target, self.args, self.kwargs)
        scalars = {k: _scalar_view(v) for k, v in bound.items()}
        if self.functional is None:
            rec.scalars[node.name] = scalars
            return
        theirs = self.functional.scalars.get(node.name)
        twin = self.twin_target()
        if theirs is None or not (twin is self.target or _inplace_of(twin, self.target)):
            return
        for name, value in scalars.items():
            if name in theirs and value != theirs[name]:
                rec.finding(
                    _REASON.wrong_argument,
                    f"passes {_show(value)} for argument {name!r} where the functional graph passes "
                    f"{_show(theirs[name])}",
                    node,
                )
                return

    # -- operands -------------------------------------------------------------

    def operands(self, target: Any, snap_args: Any, snap_kwargs: Any) -> list[tuple]:
        """(arg, source, ref, values_read) of every tensor operand, in schema order."""
        if not isinstance(target, torch._ops.OpOverload):
            found: list[tuple] = []
            _walk("args", snap_args, found)
            _walk("kwargs", snap_kwargs, found)
            return [(name, r.source, r.ref, True) for name, r in found]
        shape_only = target._schema.name in _SHAPE_ONLY
        self_shape_only = target._schema.name in _SHAPE_ONLY_SELF
        out = []
        for name, value in _bind(target, snap_args, snap_kwargs).items():
            items = (
                [(name, value)]
                if not isinstance(value, (list, tuple))
                else [(f"{name}[{i}]", v) for i, v in enumerate(value)]
            )
            for arg, v in items:
                if isinstance(v, _Ref):
                    out.append(
                        (arg, v.source, v.ref, not (shape_only or (self_shape_only and arg == "self")))
                    )
        return out

    def fresh_leaves(self) -> list[tuple[int, torch.Tensor]]:
        """(index, tensor) of the result's tensors in memory no operand shares."""
        operand_storages = {
            v.untyped_storage()._cdata
            for v in _leaves([self.args, list(self.kwargs.values())])
            if isinstance(v, torch.Tensor)
        }
        return [
            (k, v)
            for k, v in enumerate(_leaves(self.value))
            if isinstance(v, torch.Tensor) and v.untyped_storage()._cdata not in operand_storages
        ]

    # -- kinds of node ----------------------------------------------------------

    def functional_op(self, target: torch._ops.OpOverload, counterpart: int) -> None:
        fresh = self.fresh_leaves()
        if not fresh:
            return  # a view: writes nothing, reads nothing
        reads = self.operands(target, self.snap_args, self.snap_kwargs)
        effects = self.effects(target, [t for _, t in fresh], [k for k, _ in fresh])
        foreach = None
        if target._schema.name.startswith("aten::_foreach_") and len(effects) == len(_leaves(self.value)):
            # Result k is computed from the operands of list element k (and those beside
            # the lists): what rule 5 follows back through it.
            foreach = ([], [_list_element(r[0]) for r in reads])
        self.rec.add(self.node, counterpart, [], reads, effects, foreach=foreach)

    def opaque(self) -> None:
        """Higher-order ops and other callables: read every tensor, return fresh ones."""
        fresh = self.fresh_leaves()
        reads = self.operands(self.target, self.snap_args, self.snap_kwargs)
        if not fresh and not reads:
            return  # arithmetic on sizes
        counterpart = self.counterpart_same_target()
        effects = [self.fill(t, ("out", k)) for k, t in fresh]
        self.rec.add(self.node, counterpart, [], reads, effects)

    def fill(self, t: torch.Tensor, key: tuple) -> tuple:
        name = self.node.name
        if key[0] == "out":
            count = sum(isinstance(v, torch.Tensor) for v in _leaves(self.value))
            label = name if count == 1 and key[1] == 0 else f"{name}[{key[1]}]"
        else:
            label = f"{name} (new {key[1]})"
        slot = self.rec.slot(self.counterpart_name, key, t, label)
        return (_FILL, self.rec.ref(t), None, slot, 0)

    def copy(self, dst: torch.Tensor, src: torch.Tensor) -> tuple:
        return (_COPY, self.rec.ref(dst), self.rec.ref(src), -1, 0)

    def effects(
        self, target: torch._ops.OpOverload, outs: list[torch.Tensor], keys: list[int]
    ) -> list[tuple]:
        """What `target` (a functional op) does to `outs`, its results."""
        name = target._schema.name
        bound = _bind(target, self.args, self.kwargs)
        moved = self.moved_values(name, target, bound, outs)
        if moved is not None:
            return moved
        return [self.fill(t, ("out", k)) for k, t in zip(keys, outs, strict=True)]

    def moved_values(
        self, name: str, target: Any, bound: dict, outs: list[torch.Tensor]
    ) -> list[tuple] | None:
        """Effects of ops that move values without computing new ones, or None."""
        if len(outs) != 1 and not name.endswith("_copy"):
            return None
        out = outs[0] if outs else None
        if name in _CLONES or name == "aten::_to_copy":
            src = bound.get("self")
            if _same_kind(src, out) and src.shape == out.shape:
                return [self.copy(out, src)]
            return None
        if name == "aten::copy":
            src = bound.get("src")
            if not _same_kind(src, out):
                return None
            try:
                return [self.copy(out, src.expand(out.shape))]
            except RuntimeError:
                return None
        if name in _SCATTER_VIEWS:
            base, src = bound.get("self"), bound.get("src")
            if not (_same_kind(base, out) and _same_kind(src, out)):
                return None
            rest = [v for k, v in bound.items() if k not in ("self", "src")]
            try:
                view = _SCATTER_VIEWS[name](out, *rest)
                src = src.expand(view.shape)
            except RuntimeError:
                return None
            if torch._debug_has_internal_overlap(view) == 1:
                # ATen's copy_ into a view whose elements share memory raises at run time
                # ("more than one element of the written-to tensor refers to a single memory
                # location"): the program has no value to compare.
                raise _CannotCheck(
                    f"node {self.node.name} ({name}) writes through a view with internal overlap"
                )
            return [self.clone_like_aten(out, base), self.copy(view, src)]
        if name.endswith("_copy"):
            return self.copy_of_view(name, target, outs)
        return None

    def clone_like_aten(self, out: torch.Tensor, base: torch.Tensor) -> tuple:
        """The scatter's copy of its base: ATen clones the base's storage up to its
        last element when the result keeps the base's layout (clone_preserve_strides)."""
        n = _needed(base)
        same_layout = out.stride() == base.stride() and out.storage_offset() == base.storage_offset()
        fits = n * out.element_size() <= min(out.untyped_storage().nbytes(), base.untyped_storage().nbytes())
        if same_layout and fits and out.dtype == base.dtype:
            return (_COPY, self.rec.prefix_ref(out, n), self.rec.prefix_ref(base, n), -1, 0)
        return self.copy(out, base)

    def copy_of_view(self, name: str, target: Any, outs: list[torch.Tensor]) -> list[tuple] | None:
        """`x_copy(t, ...)` is `x(t, ...)` copied: replay the view on the live operands."""
        namespace, base_name = name.split("::", 1)
        packet = getattr(getattr(torch.ops, namespace), base_name[: -len("_copy")], None)
        view_op = getattr(packet, target._overloadname, None) if packet is not None else None
        if view_op is None or not any(r.alias_info is not None for r in view_op._schema.returns):
            return None
        try:
            views = [v for v in _leaves(view_op(*self.args, **self.kwargs)) if isinstance(v, torch.Tensor)]
        except Exception:  # noqa: BLE001 - then it is an ordinary computation
            return None
        if len(views) != len(outs) or not all(
            _same_kind(v, o) and v.shape == o.shape for v, o in zip(views, outs, strict=True)
        ):
            return None
        return [self.copy(o, v) for o, v in zip(outs, views, strict=True)]

    # -- mutating ops -----------------------------------------------------------

    def mutating(self) -> None:
        rec, node, target = self.rec, self.node, self.target
        twin = self.twin_target()
        # `copy_(x, add)` standing for the functional `copy(x, add)` (whose value a
        # write-back then copied into the input x): an in-place op into the input, which
        # the rules for in-place ops and input writes judge, not a write-back of its own.
        stands_for_functional_copy = self.functional is not None and _inplace_of(twin, target)
        if self.is_write_back() and not stands_for_functional_copy:
            counterpart = -1
            if self.functional is not None:
                counterpart = self.functional.index_of.get(node.name, -1) if twin is target else -1
                if counterpart < 0:
                    rec.finding(
                        _REASON.input_written,
                        f"writes graph input {node.args[0]} ({_op_name(target)}) where the functional graph "
                        "has no such write-back",
                        node,
                    )
                    return
            self.write_back(counterpart)
            return
        if self.functional is None:
            raise _CannotCheck(
                f"the functional graph mutates: node {node.name} ({_op_name(target)}) is not a write-back "
                "into a graph input"
            )
        twin = self.twin_target()
        queue = self.functional.afv2_queue.get(target)
        if _is_foreach_inplace(target):
            matched = twin is not None and _inplace_of(twin, target)
            self.foreach_inplace(twin if matched else None)
        elif twin is not None and (_inplace_of(twin, target) or _out_form_of(twin, target)):
            self.inplace(twin, self.functional.index_of.get(node.name, -1))
        elif queue:
            self.direct_custom_op(queue.pop(0))
        elif target is _aten.copy_.default:
            # A scatter rewritten as view + copy_. A copy_ between dtypes converts values,
            # which the tag model does not follow (the functional scatter's converted
            # elements are fresh tags of its own): say so rather than report a difference.
            bound = _bind(target, self.args, self.kwargs)
            if not _same_kind(bound.get("self"), bound.get("src")):
                raise _CannotCheck(
                    f"node {node.name} (aten.copy_) converts {bound['src'].dtype} values to "
                    f"{bound['self'].dtype} (value conversions are not modelled)"
                )
            self.inplace(_aten.copy.default, -1)
        else:
            self.unmatched_mutation()

    def unmatched_mutation(self) -> None:
        """A mutating node standing for no functional node: what it writes is a
        value the functional graph does not have (reading it is a wrong value);
        ATen's aliasing rules and the input rule still apply."""
        rec, node, target = self.rec, self.node, self.target
        reads = self.operands(target, self.snap_args, self.snap_kwargs)
        bound = _bind(target, self.args, self.kwargs)
        effects, written = [], []
        for arg in target._schema.arguments:
            value = bound.get(arg.name)
            if not _is_write(arg):
                continue
            items = (
                [(f"{arg.name}[{i}]", v) for i, v in enumerate(value)]
                if isinstance(value, list)
                else [(arg.name, value)]
            )
            for key, v in items:
                if isinstance(v, torch.Tensor):
                    written.extend(i for i, r in enumerate(reads) if r[0] == key)
                    effects.append(self.fill(v, ("mut", key)))
        pointwise = torch.Tag.pointwise in target.tags
        self_operand = written[0] if written else -1
        rec.add(
            node, -1, [], reads, effects, rule=_RULE_INPLACE, pointwise=pointwise, self_operand=self_operand
        )

    def is_write_back(self) -> bool:
        if self.target not in _WRITE_BACK_OPS:
            return False
        dst = self.node.args[0] if self.node.args else None
        while isinstance(dst, Node) and dst.op == "call_function" and dst.target in _WRITE_BACK_OPS[1:]:
            dst = dst.args[0]
        return isinstance(dst, Node) and dst.op == "placeholder"

    def write_back(self, counterpart: int) -> None:
        target = self.target
        bound = _bind(target, self.snap_args, self.snap_kwargs)
        live = _bind(target, self.args, self.kwargs)
        dst = bound["self"]
        reads = [("self", dst.source, dst.ref, False)]
        effects: list[tuple] = []
        if target is _aten.copy_.default:
            src = bound["src"]
            reads.append(("src", src.source, src.ref, True))
            out, src_live = self.value, live["src"]
            if _same_kind(out, src_live):
                effects.append(self.copy(out, src_live.expand(out.shape)))
            else:
                effects.append(self.fill(out, ("out", 0)))
        elif target is _aten.resize_.default:
            nbytes = self.value.untyped_storage().nbytes()
            effects.append((_GROW, self.rec.ref(self.value), None, -1, nbytes))
        self.rec.add(self.node, counterpart, [], reads, effects, rule=_RULE_WRITE_BACK)

    def inplace(self, functional_target: Any, counterpart: int) -> None:
        """`foo_` standing for the functional `foo` (or an inserted `copy_`), or `foo.out`
        writing into one of `foo`'s own operands: does what `foo` does, into that tensor."""
        rec, node, target = self.rec, self.node, self.target
        reads = self.operands(target, self.snap_args, self.snap_kwargs)
        written = next(a.name for a in target._schema.arguments if _is_write(a))
        self_operand = next((i for i, r in enumerate(reads) if r[0] == written), -1)
        if _out_form_of(functional_target, target):
            # foo.out(a, b, out=b): the out= argument is the memory of an operand foo reads
            # (exactly its elements); the reads line up with foo's without it.
            out_ref = reads.pop(self_operand)[2]
            self_operand = next((i for i, r in enumerate(reads) if r[2] == out_ref), -1)
            if self_operand < 0:
                self.unmatched_mutation()
                return
        if target is _aten.copy_.default:
            reads[self_operand] = (*reads[self_operand][:3], False)  # copy_ overwrites self whole
        outs = [v for v in _leaves(self.value) if isinstance(v, torch.Tensor)]
        before = _bind(target, self.snap_args, self.snap_kwargs)[written]
        after = rec.ref(outs[0]) if outs else None
        if after is not None and after[1:4] != before.ref[1:4]:
            rec.finding(
                _REASON.metadata_changed, f"changes the sizes, strides or offset of {before.source}", node
            )
        effects = self.effects(functional_target, outs, list(range(len(outs))))
        # Some in-place overloads lack the tag their functional op has (eq_ vs eq.Tensor);
        # elementwise is a property of the computation, which the functional op states.
        functional_tags = getattr(functional_target, "tags", ())
        # copy_ and copy.out write src's element e into element e: elementwise too.
        pointwise = (
            torch.Tag.pointwise in target.tags
            or torch.Tag.pointwise in functional_tags
            or target is _aten.copy_.default
            or functional_target is _aten.copy.default
        )
        rec.add(
            node,
            counterpart,
            [],
            reads,
            effects,
            rule=_RULE_INPLACE,
            pointwise=pointwise,
            self_operand=self_operand,
            commutative_pair=self.commutative_pair(functional_target),
        )

    def commutative_pair(self, functional_target: Any) -> bool:
        """`b.foo_(a)` may stand for `foo(a, b)`: foo commutes in its two tensor operands
        (add without alpha, mul, ...; the operator facts say which), and nothing else is passed."""
        if (
            not isinstance(functional_target, torch._ops.OpOverload)
            or not _op_info(functional_target).commutative
        ):
            return False
        return len(self.node.args) == 2 and not self.node.kwargs

    def foreach_inplace(self, functional_target: Any) -> None:
        """`_foreach_foo_(xs, ...)` standing for the functional `ys = _foreach_foo(xs, ...)`:
        element k of xs gets ys[k], what the functional node computes into its result k.
        Without a functional counterpart (None) each element gets a value of its own.
        Every `_foreach_*_` op is elementwise per list element: pointwise."""
        rec, node, target = self.rec, self.node, self.target
        reads = self.operands(target, self.snap_args, self.snap_kwargs)
        selves, element_of = _foreach_layout(target, reads)
        if target._schema.name == "aten::_foreach_copy_":
            for i in selves:  # copies overwrite self whole
                reads[i] = (*reads[i][:3], False)
        written = target._schema.arguments[0].name
        xs = [t for t in _bind(target, self.args, self.kwargs)[written] if isinstance(t, torch.Tensor)]
        if functional_target is None:
            counterpart = -1
            effects = [self.fill(t, ("mut", f"{written}[{k}]")) for k, t in enumerate(xs)]
        else:
            counterpart = self.functional.index_of.get(node.name, -1)
            effects = self.effects(functional_target, xs, list(range(len(xs))))
        rec.add(
            node,
            counterpart,
            [],
            reads,
            effects,
            rule=_RULE_FOREACH,
            pointwise=True,
            foreach=(selves, element_of),
        )

    # -- auto_functionalized_v2 -------------------------------------------------

    def auto_functionalized(self) -> None:
        from torch._higher_order_ops.auto_functionalize import (
            get_mutable_args_from_schema,
            read_view_information_from_args,
        )

        rec, node = self.rec, self.node
        op = self.args[0] if self.args else None
        if not isinstance(op, torch._ops.OpOverload) or has_out_semantics(op):
            self.opaque()
            return
        if self.functional is None:
            rec.afv2_queue.setdefault(op, []).append(node.name)
            counterpart = -1
        else:
            counterpart = self.counterpart_same_target()
            queue = self.functional.afv2_queue.get(op, [])
            if node.name in queue:
                queue.remove(node.name)
            if counterpart < 0:
                raise _CannotCheck(
                    f"node {node.name} (auto_functionalized_v2) is not in the functional graph"
                )
        kwargs = dict(self.kwargs)
        snap_kwargs = dict(self.snap_kwargs)
        bases = list(kwargs.get("_all_bases") or [])
        snap_bases = list(snap_kwargs.get("_all_bases") or [])
        only = kwargs.get("_only_clone_these_bases")
        only = range(len(bases)) if only is None else only
        result = list(self.value) if isinstance(self.value, (list, tuple)) else [self.value]
        num_outs = len(result) - len(bases)
        new_bases = result[num_outs:]
        prepare = []
        for i in sorted(set(only)):
            base, new = bases[i], new_bases[i]
            if base is None:
                continue
            n = _needed(base)
            if new.untyped_storage()._cdata == base.untyped_storage()._cdata:
                raise _CannotCheck(f"node {node.name} clones base {i} but returns it uncloned")
            prepare.append((_COPY, rec.prefix_ref(new, n), rec.prefix_ref(base, n), -1, 0))
        names, types = get_mutable_args_from_schema(op._schema)
        views = read_view_information_from_args(names, types, {k: v for k, v in kwargs.items()}, bases)
        # Mutated argument -> (its view regenerated on the (new) base, the base's node).
        mutated: dict[str, tuple[torch.Tensor, str]] = {}
        for name in names:
            info = views[name]
            for key, one in (
                [(f"{name}[{i}]", v) for i, v in enumerate(info)]
                if isinstance(info, list)
                else [(name, info)]
            ):
                if one is not None:
                    base = snap_bases[one.base_index]
                    source = base.source if isinstance(base, _Ref) else "?"
                    mutated[key] = (one.regenerate_view(new_bases), source)
        reads, written = [], []
        for arg in op._schema.arguments:
            if arg.name in names:
                for key, (view, source) in mutated.items():
                    if key == arg.name or key.startswith(arg.name + "["):
                        written.append(len(reads))
                        reads.append((key, source, rec.ref(view), True))
            elif arg.name in snap_kwargs:
                found: list[tuple] = []
                _walk(arg.name, snap_kwargs[arg.name], found)
                reads.extend((name, r.source, r.ref, True) for name, r in found)
        effects = [self.fill(view, ("mut", key)) for key, (view, _) in mutated.items()]
        outs = [v for v in _leaves(result[:num_outs]) if isinstance(v, torch.Tensor)]
        effects += [self.fill(t, ("out", k)) for k, t in enumerate(outs)]
        rule = _RULE_NONE if self.functional is None else _RULE_CUSTOM_OP
        rec.add(node, counterpart, prepare, reads, effects, rule=rule, written=written)

    def auto_functionalized_v1(self) -> None:
        """auto_functionalized (v1): clones each written argument named in
        `_only_clone_these_tensors` (None: all) as `clone_preserve_strides`, then the op
        reads its arguments (the written ones through their clones) and writes the
        clones and its outputs. Its direct call is matched as for v2."""
        from torch._higher_order_ops.auto_functionalize import get_mutable_args_from_schema

        rec, node = self.rec, self.node
        op = self.args[0] if self.args else None
        returns = op._schema.returns if isinstance(op, torch._ops.OpOverload) else ()
        if not isinstance(op, torch._ops.OpOverload) or any(r.alias_info is not None for r in returns):
            self.opaque()
            return
        if self.functional is None:
            rec.afv2_queue.setdefault(op, []).append(node.name)
            counterpart = -1
        else:
            counterpart = self.counterpart_same_target()
            queue = self.functional.afv2_queue.get(op, [])
            if node.name in queue:
                queue.remove(node.name)
            if counterpart < 0:
                raise _CannotCheck(f"node {node.name} (auto_functionalized) is not in the functional graph")
        names, _ = get_mutable_args_from_schema(op._schema)
        only = self.kwargs.get("_only_clone_these_tensors")
        result = list(self.value) if isinstance(self.value, (list, tuple)) else [self.value]
        num_outs = len(result) - len(names)
        new_values = dict(zip(names, result[num_outs:], strict=True))
        prepare, reads, written, effects = [], [], [], []
        for arg in op._schema.arguments:
            if arg.name not in names:
                if arg.name in self.snap_kwargs:
                    found: list[tuple] = []
                    _walk(arg.name, self.snap_kwargs[arg.name], found)
                    reads.extend((key, r.source, r.ref, True) for key, r in found)
                continue
            old, snap, new = self.kwargs[arg.name], self.snap_kwargs[arg.name], new_values[arg.name]
            items = (
                [(f"{arg.name}[{i}]", *one) for i, one in enumerate(zip(old, snap, new, strict=True))]
                if isinstance(old, (list, tuple))
                else [(arg.name, old, snap, new)]
            )
            for key, before, ref, after in items:
                if not isinstance(after, torch.Tensor):
                    continue
                if only is None or arg.name in only:
                    if after.untyped_storage()._cdata == before.untyped_storage()._cdata:
                        raise _CannotCheck(f"node {node.name} clones {key} but returns it uncloned")
                    n = _needed(before)
                    prepare.append((_COPY, rec.prefix_ref(after, n), rec.prefix_ref(before, n), -1, 0))
                written.append(len(reads))
                reads.append((key, ref.source, rec.ref(after), True))
                effects.append(self.fill(after, ("mut", key)))
        outs = [v for v in _leaves(result[:num_outs]) if isinstance(v, torch.Tensor)]
        effects += [self.fill(t, ("out", k)) for k, t in enumerate(outs)]
        rule = _RULE_NONE if self.functional is None else _RULE_CUSTOM_OP
        rec.add(node, counterpart, prepare, reads, effects, rule=rule, written=written)

    def direct_custom_op(self, twin_name: str) -> None:
        """The pass's direct call of a custom op whose functional node was an
        auto_functionalized_v2 node `twin_name`, every base mutated in place."""
        rec, node, op = self.rec, self.node, self.target
        self.counterpart_name = twin_name
        bound = _bind(op, self.snap_args, self.snap_kwargs)
        reads, written, effects = [], [], []
        for arg in op._schema.arguments:
            value = bound.get(arg.name)
            items = (
                [(f"{arg.name}[{i}]", v) for i, v in enumerate(value)]
                if isinstance(value, (list, tuple))
                else [(arg.name, value)]
            )
            for key, v in items:
                if not isinstance(v, _Ref):
                    continue
                if _is_write(arg):
                    written.append(len(reads))
                    effects.append(self.fill(v.tensor, ("mut", key)))
                reads.append((key, v.source, v.ref, True))
        outs = [v for v in _leaves(self.value) if isinstance(v, torch.Tensor)]
        effects += [self.fill(t, ("out", k)) for k, t in enumerate(outs)]
        counterpart = self.functional.index_of.get(twin_name, -1)
        rec.add(node, counterpart, [], reads, effects, rule=_RULE_CUSTOM_OP, written=written)


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


def _inplace_of(functional_target: Any, target: Any) -> bool:
    """Whether `target` is an in-place overload of `functional_target` (aten::foo_ of aten::foo,
    or the in-place form Inductor provides where ATen has none)."""
    if not isinstance(functional_target, torch._ops.OpOverload) or not isinstance(
        target, torch._ops.OpOverload
    ):
        return False
    if target._schema.name == functional_target._schema.name + "_":
        return True
    from fxinplace._inductor_facts import inductor_inplace_form

    # Inductor's forms are prims (importing Inductor to look is not free).
    return target.namespace == "prims" and inductor_inplace_form(functional_target) is target


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
