"""The Python half of the memory plan (csrc/core/memory_plan.h): the facts the planner's
memory walk reads of each node (device, bytes, whether the op has an `out=` kernel of its
own there), and carrying out its reuses as `y = f.out(args, out=d)`."""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import Node

from fxinplace import _C
from fxinplace._reinplace.metadata import Fresh
from fxinplace._reinplace.op_info import op_info
from fxinplace._reinplace.size_exprs import SizeSources, SizeWriter
from fxinplace._reinplace.symbolic import Symbols, is_static

_DEVICE_CODES: dict[tuple[str, int | None], int] = {}
# (overload, device type) -> whether the dispatcher has a backend kernel for it. Keyed by
# id(): the overloads are torch.ops attributes, alive as long as the process.
_BACKEND_OUT: dict[tuple[int, str], bool] = {}


# Functional copies written as `copy_(d, x)` into a dead buffer d: `_to_copy` is an empty
# tensor and a `copy_` into it (so the values, conversions included, are the same).
_COPIES = (torch.ops.aten.clone.default, torch.ops.aten._to_copy.default)
# `slice_backward(g, sizes, dim, start, end, step)` is zeros with g in one slice: written into
# a dead buffer d as `zero_(d)` and `copy_(slice(d, dim, start, end, step), g)` (its out= form
# is a generated one, which would allocate and copy).
_SLICE_BACKWARD = torch.ops.aten.slice_backward.default
# Factories of a constant tensor (no out= kernel of their own: their out= forms are generated):
# written into a dead buffer d as `fill_(d, value)`, which converts the value to d's dtype as
# the factory converts it to its result's. The value: a constant, or the argument named so.
_aten = torch.ops.aten
_FILLS: dict[Any, Any] = {
    **dict.fromkeys((_aten.zeros.default, _aten.zeros_like.default, _aten.new_zeros.default), 0),
    **dict.fromkeys((_aten.ones.default, _aten.ones_like.default, _aten.new_ones.default), 1),
    **dict.fromkeys((_aten.full.default, _aten.full_like.default, _aten.new_full.default), "fill_value"),
    _aten.scalar_tensor.default: "s",
}


class MemoryFacts:
    """The memory facts of one graph's nodes, read in graph order (inputs first)."""

    def __init__(self, symbols: Symbols) -> None:
        self.symbols = symbols
        self.sources = SizeSources()
        # node -> (sizes, strides) of each result the plan may lay into a buffer of another
        # layout (the values the sizes were judged on, for `apply_memory_plan`).
        self.layouts: dict[Node, tuple[Any, Any]] = {}
        # node -> (out= overload, its out argument's name) of each op that can write into a
        # given buffer through an out= kernel (for `apply_memory_plan`).
        self.outs: dict[Node, tuple[torch._ops.OpOverload, str]] = {}

    def __call__(self, node: Node, env: dict[Node, Any]) -> tuple | None:
        """(device code, result bytes, can write into a given buffer, byte count, may be laid
        into a buffer of another layout) of a node whose value is one tensor: a graph input, a
        tensor an ATen op allocates, or a getitem; None for others. An op can write into a
        buffer through an out= kernel of its own on the device (not a generated one that
        computes and copies), or, for a same-device clone or _to_copy, as a `copy_` into it,
        and for a constant factory (zeros, full_like, ...) as a `fill_` of it. Bytes of
        symbolic sizes are size hints (the peak model's only input); 0 when a size has no hint
        (unbacked), which keeps the node out of the plan. The byte count is the
        planner's extent of numel * element size (a Symbol per distinct expression)."""
        target = node.target
        if node.op == "placeholder":
            self.sources.add_input(node, node.meta.get("val", env.get(node)))
        value = _tensor(env.get(node))
        if value is None:
            return None
        device = _device_of(node, value)
        if node.op == "placeholder" or target is operator.getitem:
            writes_into = False
        elif target in _COPIES:
            writes_into = _copies_on_its_device(node, value, env)
        elif target is _SLICE_BACKWARD:  # zero_(d) and a copy_ into its slice
            writes_into = value.layout == torch.strided
        elif target in _FILLS:  # fill_(d, value)
            writes_into = value.layout == torch.strided and not node.kwargs.get("pin_memory", False)
        elif isinstance(target, torch._ops.OpOverload):
            info = op_info(target)
            if info.mutates or not info.result_is_fresh:
                return None
            out = _out_kernel(target, info, device.type)
            writes_into = out is not None
            if out is not None:
                self.outs[node] = out
        else:
            return None
        code = _DEVICE_CODES.setdefault((device.type, device.index), len(_DEVICE_CODES))
        hint = _bytes_hint(value)
        if hint == 0:
            return code, 0, writes_into, 0, False
        recorded = node.meta.get("val")
        layout = recorded if isinstance(recorded, torch.Tensor) else value
        byte_size = self._byte_size(layout)
        return code, hint, writes_into, byte_size, writes_into and self._restridable(node, layout)

    def _byte_size(self, t: torch.Tensor) -> Any:
        """numel * element size: an int, or the Symbol of ("numel", its expression) (the
        planner compares byte counts of one dtype only, so equal numels are equal bytes)."""
        numel = t.numel()
        if type(numel) is not int:
            constant = numel.node.maybe_as_int()
            if constant is None:
                return self.symbols.symbol(("numel", numel.node.expr))
            numel = constant
        return numel * t.element_size()

    def _restridable(self, node: Node, t: torch.Tensor) -> bool:
        """Whether the graph can compute t's sizes and strides (static ones always), for an
        `as_strided` view of a dead buffer of as many bytes (the planner judges whether t is
        dense from offset 0, hence covers exactly its byte count)."""
        sizes, strides = t.shape, t.stride()
        if not is_static(t) and not (self.sources.expressible(sizes) and self.sources.expressible(strides)):
            return False
        self.layouts[node] = (tuple(sizes), tuple(strides))
        return True


