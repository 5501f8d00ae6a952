"""Validate an fx.Graph and flatten it into the node records `_C.plan` reads.

Record layout (one tuple per node, graph order):
  (kind, name, view_kind, self_is_tensor, has_inplace, pointwise, is_resize,
   scatter, self, scatter_src, view_of, operands, results, layout_use, layout_parent)
scatter = None or (kind, ints, sizes, strides, replayable, view_geometry);
node references are indices; results = [(storage, *geometry, dtype_code), ...];
a geometry is (sizes, strides, offset, proven_dense_order), each extent an int or a
`_C.Symbol` (a symbolic size the planner knows only by identity).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import GraphModule, Node

from fxinplace import _C
from fxinplace._auto_functionalized import AFV2
from fxinplace._auto_functionalized import check_node as check_auto_functionalized
from fxinplace._errors import ReinplaceInputError
from fxinplace._higher_order import check_node as check_higher_order
from fxinplace._higher_order import is_opaque_higher_order
from fxinplace._metadata import Fresh, Metadata, check_tensor_kind
from fxinplace._op_info import LAYOUT_LOGICAL, SCATTER_VIEWS, VIEW_MULTI, VIEW_SINGLE, op_info

KIND_INPUT, KIND_CONSTANT, KIND_OP, KIND_GETITEM, KIND_OTHER, KIND_OUTPUT = range(6)
UNSET = -(2**63)


def validate(gm: Any, sample_args: tuple) -> None:
    """Raise ReinplaceInputError naming the first node the pass cannot handle."""
    if not isinstance(gm, GraphModule):
        raise TypeError(f"reinplace expects a torch.fx.GraphModule, got {type(gm).__name__}")
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(sample_args):
        raise TypeError(
            f"the graph has {len(placeholders)} placeholders "
            f"({', '.join(n.name for n in placeholders)}) but {len(sample_args)} sample args were given"
        )
    for i, (node, arg) in enumerate(zip(placeholders, sample_args, strict=True)):
        _check_sample_arg(i, node, arg)
    for node in gm.graph.nodes:
        if node.op in ("call_module", "call_method"):
            raise ReinplaceInputError(
                f"node {node.name!r}: {node.op} nodes are not supported; trace to ATen ops "
                "first (make_fx(functionalize(f)))"
            )
        if node.op != "call_function":
            continue
        target = node.target
        if isinstance(target, torch._ops.HigherOrderOperator):
            if target is AFV2:
                # An opaque reader of its kwargs' tensors returning fresh ones;
                # _auto_functionalized drops its clones after the native pass.
                check_auto_functionalized(node)
                continue
            check_higher_order(node)  # an opaque reader (see _higher_order)
            continue
        if isinstance(target, torch._ops.OpOverloadPacket):
            raise ReinplaceInputError(
                f"node {node.name!r}: target {target} is an overload packet; "
                "the pass needs a concrete overload such as torch.ops.aten.add.Tensor"
            )
        if isinstance(target, torch._ops.OpOverload):
            if op_info(target).mutates and not _is_input_write_back(node):
                raise ReinplaceInputError(
                    f"node {node.name!r}: {target} mutates its arguments; the pass expects a "
                    "functional graph (the only mutations allowed are functionalization's write-backs "
                    "into graph inputs: copy_, resize_ and as_strided_)"
                )
            continue
        if target is operator.getitem:
            continue


# Functionalization writes a mutated input back with copy_, after giving it its
# new size or layout with resize_ / as_strided_ when the program changed those.
_METADATA_WRITE_BACKS = (torch.ops.aten.resize_.default, torch.ops.aten.as_strided_.default)


def _check_sample_arg(i: int, node: Node, arg: Any) -> None:
    """A sample arg must be what the graph was traced with: a tensor of the
    recorded dtype, rank and (where the trace fixed them) sizes. Planning on
    another would produce a graph that fails or is wrong on the real inputs."""
    if isinstance(arg, torch.Tensor):
        check_tensor_kind(arg, f"sample arg {i}")
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        if isinstance(arg, torch.Tensor) and isinstance(val, (int, float, bool, torch.SymInt)):
            raise ReinplaceInputError(
                f"sample arg {i} (placeholder {node.name!r}) is a tensor, but the graph was traced "
                f"with the {type(val).__name__} {val}"
            )
        return
    where = f"sample arg {i} (placeholder {node.name!r})"
    if not isinstance(arg, torch.Tensor):
        raise ReinplaceInputError(
            f"{where} is {type(arg).__name__} {arg!r}, but the graph was traced with a tensor of "
            f"shape {tuple(val.shape)} and dtype {val.dtype}"
        )
    problems = []
    if arg.dtype != val.dtype:
        problems.append(f"dtype {arg.dtype} instead of {val.dtype}")
    if arg.device.type != val.device.type:
        problems.append(f"device {arg.device} instead of {val.device}")
    if arg.dim() != val.dim():
        problems.append(f"{arg.dim()} dims instead of {val.dim()}")
    else:
        fixed = [
            (d, want, got)
            for d, (want, got) in enumerate(zip(val.shape, arg.shape, strict=True))
            if type(want) is int and type(got) is int and want != got
        ]
        problems.extend(f"size {got} instead of {want} at dim {d}" for d, want, got in fixed)
    if problems:
        raise ReinplaceInputError(
            f"{where} does not match the value the graph was traced with: " + "; ".join(problems)
        )


def _is_input_write_back(node: Node) -> bool:
    dst = node.args[0] if node.args else None
    if not isinstance(dst, Node):
        return False
    if node.target in _METADATA_WRITE_BACKS:
        return dst.op == "placeholder"
    if node.target is not torch.ops.aten.copy_.default:
        return False
    return dst.op == "placeholder" or (dst.target in _METADATA_WRITE_BACKS and _is_input_write_back(dst))


def _reject_tensor_math(node: Node, env: dict[Node, Any]) -> None:
    touched = [env.get(n) for n in node.all_input_nodes] + [env.get(node)]
    touched = [v.val if type(v) is Fresh else v for v in touched]
    if _tensor_leaves(touched, []):
        name = getattr(node.target, "__name__", str(node.target))
        raise ReinplaceInputError(
            f"node {node.name!r}: target {name} is not an ATen operator overload but handles "
            "tensors; trace with make_fx to get an ATen graph"
        )


class _Symbols:
    """Symbolic sizes, strides and offsets as `_C.Symbol`s: one per distinct
    expression, so equal expressions compare equal in the planner and nothing
    else is assumed of them. A SymInt that is a known constant stays an int."""

    def __init__(self) -> None:
        self.ids: dict[Any, Any] = {}

    def extents(self, values: Any) -> list:
        return [v if type(v) is int else self.extent(v) for v in values]

    def extent(self, v: Any) -> Any:
        if type(v) is int:
            return v
        constant = v.node.maybe_as_int()
        if constant is not None:
            return constant
        key = v.node.expr
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = _C.Symbol(len(self.ids))
        return found

    def geometry(self, t: torch.Tensor, offset: Any) -> tuple:
        """(sizes, strides, offset, proven_dense_order) of `t`, laid at `offset`."""
        if type(offset) is int and _static(t):
            return (list(t.shape), list(t.stride()), offset, None)
        return (
            self.extents(t.shape),
            self.extents(t.stride()),
            self.extent(offset),
            _proven_dense_order(t.shape, t.stride()),
        )


def _proven_dense_order(sizes: Any, strides: Any) -> list[int] | None:
    """If a symbolic tensor is non-overlapping and dense for every value of its
    symbols, its dims from the innermost out (size-1 dims left out); else None.
    Decided without adding guards: the dims are ordered by repeatedly taking one
    whose stride is statically the product of the sizes already taken, or
    max(1, that product) as empty_strided writes it (the two differ only when
    the product is 0, and then the tensor has no elements)."""
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    def stride_is(stride: Any, expected: Any) -> bool:
        if statically_known_true(stride == expected):
            return True
        return isinstance(expected, torch.SymInt) and statically_known_true(
            stride == torch.sym_max(1, expected)
        )

    left = [d for d in range(len(sizes)) if not statically_known_true(sizes[d] == 1)]
    order: list[int] = []
    expected: Any = 1
    while left:
        step = next((d for d in left if stride_is(strides[d], expected)), None)
        if step is None:
            return None
        left.remove(step)
        order.append(step)
        expected = expected * sizes[step]
    return order


def _static(t: torch.Tensor) -> bool:
    return all(type(s) is int for s in t.shape) and all(type(s) is int for s in t.stride())


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


_DTYPE_CODES: dict[torch.dtype, int] = {}


def _dtype_code(dtype: torch.dtype) -> int:
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        code = _DTYPE_CODES[dtype] = len(_DTYPE_CODES)
    return code


def _tensor_leaves(value: Any, out: list) -> list:
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensor_leaves(v, out)
    return out


def _occurrences(node: Node, wanted: Node) -> int:
    count = node.args.count(wanted)
    for value in node.args:
        if isinstance(value, (list, tuple)):
            count += _all_nodes(value, []).count(wanted)
    if node.kwargs:
        count += _all_nodes(node.kwargs, []).count(wanted)
    return count


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


def _scatter_spec(
    kind: int, target: torch._ops.OpOverload, node: Node, env: dict, symbols: _Symbols
) -> tuple:
    view_geometry = _view_on_recorded_base(target, node, env, symbols)
    b = _bind(target, node)
    try:
        if kind == 1:
            ints, sizes, strides = [b["dim"], b["index"]], [], []
        elif kind == 2:
            ints = [b["dim"], b.get("start"), b.get("end"), b["step"]]
            sizes, strides = [], []
        elif kind == 3:
            ints, sizes, strides = [b["offset"], b["dim1"], b["dim2"]], [], []
        else:
            ints, sizes, strides = [b.get("storage_offset")], list(b["size"]), list(b["stride"])
        ints = [UNSET if v is None else v for v in ints]
        if all(type(v) is int for v in ints + sizes + strides):
            return (kind, ints, sizes, strides, True, view_geometry)
    except (KeyError, TypeError):
        pass
    return (kind, [], [], [], False, view_geometry)


def _view_on_recorded_base(target: Any, node: Node, env: dict, symbols: _Symbols) -> tuple | None:
    """The geometry of the view a scatter inverts, on the scatter's own base, when
    that base is symbolic (the planner replays views of known bases itself)."""
    base = node.args[0] if node.args else None
    value = env.get(base)
    if type(value) is Fresh:
        value = value.val if value.symbolic else None
    if not isinstance(value, torch.Tensor) or _static(value):
        return None
    try:
        view = SCATTER_VIEWS[target](value, *node.args[2:], **node.kwargs)
    except Exception:  # noqa: BLE001 - an unreplayable view only means "not proven"
        return None
    return symbols.geometry(view, view.storage_offset())


def build_records(gm: GraphModule, metadata: Metadata) -> tuple[list, list[Node], int]:
    env = metadata.env
    nodes = list(gm.graph.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    storages = _Storages(metadata.same_storage)
    symbols = _Symbols()
    records = []
    for node in nodes:
        results = []
        value = env.get(node)
        if type(value) is Fresh and value.meta is None:
            # Never viewed: fresh memory of the recorded shape, offset 0.
            for t in _tensor_leaves(value.val, []):
                results.append((storages.fresh(), *symbols.geometry(t, 0), _dtype_code(t.dtype)))
        else:
            if type(value) is Fresh:
                value = value.meta
            for t in _tensor_leaves(value, []):
                geometry = symbols.geometry(t, t.storage_offset())
                results.append((storages.id(t), *geometry, _dtype_code(t.dtype)))
        kind, view, layout_use = KIND_OTHER, 0, 0
        self_is_tensor = has_inplace = pointwise = is_resize = False
        scatter, self_idx, src_idx, view_of, layout_parent = None, None, None, None, None
        target = node.target
        if node.op == "placeholder":
            kind = KIND_INPUT
        elif node.op == "get_attr":
            kind = KIND_CONSTANT
        elif node.op == "output":
            kind, results = KIND_OUTPUT, []
        elif target is AFV2 or is_opaque_higher_order(target):
            pass  # KIND_OTHER: reads every operand, its results are its own storages
        elif not isinstance(target, torch._ops.OpOverload) and target is not operator.getitem:
            _reject_tensor_math(node, env)
        elif target is operator.getitem:
            kind = KIND_GETITEM
            base = node.args[0]
            if isinstance(base, Node) and isinstance(base.target, torch._ops.OpOverload):
                if op_info(base.target).view == VIEW_MULTI and isinstance(base.args[0], Node):
                    view_of = layout_parent = index[base.args[0]]
        elif isinstance(target, torch._ops.OpOverload):
            kind = KIND_OP
            info = op_info(target)
            view, self_is_tensor, pointwise, is_resize = (
                info.view,
                # A write-back into an input already writes in place: no candidate.
                info.self_is_tensor and not info.mutates,
                info.pointwise,
                info.is_resize,
            )
            has_inplace = info.inplace is not None
            layout_use = info.layout_use
            self_node = node.args[0] if node.args else node.kwargs.get(info.first_arg_name)
            if isinstance(self_node, Node):
                self_idx = index[self_node]
                if view == VIEW_SINGLE:
                    view_of = self_idx
                if view == VIEW_SINGLE or layout_use != LAYOUT_LOGICAL:
                    layout_parent = self_idx
            if info.scatter_kind:
                scatter = _scatter_spec(info.scatter_kind, target, node, env, symbols)
                src = node.args[1] if len(node.args) > 1 else node.kwargs.get("src")
                if isinstance(src, Node):
                    src_idx = index[src]
        operands = [index[n] for n in node.all_input_nodes]
        if kind == KIND_OP and self_is_tensor and self_idx is not None:
            # all_input_nodes is de-duplicated; the planner must see self twice
            # when it is passed twice (mul(a, a)), so count its occurrences.
            repeats = _occurrences(node, nodes[self_idx]) - 1
            operands.extend([self_idx] * repeats)
        records.append(
            (
                kind,
                node.name,
                view,
                self_is_tensor,
                has_inplace,
                pointwise,
                is_resize,
                scatter,
                self_idx,
                src_idx,
                view_of,
                operands,
                results,
                layout_use,
                layout_parent,
            )
        )
    return records, nodes, storages.count
