"""Read an fx.Graph, with the values `metadata.propagate` found, into `_C.planner.GraphBuilder`:
one builder call per node, node references by position. Every decision is the planner's;
this only says what each node is and which memory each of its tensors occupies."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import GraphModule, Node

from fxinplace import _C
from fxinplace._reinplace.auto_functionalized.v1 import AFV1, AFv1Call, read_v1_call
from fxinplace._reinplace.auto_functionalized.v2 import AFV2, AFv2Call, read_call
from fxinplace._reinplace.errors import ReinplaceInputError
from fxinplace._reinplace.higher_order import is_opaque_higher_order
from fxinplace._reinplace.memory import MemoryFacts
from fxinplace._reinplace.metadata import Fresh, Metadata, traced_symbolically
from fxinplace._reinplace.op_info import op_info
from fxinplace._reinplace.symbolic import Symbols, is_static
from fxinplace._reinplace.validate import is_input_write_back, written_input

UNSET = -(2**63)  # a slice bound left out (the planner's ScatterSpec::kUnset)


@dataclass
class GraphReading:
    builder: _C.planner.GraphBuilder
    nodes: list[Node]
    # auto_functionalized(_v2) nodes, decoded once, for applying the plan
    afv2_calls: dict[int, AFv2Call | AFv1Call]
    # ATen op node -> the other operands its result may go into (for Plan.decision(i).slot > 0)
    destinations: dict[int, list[tuple[Node, Any]]]
    # the memory facts read (with_memory_facts), for applying the memory plan
    memory: MemoryFacts | None = None


def read_graph(
    gm: GraphModule,
    metadata: Metadata,
    *,
    with_destinations: bool = False,
    compiler_facts: Callable[[Node], list[tuple[Node, bool, bool, bool, bool, bool]]] | None = None,
    with_memory_facts: bool = False,
) -> GraphReading:
    """with_destinations: also list, for each elementwise op, the other operands its result
    could go into (only read by the planner under PlanOptions.dead_operand_destinations).
    compiler_facts: what the compiler the graph goes to does with each op node (for the
    planner's Inductor policy; see `inductor_policy`). with_memory_facts: each node's device,
    bytes, backend out= kernel and byte count, from its value (for the memory plan; see
    `memory.MemoryFacts`)."""
    env = metadata.env
    nodes = list(gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    storages = _Storages(metadata.same_storage)
    symbols = Symbols()
    values = _Values(env, storages, symbols)
    memory_facts = MemoryFacts(symbols) if with_memory_facts else None
    b = _C.planner.GraphBuilder()
    if traced_symbolically(gm):
        b.traced_symbolically()
    afv2_calls: dict[int, AFv2Call | AFv1Call] = {}
    destinations: dict[int, list[tuple[Node, Any]]] | None = {} if with_destinations else None
    for i, node in enumerate(nodes):
        name = node.name
        if node.op == "placeholder":
            b.input(name, values.of(node))
        elif node.op == "get_attr":
            b.constant(name, values.of(node))
        elif node.op == "output":
            b.output(name, [index[n] for n in node.all_input_nodes])
            continue
        else:
            _read_call(b, node, index, values, afv2_calls, i, destinations)
        if compiler_facts is not None:
            for about, *facts in compiler_facts(node):
                b.compiler_facts(index[about], *facts)
        if memory_facts is not None:
            found = memory_facts(node, env)
            if found is not None:  # one tensor: the builder recorded exactly it
                b.memory_facts(i, *found)
    return GraphReading(b, nodes, afv2_calls, destinations or {}, memory_facts)


def _read_call(
    b, node: Node, index: dict, values: _Values, afv2_calls: dict, i: int, destinations: dict
) -> None:
    target = node.target
    name = node.name
    operands = [index[n] for n in node.all_input_nodes]
    if target is operator.getitem:
        source = node.args[0]
        if isinstance(source, Node) and type(node.args[1]) is int:
            b.getitem(name, index[source], node.args[1], values.of(node))
        else:
            b.other(name, operands, values.of(node))
    elif target is AFV2:
        call = read_call(node)
        if call.is_out:  # allocates its outputs: nothing is cloned
            b.other(name, operands, values.of(node))
            return
        afv2_calls[i] = call
        direct = [index[n] for n in call.direct_reads()]
        results = values.of(node)
        leaf_index = _leaf_positions(values.env.get(node))
        slots = []
        for j, base in enumerate(call.bases):
            item = call.num_outputs + j
            if base is not None and item in leaf_index:
                slots.append((index[base], leaf_index[item], item, j not in call.cloned))
        bases = [index[base] for base in call.bases if base is not None]
        absolute = [index[base] for base in call.as_strided_bases()]
        b.auto_functionalized(name, direct + bases, results, slots, absolute)
    elif target is AFV1:
        _read_v1_call(b, node, index, values, afv2_calls, i)
    elif isinstance(target, torch._ops.OpOverload):
        _read_op(b, node, index, values, operands, destinations, i)
    elif is_opaque_higher_order(target):
        b.other(name, operands, values.of(node))
    else:
        _reject_tensor_math(node, values.env)
        b.other(name, operands, values.of(node))


def _read_v1_call(b, node: Node, index: dict, values: _Values, afv2_calls: dict, i: int) -> None:
    """auto_functionalized (v1): one write slot per written tensor argument (its new
    value is item `num_outputs + j` of the node's value), as for v2's bases. A written
    list of tensors gets none: its elements stay cloned, read by the node."""
    call = read_v1_call(node)
    operands = [index[n] for n in call.direct_reads() + call.written()]
    if call.aliased_returns:  # an out= or in-place op: its outputs are its clones, left alone
        b.other(node.name, operands, values.of(node))
        return
    leaf_index = _leaf_positions(values.env.get(node))
    slots = []
    for j, (name, arg) in enumerate(call.mutable):
        layouts = [
            _layout(values.env.get(a)) for a in (arg if isinstance(arg, list) else [arg]) if a is not None
        ]
        call.layouts[name] = layouts if isinstance(arg, list) else layouts[0] if layouts else None
        item = call.num_outputs + j
        if isinstance(arg, Node) and item in leaf_index:
            slots.append((index[arg], leaf_index[item], item, name in call.not_cloned))
            call.slot_args.append(name)
    if not slots:  # nothing to decide: left as it is
        b.other(node.name, operands, values.of(node))
        return
    afv2_calls[i] = call
    b.auto_functionalized(node.name, operands, values.of(node), slots)


def _layout(value: Any) -> tuple[list[int], list[int], int] | None:
    """(sizes, strides, storage offset) of a node's tensor value; None unless static."""
    if type(value) is Fresh and value.meta is None:
        t, offset = value.val, 0  # never viewed: fresh memory at offset 0 (as `_Values.of`)
    else:
        t = value.meta if type(value) is Fresh else value
        offset = t.storage_offset() if isinstance(t, torch.Tensor) else 0
    if not isinstance(t, torch.Tensor):
        return None
    layout = (list(t.shape), list(t.stride()), offset)
    if not all(type(v) is int for v in [*layout[0], *layout[1], offset]):
        return None
    return layout


def _read_op(
    b, node: Node, index: dict, values: _Values, operands: list[int], destinations: dict, i: int
) -> None:
    info = op_info(node.target)
    if info.mutates and is_input_write_back(node):
        written = node.args[0]
        into = written_input(node)
        value = node.args[1] if node.target is torch.ops.aten.copy_.default else None
        b.write_back(
            node.name,
            index[into],
            index[written],
            index[value] if isinstance(value, Node) else None,
            operands,
            values.of(node),
        )
        return
    self_node = node.args[0] if node.args else node.kwargs.get(info.first_arg_name)
    if (
        info.is_foreach
        and isinstance(self_node, (list, tuple))
        and all(isinstance(n, Node) for n in self_node)
    ):
        # Every occurrence, so that a list element passed twice is seen twice.
        every_operand, elements = _foreach_operands(node)
        b.foreach(
            node.name,
            [index[n] for n in every_operand],
            values.of(node),
            [index[n] for n in self_node],
            info.facts.collective,
            elements,
            info.facts.keeps_self_geometry,
        )
        return
    self_index = index[self_node] if isinstance(self_node, Node) else None
    if self_index is not None and info.self_is_tensor:
        # all_input_nodes is de-duplicated; the planner must see self twice
        # when it is passed twice (mul(a, a)), so count its occurrences.
        operands = operands + [self_index] * (_occurrences(node, self_node) - 1)
    scatter_args = scatter_src = scatter_view = None
    if info.is_scatter:
        scatter_args = _scatter_args(info.scatter, node)
        src = node.args[1] if len(node.args) > 1 else node.kwargs.get("src")
        scatter_src = index[src] if isinstance(src, Node) else None
        scatter_view = _view_on_recorded_base(info.inverted_view, node, values)
    others = (
        _other_destinations(info, node, self_node)
        if destinations is not None and self_index is not None
        else []
    )
    if others:
        destinations[i] = others
    b.op(
        node.name,
        info.facts,
        self_index,
        operands,
        values.of(node),
        scatter_args,
        scatter_src,
        scatter_view,
        [(index[n], via) for n, via in others],
    )
    if destinations is not None and node.target is _TO_COPY:
        converted = _converts_for_inplace(node, values.env)
        if converted is not None:
            op, op_self = converted
            b.cast_slot(index[op], i)
            destinations.setdefault(index[op], []).append((op_self, _C.planner.Destination.SELF))


_TO_COPY = torch.ops.aten._to_copy.default


def _converts_for_inplace(node: Node, env: dict[Node, Any]) -> tuple[Node, Node] | None:
    """(op, its self) when `node` is `_to_copy(op, dtype=self.dtype)` and nothing else reads op,
    where op's in-place form stores its booleans converted to self's dtype (`a.ge_(b)`, which
    functionalization records as `_to_copy(ge(a, b), dtype=a.dtype)`): the planner may then
    write op in place and drop the cast. Only a conversion of dtype: no device, layout or
    memory format asked for."""
    op = node.args[0] if len(node.args) == 1 else None
    if not isinstance(op, Node) or op.op != "call_function" or len(op.users) != 1:
        return None
    if (
        not isinstance(op.target, torch._ops.OpOverload)
        or not op_info(op.target).facts.inplace_stores_converted
    ):
        return None
    op_self = op.args[0] if op.args else None
    value = env.get(op_self) if isinstance(op_self, Node) else None
    if type(value) is Fresh:
        value = value.val if value.meta is None else value.meta
    if not isinstance(value, torch.Tensor):
        return None
    kwargs = dict(node.kwargs)
    if kwargs.pop("dtype", None) != value.dtype:
        return None
    unchanged = {
        "layout": (None, torch.strided),
        "device": (None, value.device),
        "memory_format": (None, torch.preserve_format),
        "pin_memory": (None, False),
        "non_blocking": (False,),
    }
    if any(k not in unchanged or v not in unchanged[k] for k, v in kwargs.items()):
        return None
    return op, op_self


def _other_destinations(info: Any, node: Node, self_node: Any) -> list[tuple[Node, Any]]:
    """Operands other than `self` that an elementwise op's result could be written into, in
    the order the planner tries them (it takes one only where `self` cannot be written):
    every tensor operand through `foo.out(..., out=operand)`, or, for a commutative `foo(a, b)`
    without an out= overload, `b` through `b.foo_(a)`.

    out= first because it keeps the operands' order: `b.add_(a)` computes `b + a`, equal to
    `a + b` but for which NaN's payload the sum carries when both are NaN (the kernel keeps one
    operand's by position), which a program reading the float bits through an integer view sees
    (seed 101154).
    """
    if not info.facts.pointwise or (not info.commutative and info.out is None):
        return []
    found: list[tuple[Node, Any]] = []
    args = node.args
    if info.out is not None and info.out_arg_name not in node.kwargs:
        seen: set[Node] = set()
        for a in args:
            if isinstance(a, Node) and a not in seen and (a is not self_node or not info.facts.has_inplace):
                seen.add(a)
                found.append((a, _C.planner.Destination.OUT))
    elif info.commutative and len(args) == 2 and not node.kwargs and isinstance(args[1], Node):
        if args[1] is not self_node:
            found.append((args[1], _C.planner.Destination.SWAPPED))
    return found


class _Storages:
    def __init__(self, same_storage: dict[int, int]) -> None:
        self.ids: dict[int, int] = {}
        self.same = same_storage
        self.count = 0

    def id(self, t: torch.Tensor) -> int:
        key = t.untyped_storage()._cdata
        key = self.same.get(key, key)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = self.fresh()
        return found

    def fresh(self) -> int:
        self.count += 1
        return self.count - 1


class _Values:
    """The tensors each node produces, as the builder's tensor records."""

    def __init__(self, env: dict[Node, Any], storages: _Storages, symbols: Symbols) -> None:
        self.env = env
        self.storages = storages
        self.symbols = symbols

    def of(self, node: Node) -> list[tuple]:
        value = self.env.get(node)
        results = []
        if type(value) is Fresh and value.meta is None:
            # Never viewed: fresh memory of the recorded shape, offset 0.
            for t in _tensor_leaves(value.val, []):
                results.append((self.storages.fresh(), *self.symbols.geometry(t, 0), _dtype_code(t, t)))
            return results
        if type(value) is Fresh:
            value = value.meta
        leaves = _tensor_leaves(value, [])
        # The conjugate/negative bits: the propagated stand-ins of views may lack them, and a
        # recorded value may too (a real trace's snapshot); either one having a bit counts.
        recorded = _tensor_leaves(node.meta.get("val"), [])
        bits_of = recorded if len(recorded) == len(leaves) else leaves
        for t, traced in zip(leaves, bits_of, strict=True):
            geometry = self.symbols.geometry(t, t.storage_offset())
            results.append((self.storages.id(t), *geometry, _dtype_code(t, traced)))
        return results


_DTYPE_CODES: dict[torch.dtype, int] = {}


def _dtype_code(t: torch.Tensor, traced: Any) -> int:
    """The planner's dtype (graph_ir.h `TensorValue::dtype`): a code per dtype, with the
    conjugate and negative bits of a `conj()` / `_neg_view` view (`kConjBit`, `kNegBit`),
    which every read of the tensor sees and the planner never writes into."""
    code = _DTYPE_CODES.get(t.dtype)
    if code is None:
        code = _DTYPE_CODES[t.dtype] = len(_DTYPE_CODES)
    conj = t.is_conj() or (isinstance(traced, torch.Tensor) and traced.is_conj())
    neg = t.is_neg() or (isinstance(traced, torch.Tensor) and traced.is_neg())
    return code | (_C.planner.CONJ_BIT if conj else 0) | (_C.planner.NEG_BIT if neg else 0)


def _tensor_leaves(value: Any, out: list) -> list:
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensor_leaves(v, out)
    return out


def _leaf_positions(value: Any) -> dict[int, int]:
    """Position in a tuple value -> index among its tensor leaves (what `_Values.of` lists)."""
    if type(value) is Fresh:
        value = value.val if value.meta is None else value.meta
    positions: dict[int, int] = {}
    if isinstance(value, (list, tuple)):
        count = 0
        for k, v in enumerate(value):
            if isinstance(v, torch.Tensor):
                positions[k] = count
            count += len(_tensor_leaves(v, []))
    return positions


def _reject_tensor_math(node: Node, env: dict[Node, Any]) -> None:
    touched = [env.get(n) for n in node.all_input_nodes] + [env.get(node)]
    touched = [v.val if type(v) is Fresh else v for v in touched]
    if _tensor_leaves(touched, []):
        name = getattr(node.target, "__name__", str(node.target))
        raise ReinplaceInputError(
            f"node {node.name!r}: target {name} is not an ATen operator overload but handles "
            "tensors; trace with make_fx to get an ATen graph"
        )


def _occurrences(node: Node, wanted: Node) -> int:
    count = node.args.count(wanted)
    for value in node.args:
        if isinstance(value, (list, tuple)):
            count += _all_nodes(value, []).count(wanted)
    if node.kwargs:
        count += _all_nodes(node.kwargs, []).count(wanted)
    return count


def _foreach_operands(node: Node) -> tuple[list[Node], list[int]]:
    """A `_foreach_*` node's operands, every occurrence, each with the list position it is
    passed at (element k of the op reads the operands at k), or -1 for a tensor every
    element reads (`_foreach_add.Tensor`'s other)."""
    nodes: list[Node] = []
    elements: list[int] = []
    for arg in (*node.args, *node.kwargs.values()):
        if isinstance(arg, (list, tuple)):
            for k, v in enumerate(arg):
                found = _all_nodes(v, [])
                nodes += found
                elements += [k] * len(found)
        else:
            found = _all_nodes(arg, [])
            nodes += found
            elements += [-1] * len(found)
    return nodes, elements


def _all_nodes(value: Any, out: list) -> list:
    if isinstance(value, Node):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _all_nodes(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _all_nodes(v, out)
    return out


def _bind(target: torch._ops.OpOverload, node: Node) -> dict[str, Any]:
    bound: dict[str, Any] = {}
    for i, arg in enumerate(target._schema.arguments):
        if i < len(node.args):
            bound[arg.name] = node.args[i]
        elif arg.name in node.kwargs:
            bound[arg.name] = node.kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
    return bound


def _scatter_args(kind: Any, node: Node) -> tuple | None:
    """(ints, sizes, strides) of the view a scatter inverts, in the view op's
    schema order; None when one is only known at run time (a SymInt)."""
    b = _bind(node.target, node)
    try:
        if kind == _C.planner.ScatterKind.SELECT:
            ints, sizes, strides = [b["dim"], b["index"]], [], []
        elif kind == _C.planner.ScatterKind.SLICE:
            ints, sizes, strides = [b["dim"], b.get("start"), b.get("end"), b["step"]], [], []
        elif kind == _C.planner.ScatterKind.DIAGONAL:
            ints, sizes, strides = [b["offset"], b["dim1"], b["dim2"]], [], []
        else:
            ints, sizes, strides = [b.get("storage_offset")], list(b["size"]), list(b["stride"])
    except (KeyError, TypeError):
        return None
    ints = [UNSET if v is None else v for v in ints]
    if all(type(v) is int for v in ints + sizes + strides):
        return (ints, sizes, strides)
    return None


def _view_on_recorded_base(view_op: Any, node: Node, values: _Values) -> tuple | None:
    """The geometry of the view a scatter inverts, on the scatter's own base, when
    that base is symbolic (the planner replays views of known bases itself)."""
    base = node.args[0] if node.args else None
    value = values.env.get(base)
    if type(value) is Fresh:
        value = value.val if value.symbolic else None
    if not isinstance(value, torch.Tensor) or is_static(value):
        return None
    try:
        view = view_op(value, *node.args[2:], **node.kwargs)
    except Exception:  # noqa: BLE001 - an unreplayable view only means "not proven"
        return None
    return values.symbols.geometry(view, view.storage_offset())