def _tensor(value: Any) -> torch.Tensor | None:
    if type(value) is Fresh:
        value = value.val if value.meta is None else value.meta
    return value if isinstance(value, torch.Tensor) else None


def _copies_on_its_device(node: Node, value: torch.Tensor, env: dict[Node, Any]) -> bool:
    """A clone or _to_copy whose result is a strided tensor on its source's device, not
    pinned: `copy_` into a dead buffer of the result's layout computes it."""
    source = node.args[0] if node.args and isinstance(node.args[0], Node) else None
    src = _tensor(env.get(source)) if source is not None else None
    if src is None:
        return False
    return (
        _device_of(source, src) == _device_of(node, value)
        and value.layout == torch.strided
        and not node.kwargs.get("pin_memory", False)
    )


def _device_of(node: Node, value: torch.Tensor) -> torch.device:
    """The device `node`'s tensor lives on: its recorded value's (the values found may be
    meta stand-ins, see `metadata.propagate`), else its value's."""
    recorded = node.meta.get("val")
    return recorded.device if isinstance(recorded, torch.Tensor) else value.device


def _bytes_hint(t: torch.Tensor) -> int:
    n = t.element_size()
    for s in t.shape:
        if type(s) is not int:
            s = s.node.hint
            if s is None:
                return 0
        n *= int(s)
    return n


def _out_kernel(target: torch._ops.OpOverload, info: Any, device_type: str) -> tuple | None:
    """(out= overload, its out argument's name) through which `target` computes its result into
    a given buffer on the device with a kernel of the backend's own; None where only a generated
    out= form exists (it computes and copies, saving nothing). `div.Scalar`'s own out= form is
    generated, but where div.Scalar is ATen's composite (no backend kernel of its own) it runs as
    div.Tensor of the wrapped scalar, whose out= kernel is real: `div.out(x, 3.0, out=d)`
    computes the same values (T5's backward divides gradients by a count that way)."""
    if info.out is not None and _backend_kernel(info.out, device_type):
        return info.out, info.out_arg_name
    sibling = info.tensor_sibling_out
    if (
        sibling is not None
        and not _backend_kernel(target, device_type)
        and _backend_kernel(sibling, device_type)
    ):
        return sibling, info.tensor_sibling_out_arg_name
    return None


def _backend_kernel(op: torch._ops.OpOverload, device_type: str) -> bool:
    key = (id(op), device_type)
    found = _BACKEND_OUT.get(key)
    if found is None:
        schema = op._schema
        found = _BACKEND_OUT[key] = _C.planner.has_backend_kernel(
            schema.name, schema.overload_name, device_type
        )
    return found


