"""Recording a run: `_Recorder` runs one graph and records what each node reads
and writes, for the native simulation (see the package doc)."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch.fx import GraphModule, Node
from torch.fx.node import map_arg

from fxinplace import _C
from fxinplace._checker.inputs import _beyond_fake, _Inputs, _on_storage
from fxinplace._checker.refs import (
    _REASON,
    _RULE_NONE,
    _CannotCheck,
    _dtype_code,
    _FunctionalRaised,
    _leaves,
    _op_name,
    _Ref,
    _run_target,
)
from fxinplace._checker.rules import ZEROS, _Translator

_TO_COPY = torch.ops.aten._to_copy.default


class _Recorder:
    """Runs one graph and records what each node reads and writes (see the package doc).

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
        self.nodes: list[Any] = []  # _C.checker.CheckNode
        self.check_nodes: list[str] = []  # fx node name of each recorded node
        self.reads: list[list[str]] = []  # operand names of each recorded node
        self.index_of: dict[str, int] = {}  # fx node name -> recorded node index
        self.slot_of: dict[tuple, int] = {}  # (fx node name, key) -> slot
        self.targets: dict[str, Any] = {}
        self.scalars: dict[str, dict[str, Any]] = {}
        self.findings: list[tuple] = []
        self.afv2_queue: dict[Any, list[str]] = {}
        self.env: dict[Node, Any] = {}
        self._casts: dict[str, tuple[str, torch.dtype]] | None = None

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

    def dtype_cast_of(self, name: str) -> tuple[str, torch.dtype] | None:
        """(name, dtype) of the `_to_copy` that is node `name`'s only user, when it converts
        the dtype alone (same device, strided, no memory format asked for); after `run`."""
        if self._casts is None:
            self._casts = {}
            for n in self.gm.graph.nodes:
                src = (
                    n.args[0]
                    if n.op == "call_function" and n.target is _TO_COPY and len(n.args) == 1
                    else None
                )
                if not isinstance(src, Node) or len(src.users) != 1:
                    continue
                out, value = self.env.get(n), self.env.get(src)
                kwargs = dict(n.kwargs)
                dtype = kwargs.pop("dtype", None)
                # The device is compared on the values below.
                same = {
                    "layout": torch.strided,
                    "memory_format": torch.preserve_format,
                    "non_blocking": False,
                    "pin_memory": False,
                }
                plain = all(
                    v is None or k == "device" or (k in same and same[k] == v) for k, v in kwargs.items()
                )
                if (
                    plain
                    and isinstance(out, torch.Tensor)
                    and isinstance(value, torch.Tensor)
                    and out.device == value.device
                    and dtype == out.dtype
                ):
                    self._casts[src.name] = (n.name, dtype)
        return self._casts.get(name)

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
        inductor = _C.checker.CheckInductorCode.NONE
        if self.compiler == "inductor" and node.op != "output":
            from fxinplace._checker.inductor import inductor_code

            inductor = inductor_code(node.target, rule)
        self_operands, element_of = foreach or ([], [])
        self.nodes.append(
            _C.checker.CheckNode(
                name=node.name,
                op=op,
                counterpart=counterpart,
                prepare=prepare,
                reads=reads,
                effects=effects,
                write_rule=rule,
                pointwise=pointwise,
                self_operand=self_operand,
                written_operands=written or [],
                is_output=is_output,
                self_operands=self_operands,
                element_of=element_of,
                commutative_pair=commutative_pair,
                inductor=inductor,
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
            if name == ZEROS and (name, key) in self.slot_of:
                return self.slot_of[(name, key)]  # zeros of one shape and dtype: one value
            self.slot_of[(name, key)] = len(self.slots)
        self.slots.append((label, list(t.shape), t.element_size(), _dtype_code(t.dtype)))
        return len(self.slots) - 1
