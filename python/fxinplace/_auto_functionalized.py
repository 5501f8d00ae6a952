"""Re-inplacing of `auto_functionalized_v2` (AFv2) nodes: custom mutable ops, functionalized.

`torch.ops.higher_order.auto_functionalized_v2(op, **kwargs)` runs a mutable custom op
functionally: it clones each base in `_all_bases`, regenerates the op's mutated
arguments as views of the clones (`_x_base_index` plus a view encoding), calls the
op and returns `(*op_outputs, *new_bases)`. `_only_clone_these_bases` (None: all)
restricts the cloning; an uncloned base is mutated in place and returned as is.

The native pass treats an AFv2 node as an opaque op that reads every tensor it is
given and returns fresh tensors (`metadata_runners` gives the metadata pass those
values without running the op). Afterwards `reinplace_auto_functionalized` drops the
clone of base *i* when nothing reads the base's memory after the node (nor the op
itself through another argument, nor through another base mutated in place). A base
in a graph input's or constant's memory stays cloned, except a graph input (sharing
no storage with another sample arg) that the program later overwrites with
`copy_(input, ...)` and that nothing reads in between, while the base's new value is
not read after that `copy_`: then the input is mutated in place, as Inductor does,
and a `copy_` that ends up copying the input onto itself is dropped. When every base
can be mutated in place the node becomes a direct call of the op on the regenerated
views; otherwise it keeps `_only_clone_these_bases` for the bases still cloned.

Which tensors share memory is worked out in one walk over the graph from the op
schemas (alias classes): a view's result (a return with a non-write alias
annotation) and an in-place op's aliased return share their argument's class, a
getitem of a multi-view (split, unbind) shares the view's class, and everything
else is fresh; placeholders and get_attr nodes are classes of their own.
"""

from __future__ import annotations

import bisect
import heapq
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch._library.utils as library_utils
from torch.fx import GraphModule, Node

from fxinplace._apply_plan import _view_val
from fxinplace._errors import ReinplaceInputError
from fxinplace._metadata import _NeedsFake, _static_value, _vals_describe
from fxinplace._op_info import ALIASING_WITHOUT_ANNOTATION

AFV2 = torch.ops.higher_order.auto_functionalized_v2
_aten = torch.ops.aten

# Keys of an AFv2 node's kwargs that are not arguments of the op.
_RESERVED = ("_all_bases", "_only_clone_these_bases", "_op_schema")
# Ops that read only a tensor's metadata: not a use of its memory.
_META_ONLY = {
    _aten.sym_size.int,
    _aten.sym_stride.int,
    _aten.sym_numel.default,
    _aten.sym_storage_offset.default,
}


# ----------------------------------------------------------------------------
# Reading an AFv2 node


@dataclass(frozen=True)
class _View:
    """How one mutated argument is regenerated from its base."""

    base_index: int | None  # None: the argument is None
    kind: str  # "base" | "alias" | "slice" | "as_strided"
    params: tuple = ()


@dataclass
class _Call:
    op: torch._ops.OpOverload
    bases: list[Any]
    only_clone: tuple[int, ...]  # bases still cloned
    # Mutated argument name -> its _View, a list of them (Tensor[]), or None.
    mutated: dict[str, Any]
    # The op's other arguments, by schema name.
    others: dict[str, Any]
    num_outputs: int  # leading entries of the node's result that are the op's


def _read_single(kwargs: dict[str, Any], prefix: str, num_bases: int, where: str) -> _View:
    key = f"{prefix}_base_index"
    if key not in kwargs:
        raise ReinplaceInputError(f"{where}: missing {key}")
    index = kwargs[key]
    if index is None:
        return _View(None, "base")
    if type(index) is not int or not 0 <= index < num_bases:
        raise ReinplaceInputError(f"{where}: {key}={index!r} is not an index into _all_bases")
    if f"{prefix}_alias" in kwargs:
        return _View(index, "alias")
    if f"{prefix}_storage_offset" in kwargs:
        params = tuple(kwargs[f"{prefix}_{k}"] for k in ("size", "stride", "storage_offset"))
        return _View(index, "as_strided", params)
    if f"{prefix}_slice_dim" in kwargs:
        params = tuple(kwargs[f"{prefix}_slice_{k}"] for k in ("dim", "start", "end"))
        return _View(index, "slice", params)
    return _View(index, "base")