def apply_memory_plan(nodes: list[Node], plan: _C.planner.Plan, facts: MemoryFacts) -> None:
    """`y = f(args)` -> `y = f.out(args, out=d)` (`clone(x)`, `_to_copy(x)`: `copy_(d, x)`;
    `slice_backward(g, ...)`: `zero_(d)` and `copy_(slice(d, ...), g)`; `full(sizes, v)`,
    `zeros_like(x)`, ...: `fill_(d, v)`) for each reuse the plan
    made: `d` is the node whose tensor is the dead buffer (the same sizes, strides, dtype and
    device as y), or, where the plan says the buffer is laid out otherwise,
    `as_strided(d, y's sizes, y's strides, 0)` (the same byte count). No facts (the graph
    was not read for a plan): nothing to apply."""
    if facts is None:
        return
    writer = SizeWriter(nodes[0].graph, facts.sources) if nodes else None
    # A slice_backward's value is its zero_ node's now (the node itself copies into a slice).
    holder: dict[Node, Node] = {}
    for i, donor, restrided in plan.reuses():
        node = nodes[i]
        into = holder.get(nodes[donor], nodes[donor])
        if restrided:
            into = _laid_out(node, into, facts.layouts[node], writer)
        if node.target in _COPIES:  # copy_(d, x): d's layout is the result's
            node.target = torch.ops.aten.copy_.default
            node.args, node.kwargs = (into, node.args[0]), {}
        elif node.target is _SLICE_BACKWARD:
            holder[node] = _zeroed_with_slice(node, into)
        elif node.target in _FILLS:
            value = _fill_value(node)
            node.target = torch.ops.aten.fill_.Scalar
            node.args, node.kwargs = (into, value), {}
        else:
            out, out_arg_name = facts.outs[node]
            if out is not op_info(node.target).out:  # the .Tensor sibling's out= of a .Scalar op
                node.args, node.kwargs = _keyword_after_self_and_other(node)
            node.target = out
            node.kwargs = {**node.kwargs, out_arg_name: into}


def _fill_value(node: Node) -> Any:
    """The value a constant factory (`_FILLS`) fills its result with, however it was passed."""
    value = _FILLS[node.target]
    return _arguments_by_name(node)[value] if isinstance(value, str) else value


def _keyword_after_self_and_other(node: Node) -> tuple[tuple, dict]:
    """`add.Scalar(x, 2.0, 3)` as `(x, 2.0), {alpha: 3}`: the `.Tensor` overloads' out= forms
    take every argument after `self` and `other` by keyword (`add.out(x, y, *, alpha, out)`)."""
    bound = _arguments_by_name(node)
    first_two = [a.name for a in node.target._schema.arguments[:2]]
    return tuple(bound[k] for k in first_two), {k: v for k, v in bound.items() if k not in first_two}


def _arguments_by_name(node: Node) -> dict[str, Any]:
    """An ATen node's arguments by their schema names, however they were passed (those left
    to their defaults are absent)."""
    names = [a.name for a in node.target._schema.arguments]
    return {**dict(zip(names, node.args, strict=False)), **node.kwargs}


def _zeroed_with_slice(node: Node, into: Node) -> Node:
    """`y = slice_backward(g, sizes, dim, start, end, step)` -> `z = zero_(d)`,
    `v = slice(z, dim, start, end, step)`, `y = copy_(v, g)`, and y's users read z."""
    grad, _sizes, dim, start, end, step = _bound_slice_backward(node)
    graph = node.graph
    with graph.inserting_before(node):
        zeroed = graph.call_function(torch.ops.aten.zero_.default, (into,))
        view = graph.call_function(torch.ops.aten.slice.Tensor, (zeroed, dim, start, end, step))
    if "val" in node.meta:
        zeroed.meta["val"] = node.meta["val"]
    node.replace_all_uses_with(zeroed)
    node.target = torch.ops.aten.copy_.default
    node.args, node.kwargs = (view, grad), {}
    return zeroed


def _bound_slice_backward(node: Node) -> list:
    """(grad_output, input_sizes, dim, start, end, step), however they were passed."""
    bound = _arguments_by_name(node)
    return [bound[a.name] for a in _SLICE_BACKWARD._schema.arguments]


def _laid_out(node: Node, buffer: Node, layout: tuple[Any, Any], writer: SizeWriter) -> Node:
    """`as_strided(buffer, sizes, strides, 0)` just before `node`, its sizes computed in the
    graph where they are symbolic."""
    sizes, strides = layout
    with node.graph.inserting_before(node):
        args = (buffer, writer.values(sizes), writer.values(strides), 0)
        view = node.graph.call_function(torch.ops.aten.as_strided.default, args)
    # The view's value is the result's own (its sizes, strides, dtype and device): replaying
    # as_strided on the buffer's fake value costs milliseconds a node, and nothing after the
    # pass reads which storage a value names.
    if "val" in node.meta:
        view.meta["val"] = node.meta["val"]
    return view
