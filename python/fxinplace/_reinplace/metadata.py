"""What each node of a graph computes, as meta (or fake) tensors, from the sample args.

The planner needs, per node, the storage, sizes, strides, offset and dtype of its
tensors. Running every op on meta tensors is exact but slow in this torch (many
meta kernels are Python refs), so the fast path trusts `node.meta['val']` for
ops that allocate, and runs only views (cheap C++ kernels) to get storage
sharing and offsets right. When the recorded values do not describe these
sample args, or an op has no meta kernel (data-dependent shapes), the whole
graph is replayed under a fresh FakeTensorMode instead, as the stock pass does.

A graph traced with symbolic shapes (its placeholders' recorded values carry
SymInts) is described by those symbolic values, not by the sample args' sizes:
the rewritten graph will run at other sizes, so every decision must hold for
all of them. Views are replayed on the recorded fake values; the planner then
sees symbolic extents and answers cautiously wherever their magnitude matters.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.fx import GraphModule, Node

from fxinplace._reinplace.errors import ReinplaceInputError
from fxinplace._reinplace.op_info import op_info


class NeedsFake(Exception):
    pass


class Fresh:
    """A node's freshly allocated result, known from its recorded `meta['val']`.

    Meta tensors are made for it only when a view or getitem needs them as input
    (`materialize`); otherwise the records read sizes and strides off `val`. A
    symbolic `val` (a fake tensor of the trace) stands for itself: views are
    replayed on it directly.
    """

    __slots__ = ("val", "meta", "symbolic")

    def __init__(self, val: Any, symbolic: bool = False) -> None:
        self.val = val
        self.meta: Any = None
        self.symbolic = symbolic

    def materialize(self) -> Any:
        if self.meta is None:
            self.meta = self.val if self.symbolic else _from_val(self.val)
        return self.meta


@dataclass
class Metadata:
    """What `propagate` found: a value per node, and how it was computed."""

    env: dict[Node, Any]
    # "meta": recorded values + views on meta tensors; "fake": FakeTensor replay
    # at the sample args' sizes; "symbolic": the trace's own symbolic values.
    path: str
    # Storage keys (untyped_storage()._cdata) to be read as another key: graph
    # inputs that the sample args say share memory although their recorded
    # values do not.
    same_storage: dict[int, int] = field(default_factory=dict)


def _map(value: Any, env: dict[Node, Any]) -> Any:
    if isinstance(value, Node):
        found = env[value]
        return found.materialize() if type(found) is Fresh else found
    if isinstance(value, (list, tuple)):
        mapped = [_map(v, env) for v in value]
        return mapped if isinstance(value, list) else tuple(mapped)
    if isinstance(value, dict):
        return {k: _map(v, env) for k, v in value.items()}
    return value


def _static(t: torch.Tensor) -> bool:
    return all(type(s) is int for s in t.shape) and all(type(s) is int for s in t.stride())


def check_tensor_kind(t: torch.Tensor, where: str) -> None:
    if t.is_sparse or t.layout != torch.strided:
        raise ReinplaceInputError(f"{where}: sparse or non-strided tensors are not supported")
    if t.is_quantized:
        raise ReinplaceInputError(f"{where}: quantized tensors are not supported")


def attr_of(gm: GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


class _MetaInputs:
    """Meta copies of real tensors that keep which of them share a storage, whatever their
    dtypes: `x` and `x.view(torch.int32)` passed as two inputs are one storage here too
    (random pipelines seed 2316: taken for two, an input was written before the other,
    which views the same bytes, was read). A copy of another dtype gets a meta base of its
    own, recorded in `same` as the first one's storage (inside AOTAutograd's compile, a
    dtype view of a meta tensor made here trips torch's argument parser)."""

    def __init__(self) -> None:
        self._bases: dict[tuple[int, torch.dtype], torch.Tensor] = {}
        self._first: dict[int, int] = {}
        self.same: dict[int, int] = {}

    def convert(self, t: torch.Tensor) -> torch.Tensor:
        key = t.untyped_storage()._cdata
        nbytes = t.untyped_storage().nbytes()
        base = self._bases.get((key, t.dtype))
        if base is None:
            base = torch.empty(nbytes // max(t.element_size(), 1), dtype=t.dtype, device="meta")
            self._bases[(key, t.dtype)] = base
            mine = base.untyped_storage()._cdata
            first = self._first.setdefault(key, mine)
            if first != mine:
                self.same[mine] = first
        return base.as_strided(t.shape, t.stride(), t.storage_offset())


def vals_describe(gm: GraphModule, sample_args: tuple) -> bool:
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, arg in zip(placeholders, sample_args, strict=True):
        val = node.meta.get("val")
        if isinstance(arg, torch.Tensor):
            if not isinstance(val, torch.Tensor) or not _static(val):
                return False
            if val.shape != arg.shape or val.dtype != arg.dtype or val.stride() != arg.stride():
                return False
        elif isinstance(val, torch.Tensor):
            return False
    return True


def _from_val(val: Any) -> Any:
    if isinstance(val, torch.Tensor):
        if not _static(val):
            raise NeedsFake
        return torch.empty_strided(val.shape, val.stride(), dtype=val.dtype, device="meta")
    if isinstance(val, (list, tuple)):
        return type(val)(_from_val(v) for v in val)
    if isinstance(val, torch.SymInt):
        raise NeedsFake
    return val


def static_value(val: Any) -> bool:
    if isinstance(val, torch.Tensor):
        return _static(val)
    if isinstance(val, (list, tuple)):
        return all(static_value(v) for v in val)
    return not isinstance(val, torch.SymInt)


def _run(node: Node, env: dict[Node, Any], runners: Mapping[Node, Callable[..., Any]]) -> Any:
    args = _map(node.args, env)
    kwargs = _map(node.kwargs, env)
    return runners.get(node, node.target)(*args, **kwargs)


def _propagate(
    gm: GraphModule,
    sample_args: tuple,
    runners: Mapping[Node, Callable[..., Any]],
    *,
    use_vals: bool,
    inputs: _MetaInputs,
) -> dict[Node, Any]:
    env: dict[Node, Any] = {}
    args_iter = iter(sample_args)
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            arg = next(args_iter)
            env[node] = inputs.convert(arg) if isinstance(arg, torch.Tensor) else arg
        elif node.op == "get_attr":
            value = attr_of(gm, node.target)
            env[node] = inputs.convert(value) if isinstance(value, torch.Tensor) else value
        elif node.op == "call_function":
            target = node.target
            if target is operator.getitem or not isinstance(target, torch._ops.OpOverload):
                env[node] = _run(node, env, runners)
                continue
            info = op_info(target)
            if info.passes_its_input_through:
                # A write-back into an input (validated), or wait_tensor: its
                # result is its first argument.
                env[node] = _map(node.args[0], env)
            elif (
                use_vals
                and info.result_is_fresh
                and "val" in node.meta
                and _offset_as_recorded(node, info, env)
            ):
                val = node.meta["val"]
                if not static_value(val):
                    raise NeedsFake
                env[node] = Fresh(val)
            elif use_vals and info.single_view and (view := _recorded_view(node, env)) is not None:
                env[node] = view
            else:
                try:
                    env[node] = _run(node, env, runners)
                except Exception as e:
                    raise NeedsFake from e
    return env


def _offset_as_recorded(node: Node, info: Any, env: dict[Node, Any]) -> bool:
    """A real trace records each result as fresh memory at offset 0 (make_fx snapshots only
    its sizes and strides). Right but for ops whose result keeps `self`'s storage offset
    (random pipelines seed 899: a slice_scatter of `x[1:]` starts at offset 1); those run
    on meta tensors where self does not start at 0."""
    if not info.keeps_self_geometry or not node.args:
        return True
    self_value = env.get(node.args[0]) if isinstance(node.args[0], Node) else None
    if type(self_value) is Fresh or not isinstance(self_value, torch.Tensor):
        return True  # itself recorded at offset 0, or not a tensor here
    return self_value.storage_offset() == 0


def _recorded_view(node: Node, env: dict[Node, Any]) -> torch.Tensor | None:
    """A single view's value from its recorded `meta['val']`, without replaying the view op
    (a meta kernel, or a Python reference, for each of thousands of views): its geometry on
    its base's memory. Only where the recorded base is laid out exactly as the base here is,
    in the same storage as the recorded view, with the same dtype; else None (replayed)."""
    base_node = node.args[0] if node.args else None
    if not isinstance(base_node, Node):
        return None
    val, base_val = node.meta.get("val"), base_node.meta.get("val")
    base = env.get(base_node)
    if type(base) is Fresh:
        base = base.materialize()
    if not (
        isinstance(val, torch.Tensor)
        and isinstance(base_val, torch.Tensor)
        and isinstance(base, torch.Tensor)
    ):
        return None
    if val.dtype != base.dtype or not _static(val) or not _static(base_val):
        return None
    if (base_val.shape, base_val.stride(), base_val.storage_offset()) != (
        base.shape,
        base.stride(),
        base.storage_offset(),
    ):
        return None
    try:
        if val.untyped_storage()._cdata != base_val.untyped_storage()._cdata:
            return None
        return base.as_strided(val.shape, val.stride(), val.storage_offset())
    except (RuntimeError, NotImplementedError):  # storage-less values, or out of the base's bounds
        return None


def _fake(mode: Any, value: Any) -> Any:
    # Static shapes: the ShapeEnv is only there for data-dependent outputs; the
    # inputs' sizes and strides are the sample args' own, as in the stock pass.
    return mode.from_tensor(value, static_shapes=True) if isinstance(value, torch.Tensor) else value


def _propagate_fake(
    gm: GraphModule, sample_args: tuple, runners: Mapping[Node, Callable[..., Any]]
) -> dict[Node, Any]:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    env: dict[Node, Any] = {}
    # A ShapeEnv lets data-dependent ops (nonzero, masked_select) produce
    # symbolic sizes instead of failing.
    with FakeTensorMode(allow_non_fake_inputs=True, shape_env=ShapeEnv()) as mode:
        args_iter = iter(sample_args)
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                arg = next(args_iter)
                env[node] = _fake(mode, arg)
            elif node.op == "get_attr":
                value = attr_of(gm, node.target)
                env[node] = _fake(mode, value)
            elif node.op == "call_function":
                target = node.target
                info = op_info(target) if isinstance(target, torch._ops.OpOverload) else None
                if info is not None and info.passes_its_input_through:
                    # A write-back into an input (validated), or wait_tensor: its
                    # result is its first argument. Not run: resize_ cannot resize
                    # a fake input's storage, wait_tensor's fake result is fresh.
                    env[node] = _map(node.args[0], env)
                    continue
                try:
                    env[node] = _run(node, env, runners)
                except Exception as e:
                    raise ReinplaceInputError(
                        f"node {node.name!r} ({node.format_node()}): cannot compute its "
                        f"metadata from the sample args: {type(e).__name__}: {e}"
                    ) from e
    return env


def _is_symbolic(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return not _static(value)
    if isinstance(value, (list, tuple)):
        return any(_is_symbolic(v) for v in value)
    return isinstance(value, torch.SymInt)


def traced_symbolically(gm: GraphModule) -> bool:
    """Whether `gm`'s inputs were recorded with symbolic sizes (a dynamic-shape trace)."""
    return any(_is_symbolic(n.meta.get("val")) for n in gm.graph.nodes if n.op == "placeholder")


def _symbolic_trace_mode(gm: GraphModule) -> Any:
    """The fake mode of a symbolically traced graph whose every node records its
    value, or None when the graph is static or not fully recorded."""
    from torch._guards import detect_fake_mode

    vals = []
    for node in gm.graph.nodes:
        # A getitem is replayed on its source's value (which records it): the one of a
        # custom op's `None` result has no value of its own (random pipelines seed 113263:
        # `auto_functionalized_v2(write_both_, ...)[0]`; the graph was read at the sample
        # args' sizes, and a dead buffer of 7 floats reused for one of s0).
        if node.op == "call_function" and node.target is operator.getitem:
            continue
        if node.op in ("placeholder", "call_function"):
            if "val" not in node.meta:
                return None
            vals.append(node.meta["val"])
    if not traced_symbolically(gm):
        return None
    try:
        return detect_fake_mode(vals)
    except Exception:  # values from several fake modes: not one trace
        return None


def _shared_placeholder_storages(gm: GraphModule, sample_args: tuple) -> dict[int, int]:
    """Recorded input storages to read as one, where the sample args share memory."""
    first_for_arg: dict[int, int] = {}
    same: dict[int, int] = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, arg in zip(placeholders, sample_args, strict=True):
        val = node.meta.get("val")
        if not isinstance(arg, torch.Tensor) or not isinstance(val, torch.Tensor):
            continue
        key = val.untyped_storage()._cdata
        first = first_for_arg.setdefault(arg.untyped_storage()._cdata, key)
        if first != key:
            same[key] = first
    return same


def _propagate_symbolic(
    gm: GraphModule, mode: Any, runners: Mapping[Node, Callable[..., Any]]
) -> dict[Node, Any]:
    env: dict[Node, Any] = {}
    with mode:
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = node.meta["val"]
            elif node.op == "get_attr":
                value = attr_of(gm, node.target)
                env[node] = (
                    mode.from_tensor(value, static_shapes=True) if isinstance(value, torch.Tensor) else value
                )
            elif node.op == "call_function":
                target = node.target
                if node in runners or target is operator.getitem:
                    env[node] = _run(node, env, runners)
                elif not isinstance(target, torch._ops.OpOverload):
                    env[node] = node.meta["val"]
                else:
                    info = op_info(target)
                    if info.passes_its_input_through:
                        env[node] = _map(node.args[0], env)
                    elif not info.result_is_fresh:
                        recorded = _recorded_alias(node, env)
                        env[node] = recorded if recorded is not None else _run(node, env, runners)
                    elif info.keeps_self_geometry:
                        env[node] = _at_self_offset(node, env, runners)
                    else:
                        env[node] = Fresh(node.meta["val"], symbolic=True)
    return env


def _at_self_offset(node: Node, env: dict[Node, Any], runners: Mapping[Node, Callable[..., Any]]) -> Any:
    """The value of an op whose result keeps `self`'s storage offset (the *_scatter ops, the
    functional copy). A `Fresh` value is read at offset 0; the recorded value is used as it
    is where it starts where `self` does, and replayed where the trace recorded it elsewhere
    (random pipelines seed 2193, symbolic: `copy(c, c)` recorded at offset 0 where a `c`
    moved to offset 3 runs it at 3)."""
    val = node.meta.get("val")
    self_value = env.get(node.args[0]) if node.args and isinstance(node.args[0], Node) else None
    if type(self_value) is Fresh:
        self_value = self_value.materialize()
    if not isinstance(self_value, torch.Tensor) or not isinstance(val, torch.Tensor):
        return Fresh(val, symbolic=True)
    recorded, wanted = _layout(val)[2], _layout(self_value)[2]
    if recorded != wanted:
        return _run(node, env, runners)
    return Fresh(val, symbolic=True) if recorded == 0 else val


def _recorded_alias(node: Node, env: dict[Node, Any]) -> Any:
    """A symbolic trace's view as the trace recorded it, without replaying the view op
    (FakeTensor dispatch with symbolic sizes costs milliseconds a view): only where the
    base's value here is its recorded value, or one in the same storage with the same
    layout, and the recorded view (each piece of a multi-output view) lives in that
    storage, so that the recording is that very view of it; else None (replayed)."""
    val = node.meta.get("val")
    base = node.args[0] if node.args else None
    if not isinstance(base, Node):
        return None
    base_val = base.meta.get("val")
    here = env.get(base)
    if type(here) is Fresh:
        here = here.materialize()
    if not isinstance(here, torch.Tensor) or not isinstance(base_val, torch.Tensor):
        return None
    storage = here.untyped_storage()._cdata
    if here is not base_val and (
        storage != base_val.untyped_storage()._cdata or _layout(here) != _layout(base_val)
    ):
        return None
    pieces = val if isinstance(val, (list, tuple)) else [val]
    if not pieces or not all(
        isinstance(p, torch.Tensor) and p.untyped_storage()._cdata == storage for p in pieces
    ):
        return None
    return val


def _layout(t: torch.Tensor) -> tuple:
    """Sizes, strides and offset as expressions (comparing SymInts would add guards)."""

    def expr(v: Any) -> Any:
        return v if type(v) is int else v.node.expr

    return (tuple(map(expr, t.shape)), tuple(map(expr, t.stride())), expr(t.storage_offset()))


def propagate(
    gm: GraphModule,
    sample_args: tuple,
    *,
    metadata: str = "auto",
    runners: Mapping[Node, Callable[..., Any]] | None = None,
) -> Metadata:
    """The value of every node, and which path computed it (see `Metadata`).

    metadata="fake" forces the FakeTensor replay (as the stock pass computes it),
    for diagnosing where the paths disagree. ``runners`` computes the value
    of the given nodes instead of their targets (auto_functionalized_v2 nodes,
    whose custom op must not run).
    """
    runners = runners or {}
    for i, arg in enumerate(sample_args):
        if isinstance(arg, torch.Tensor):
            check_tensor_kind(arg, f"sample arg {i}")
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = attr_of(gm, node.target)
            if isinstance(value, torch.Tensor):
                check_tensor_kind(value, f"node {node.name!r} (get_attr {node.target})")
    if metadata == "fake":
        return Metadata(_propagate_fake(gm, sample_args, runners), "fake")
    mode = _symbolic_trace_mode(gm)
    if mode is not None:
        try:
            env = _propagate_symbolic(gm, mode, runners)
        except Exception:  # noqa: BLE001 - a replay the trace's own values cannot do
            pass  # falls back to the sample args' sizes, as the stock pass does
        else:
            return Metadata(env, "symbolic", _shared_placeholder_storages(gm, sample_args))
    try:
        inputs = _MetaInputs()
        env = _propagate(gm, sample_args, runners, use_vals=vals_describe(gm, sample_args), inputs=inputs)
        return Metadata(env, "meta", inputs.same)
    except NeedsFake:
        return Metadata(_propagate_fake(gm, sample_args, runners), "fake")