def read_call(node: Node) -> _Call:
    """Decode an AFv2 node; ReinplaceInputError naming it when it is malformed."""
    where = f"node {node.name!r} (auto_functionalized_v2)"
    if len(node.args) != 1 or not isinstance(node.args[0], torch._ops.OpOverload):
        raise ReinplaceInputError(
            f"{where}: only auto_functionalized_v2 of an operator overload is supported, "
            f"got {node.args[0] if node.args else None!r}"
        )
    op = node.args[0]
    from torch._higher_order_ops.auto_functionalize import can_auto_functionalize

    if not can_auto_functionalize(op):
        raise ReinplaceInputError(f"{where}: {op} cannot be auto-functionalized")
    kwargs = dict(node.kwargs)
    bases = kwargs.get("_all_bases")
    if not isinstance(bases, (list, tuple)) or not all(b is None or isinstance(b, Node) for b in bases):
        raise ReinplaceInputError(f"{where}: _all_bases must be a list of graph values")
    bases = list(bases)
    only = kwargs.get("_only_clone_these_bases")
    if only is None:
        only = tuple(range(len(bases)))
    elif not isinstance(only, (list, tuple)) or not all(type(i) is int and 0 <= i < len(bases) for i in only):
        raise ReinplaceInputError(f"{where}: bad _only_clone_these_bases={only!r}")
    schema = op._schema
    consumed = set(_RESERVED)
    mutated: dict[str, Any] = {}
    if not library_utils.is_out(op):
        for arg in schema.arguments:
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            if library_utils.is_tensorlist_like_type(arg.type):
                length = kwargs.get(f"_{arg.name}_length", None)
                consumed.add(f"_{arg.name}_length")
                if length is None:
                    mutated[arg.name] = None
                    continue
                views = []
                for i in range(length):
                    prefix = f"_{arg.name}_{i}"
                    views.append(_read_single(kwargs, prefix, len(bases), where))
                    consumed.update(k for k in kwargs if k.startswith(prefix + "_"))
                mutated[arg.name] = views
            else:
                prefix = f"_{arg.name}"
                mutated[arg.name] = _read_single(kwargs, prefix, len(bases), where)
                consumed.update(
                    f"{prefix}_{k}"
                    for k in (
                        "base_index alias size stride storage_offset slice_dim slice_start slice_end".split()
                    )
                )
    names = {arg.name for arg in schema.arguments}
    others = {k: v for k, v in kwargs.items() if k not in consumed and k in names}
    num_outputs = len(schema.returns) if len(schema.returns) > 1 else 1
    return _Call(op, bases, tuple(sorted(set(only))), mutated, others, num_outputs)


def check_node(node: Node) -> None:
    read_call(node)


# ----------------------------------------------------------------------------
# Metadata: what an AFv2 node returns, without running the op


def _like(t: torch.Tensor, device: Any) -> torch.Tensor:
    """Fresh memory laid out like `t` (offset included, as clone_preserve_strides does)."""
    needed = 1 + t.storage_offset() + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True))
    if any(s == 0 for s in t.shape):
        needed = t.storage_offset()
    buffer = torch.empty(needed, dtype=t.dtype, device=device)
    return buffer.as_strided(t.shape, t.stride(), t.storage_offset())


class _MetadataStandIn:
    """Takes an AFv2 node's place while `_metadata.propagate` runs.

    Returns the op's outputs as fresh tensors shaped like the recorded
    `meta['val']` (when the recorded values describe the sample args), and each
    base's new value as a fresh tensor laid out like the base, or the base itself
    when it is not cloned. Otherwise runs the real operator (its meta/fake kernel).
    """

    def __init__(self, node: Node, trust_val: bool) -> None:
        self.node = node
        self.trust_val = trust_val
        self.__name__ = "auto_functionalized_v2"

    def __call__(self, mutable_op: Any, /, **kwargs: Any) -> Any:
        from torch._higher_order_ops.auto_functionalize import auto_functionalized_v2_dense

        fake_mode = torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
        bases = list(kwargs.get("_all_bases") or [])
        only = kwargs.get("_only_clone_these_bases")
        val = self.node.meta.get("val")
        if (
            self.trust_val
            and isinstance(val, (tuple, list))
            and len(val) >= len(bases)
            and _static_value(val)
            and not library_utils.is_out(mutable_op)
        ):
            n_outs = len(val) - len(bases)
            outs = [
                _like(v, "meta" if fake_mode is None else v.device) if isinstance(v, torch.Tensor) else v
                for v in val[:n_outs]
            ]
            new_bases = [
                b if b is None or (only is not None and i not in only) else _like(b, b.device)
                for i, b in enumerate(bases)
            ]
            return (*outs, *new_bases)
        try:
            # The dense implementation, not the operator: under FakeTensorMode the
            # operator's fake rule passes _only_clone_these_bases twice (torch 2.13).
            return auto_functionalized_v2_dense(mutable_op, **kwargs)
        except Exception as e:
            if fake_mode is None:
                raise _NeedsFake from e
            raise


def metadata_runners(gm: GraphModule, sample_args: tuple) -> dict[Node, Callable[..., Any]]:
    """What computes each AFv2 node's metadata (see _MetadataStandIn), for ``_metadata.propagate``."""
    nodes = gm.graph.find_nodes(op="call_function", target=AFV2)
    if not nodes:
        return {}
    trust = _vals_describe(gm, sample_args)
    return {node: _MetadataStandIn(node, trust) for node in nodes}


# ----------------------------------------------------------------------------
# Alias classes


class _Classes:
    """Storage alias classes from op schemas, and where each class is used."""

    def __init__(self, graph: torch.fx.Graph) -> None:
        self.parent: list[int] = []
        self.is_input: list[bool] = []
        # node -> (class ids, uniform): uniform means every item of the node's
        # value (a Tensor[] return, say) is in ids[0].
        self.of: dict[Node, tuple[tuple[int, ...], bool]] = {}
        self.pos: dict[Node, int] = {}
        self.nodes: list[Node] = []
        uses: list[tuple[int, int]] = []
        for p, node in enumerate(graph.nodes):
            self.pos[node] = p
            self.nodes.append(node)
            is_use = self._visit(node)
            if is_use:
                for m in node.all_input_nodes:
                    for c in self.of.get(m, ((), False))[0]:
                        uses.append((c, p))
        self.uses: dict[int, list[int]] = {}
        for c, p in uses:
            self.uses.setdefault(self.find(c), []).append(p)
        for positions in self.uses.values():
            positions.sort()

    def new(self, is_input: bool = False) -> int:
        self.parent.append(len(self.parent))
        self.is_input.append(is_input)
        return len(self.parent) - 1

    def find(self, c: int) -> int:
        while self.parent[c] != c:
            self.parent[c] = self.parent[self.parent[c]]
            c = self.parent[c]
        return c

    def union(self, a: int, b: int) -> int:
        a, b = self.find(a), self.find(b)
        if a != b:
            self.parent[b] = a
            self.is_input[a] = self.is_input[a] or self.is_input[b]
        return a

    def cls(self, node: Any) -> int | None:
        """The class of a single-tensor value (root), or None."""
        found = self.of.get(node) if isinstance(node, Node) else None
        if not found or not found[0]:
            return None
        return self.find(found[0][0])

    def item(self, node: Node, k: Any) -> int:
        ids, uniform = self.of.get(node, ((), False))
        if uniform and ids:
            return ids[0]
        if type(k) is int and 0 <= k < len(ids):
            return ids[k]
        return self.new()

    def _value_class(self, value: Any) -> int | None:
        if isinstance(value, Node):
            return self.cls(value)
        if isinstance(value, (list, tuple)):
            found = [c for c in (self._value_class(v) for v in value) if c is not None]
            if not found:
                return None
            root = found[0]
            for c in found[1:]:
                root = self.union(root, c)
            return root
        return None

    def _visit(self, node: Node) -> bool:
        """Assigns the node's classes; returns whether it uses its inputs' memory."""
        if node.op in ("placeholder", "get_attr"):
            self.of[node] = ((self.new(is_input=True),), True)
            return False
        if node.op == "output":
            return True
        if node.op != "call_function":
            self.of[node] = ((self.new(),), True)
            return True
        target = node.target
        if target is operator.getitem:
            src = node.args[0]
            if isinstance(src, Node):
                self.of[node] = ((self.item(src, node.args[1]),), True)
            return False  # naming an item reads nothing
        if target is AFV2:
            call = read_call(node)
            if library_utils.is_out(call.op):  # returns the op's result as is
                self.of[node] = ((self.new(),), True)
                return True
            ids = [self.new() for _ in range(call.num_outputs)]
            for i, b in enumerate(call.bases):
                c = self.cls(b) if i not in call.only_clone else None
                ids.append(c if c is not None else self.new())
            self.of[node] = (tuple(ids), False)
            return True
        if not isinstance(target, torch._ops.OpOverload):
            self.of[node] = ((self.new(),), True)
            return True
        if target in ALIASING_WITHOUT_ANNOTATION:
            c = self._value_class(node.args[0] if node.args else None)
            self.of[node] = ((c if c is not None else self.new(),), True)
            return False
        schema = target._schema
        by_set: dict[str, Any] = {}
        for i, arg in enumerate(schema.arguments):
            if arg.alias_info is None:
                continue
            value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
            for s in arg.alias_info.before_set:
                by_set.setdefault(s, value)
        ids = []
        writes = False
        for ret in schema.returns:
            c = None
            if ret.alias_info is not None:
                writes = writes or ret.alias_info.is_write
                for s in ret.alias_info.before_set:
                    if s in by_set:
                        c = self._value_class(by_set[s])
                        break
            ids.append(c if c is not None else self.new())
        # One return: a getitem on it (an item of a Tensor[], or indexing) aliases it.
        uniform = len(schema.returns) == 1
        self.of[node] = (tuple(ids), uniform)
        is_view = any(r.alias_info is not None for r in schema.returns) and not writes
        return not is_view and target not in _META_ONLY

    def uses_between(self, c: int, after: int, before: int) -> int | None:
        """Position of the first use of class `c` strictly between two positions."""
        positions = self.uses.get(self.find(c), [])
        k = bisect.bisect_right(positions, after)
        if k < len(positions) and positions[k] < before:
            return positions[k]
        return None


# ----------------------------------------------------------------------------
# The pass


@dataclass
class AFv2Decision:
    node: str
    action: str  # inplace | partial_inplace | keep | remove_copy
    reason: str
    reason_code: str
    culprit: str | None


def _shared_inputs(gm: GraphModule, sample_args: tuple) -> set[Node]:
    """Placeholders whose sample arg shares its storage with another sample arg."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    by_storage: dict[int, list[Node]] = {}
    for node, arg in zip(placeholders, sample_args, strict=False):
        if isinstance(arg, torch.Tensor):
            by_storage.setdefault(arg.untyped_storage()._cdata, []).append(node)
    return {n for group in by_storage.values() if len(group) > 1 for n in group}


def _is_copy_into(node: Node, dst: Node) -> bool:
    return node.target is _aten.copy_.default and len(node.args) >= 2 and node.args[0] is dst


def _describe(i: int, base: Any) -> str:
    what = base.name if isinstance(base, Node) else repr(base)
    return f"base {i} ({what})"


def reinplace_auto_functionalized(gm: GraphModule, sample_args: tuple) -> list[AFv2Decision]:
    """Drop the clones of AFv2 bases that nothing reads afterwards (see the module doc)."""
    afv2_nodes = gm.graph.find_nodes(op="call_function", target=AFV2)
    if not afv2_nodes:
        return []
    return _Pass(gm, sample_args).run(list(afv2_nodes))


class _Pass:
    def __init__(self, gm: GraphModule, sample_args: tuple) -> None:
        self.gm = gm
        self.classes = _Classes(gm.graph)
        self.end = len(self.classes.nodes)
        self.shared = _shared_inputs(gm, sample_args)
        # Inputs mutated in place ahead of their copy_ back: until that copy_
        # (position), a use of the input is a use of the new value it now holds.
        self.restore: list[tuple[int, int, Node, tuple]] = []
        self.copies_back: list[Node] = []

    def run(self, nodes: list[Node]) -> list[AFv2Decision]:
        decisions: list[AFv2Decision] = []
        for node in nodes:
            here = self.classes.pos[node]
            while self.restore and self.restore[0][0] < here:
                _, _, base, original = heapq.heappop(self.restore)
                self.classes.of[base] = original
            decisions.extend(self.rewrite(node, here))
        # A copy_ back of a new value that is the input itself now does nothing.
        for copy in dict.fromkeys(self.copies_back):
            dst = copy.args[0]
            if dst is copy.args[1]:
                copy.replace_all_uses_with(dst)  # type: ignore[arg-type]
                self.gm.graph.erase_node(copy)
                text = f"done: {dst} is mutated in place, the copy_ back copies it onto itself"
                decisions.append(AFv2Decision(copy.name, "remove_copy", text, "done", None))
        return decisions

    def _input_base(self, node: Node, call: _Call, j: int, c: int, here: int) -> tuple | Node:
        """The copy_ back that lets input base j be mutated in place, or why not."""
        base = call.bases[j]
        what = _describe(j, base)
        if base.op != "placeholder":
            return (f"{what} aliases a graph input or constant", "self_is_input", None)
        if base in self.shared:
            return (f"{what} is a graph input sharing storage with another input", "self_is_input", None)
        classes = self.classes
        first = classes.uses_between(c, here, self.end)
        copy = classes.nodes[first] if first is not None else None
        if copy is None or not _is_copy_into(copy, base):
            culprit = copy.name if copy is not None else None
            if culprit is None:
                text = f"{what} is a graph input the program does not mutate (no copy_ back)"
            else:
                text = f"{what} is a graph input read by {culprit} before any copy_ back"
            return (text, "self_is_input" if culprit is None else "used_later", culprit)
        at_copy = classes.pos[copy]
        late = classes.uses_between(classes.item(node, call.num_outputs + j), at_copy, self.end)
        if late is not None:
            culprit = classes.nodes[late].name
            text = f"{what} is a graph input; its new value is used by {culprit} after the copy_ back"
            return (text, "used_later", culprit)
        return copy

    def rewrite(self, node: Node, here: int) -> list[AFv2Decision]:
        call = read_call(node)
        classes = self.classes
        if library_utils.is_out(call.op):
            text = f"{call.op} is an out= op: auto_functionalized_v2 allocates its outputs, nothing is cloned"
            return [AFv2Decision(node.name, "keep", text, "not_candidate", None)]
        # Classes of the op's other tensor arguments: a base sharing one stays
        # cloned, or the op would read what it writes.
        arg_classes: dict[int, Node] = {}
        for value in call.others.values():
            for m in value if isinstance(value, (list, tuple)) else [value]:
                c = classes.cls(m)
                if c is not None:
                    arg_classes.setdefault(c, m)
        done: set[int] = set()  # classes of the bases mutated in place
        for i, b in enumerate(call.bases):
            c = classes.cls(b)
            if i not in call.only_clone and c is not None:
                done.add(c)
        keep: list[int] = []
        refusals: list[tuple[str, str, str | None]] = []  # (text, code, culprit)
        inplaced: list[int] = []
        copies: dict[int, Node] = {}
        for j in call.only_clone:
            base = call.bases[j]
            if base is None:
                inplaced.append(j)
                continue
            c = classes.cls(base)
            why: tuple | None = None
            if c is None:
                why = (f"{_describe(j, base)} is not a tensor the graph computes", "not_candidate", None)
            elif c in done:
                text = f"{_describe(j, base)} shares storage with a base already mutated in place"
                why = (text, "operand_aliases_self", None)
            elif c in arg_classes:
                culprit = arg_classes[c].name
                text = f"{_describe(j, base)} shares storage with argument {culprit} of the op"
                why = (text, "operand_aliases_self", culprit)
            elif classes.is_input[c]:
                found = self._input_base(node, call, j, c, here)
                if isinstance(found, Node):
                    copies[j] = found
                else:
                    why = found
            else:
                later = classes.uses_between(c, here, self.end)
                if later is not None:
                    culprit = classes.nodes[later].name
                    text = f"{_describe(j, base)} or an alias of it is used later by {culprit}"
                    why = (text, "used_later", culprit)
            if why is None:
                inplaced.append(j)
                done.add(c)  # type: ignore[arg-type]
            else:
                keep.append(j)
                refusals.append(why)

        # From here on a use of an in-place base is a use of its new value: give
        # it the new value's class (its own has no use after this node). For an
        # input, only until its copy_ back; after that it is the input again.
        for j in inplaced:
            base = call.bases[j]
            if not isinstance(base, Node):
                continue
            if j in copies:
                at_copy = classes.pos[copies[j]]
                if all(entry[2] is not base for entry in self.restore):
                    entry = (at_copy, len(self.copies_back), base, classes.of[base])
                    heapq.heappush(self.restore, entry)
                self.copies_back.append(copies[j])
            classes.of[base] = ((classes.item(node, call.num_outputs + j),), True)

        if not keep and _direct_call(self.gm, node, call, classes):
            text = f"done: every base mutated in place; now a direct call of {call.op}"
            return [AFv2Decision(node.name, "inplace", text, "done", None)]
        if inplaced or "_only_clone_these_bases" in node.kwargs:
            # Left out when every base is still cloned: the node stays exactly as
            # functionalization emitted it (torch 2.13's fake rule for the op
            # breaks on the kwarg, so fewer graphs carry it).
            node.kwargs = {**node.kwargs, "_only_clone_these_bases": tuple(keep)}
        detail = "; ".join(r[0] for r in refusals)
        if not inplaced:
            text, code, culprit = refusals[0]
            return [AFv2Decision(node.name, "keep", f"every base still cloned: {detail}", code, culprit)]
        for user in list(node.users):
            if user.target is operator.getitem and type(user.args[1]) is int:
                j = user.args[1] - call.num_outputs
                if j in inplaced and call.bases[j] is not None:
                    user.replace_all_uses_with(call.bases[j])
                    self.gm.graph.erase_node(user)
        if not keep:
            text = "done: every base mutated in place (_only_clone_these_bases=())"
            return [AFv2Decision(node.name, "inplace", text, "done", None)]
        text, code, culprit = refusals[0]
        reason = f"bases {inplaced} mutated in place, {keep} still cloned: {detail}"
        return [AFv2Decision(node.name, "partial_inplace", reason, code, culprit)]


def _direct_call(gm: GraphModule, node: Node, call: _Call, classes: _Classes) -> bool:
    """Replace the node by a call of the op on the bases; False if its users prevent it."""
    getitems = []
    for user in node.users:
        if user.target is not operator.getitem or type(user.args[1]) is not int:
            return False
        k = user.args[1]
        if not 0 <= k < call.num_outputs + len(call.bases):
            return False
        if k < call.num_outputs and not call.op._schema.returns and user.users:
            return False  # reads the None an op without outputs returns
        if k >= call.num_outputs and call.bases[k - call.num_outputs] is None:
            return False
        getitems.append(user)
    graph = gm.graph
    with graph.inserting_before(node):
        values: dict[str, Any] = dict(call.others)
        for name, view in call.mutated.items():
            if isinstance(view, list):
                values[name] = [_regenerate(graph, call.bases, v) for v in view]
            else:
                values[name] = _regenerate(graph, call.bases, view) if view is not None else None
        args, kwargs = _arrange(call.op, values)
        direct = graph.call_function(call.op, tuple(args), kwargs)
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        n = len(call.op._schema.returns)
        direct.meta["val"] = None if n == 0 else val[0] if n == 1 else tuple(val[:n])
    returns = call.op._schema.returns
    for user in getitems:
        k = user.args[1]
        if k >= call.num_outputs:
            replacement = call.bases[k - call.num_outputs]
        elif len(returns) == 1:
            replacement = direct
        elif not returns:
            graph.erase_node(user)
            continue
        else:
            with graph.inserting_after(direct):
                replacement = graph.call_function(operator.getitem, (direct, k))
            replacement.meta.update(user.meta)
        if k < call.num_outputs and user in classes.of:
            classes.of[replacement] = classes.of[user]
        user.replace_all_uses_with(replacement)
        graph.erase_node(user)
    graph.erase_node(node)
    return True


def _regenerate(graph: torch.fx.Graph, bases: list[Any], view: _View) -> Any:
    if view.base_index is None:
        return None
    base = bases[view.base_index]
    if view.kind == "base":
        return base
    if view.kind == "alias":
        op, args = _aten.alias.default, ()
    elif view.kind == "slice":
        op, args = _aten.slice.Tensor, view.params
    else:
        size, stride, offset = view.params
        op, args = _aten.as_strided.default, (list(size), list(stride), offset)
    out = graph.call_function(op, (base, *args))
    val = _view_val(op, base, torch.fx.node.map_arg(args, lambda n: n.meta.get("val")), {})
    if val is not None:
        out.meta["val"] = val
    return out


def _arrange(op: torch._ops.OpOverload, values: dict[str, Any]) -> tuple[list, dict]:
    """Positional arguments up to the first missing or keyword-only one, the rest by name."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True
    for arg in op._schema.arguments:
        if arg.name not in values:
            positional = False
            continue
        if positional and not arg.kwarg_only:
            args.append(values[arg.name])
        else:
            positional = False
            kwargs[arg.name] = values[arg.name]
    return args, kwargs
