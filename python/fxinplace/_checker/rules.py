"""Translating one node: `_Translator` turns a recorded node into what it reads and
writes (see the package doc), by the rules for ATen ops, views, scatters,
functionalization's write-backs and `_foreach_*` ops; the custom-op rules are in
`rules_custom_ops`. It is handed the recorder that runs the graph."""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

import torch
from torch.fx import Node

from fxinplace._checker.ops import (
    _AFV1,
    _AFV2,
    _CLONES,
    _COMMUTATIVE,
    _CONSTANT_FACTORIES,
    _METADATA_QUERIES,
    _SCATTER_VIEWS,
    _SHAPE_ONLY,
    _SHAPE_ONLY_SELF,
    _STORES_CONVERTED,
    _WRITE_BACK_OPS,
    _aten,
    _inplace_of,
    _is_foreach_inplace,
    _out_form_of,
)
from fxinplace._checker.refs import (
    _COPY,
    _FILL,
    _GROW,
    _REASON,
    _RULE_FOREACH,
    _RULE_INPLACE,
    _RULE_OUT,
    _RULE_WRITE_BACK,
    _bind,
    _CannotCheck,
    _foreach_layout,
    _is_write,
    _leaves,
    _list_element,
    _needed,
    _op_name,
    _Records,
    _Ref,
    _same_kind,
    _scalar_view,
    _show,
    _walk,
)
from fxinplace._checker.rules_custom_ops import _CustomOpRules


@dataclasses.dataclass
class _Translator(_CustomOpRules):
    """One node's run, as the recorder saw it (arguments before and after, result), into checker facts."""

    rec: _Records
    node: Node
    snap_args: Any
    snap_kwargs: Any
    args: Any
    kwargs: Any
    value: Any

    def __post_init__(self) -> None:
        self.target = self.node.target
        self.functional = self.rec.functional
        # The functional node whose values this one computes (see fill).
        self.counterpart_name = self.node.name

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
            if name in theirs and not _same_argument(name, value, theirs[name], scalars, theirs):
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
        if target._schema.name in _SCATTER_VIEWS and all(e[0] == _COPY for e in effects):
            # A scatter modelled as copies (its base, then src into the view) carries the
            # base's values into its result, where every later read and the final outputs
            # are compared. Compared here, the base's elements the view overwrites would
            # count too, though no one sees them (a base written in place ahead of the
            # scatter, whose src holds the same values).
            reads = [(arg, src, ref, read and arg != "self") for arg, src, ref, read in reads]
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
        if name == "aten::slice_backward":  # zeros, and grad_output in the slice
            grad = bound.get("grad_output")
            try:
                view = _aten.slice.Tensor(out, bound["dim"], bound["start"], bound["end"], bound["step"])
            except RuntimeError:
                return None
            if not (_same_kind(grad, out) and view.shape == grad.shape):
                return None
            return [self.zeros(out), self.copy(view, grad)]
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
        elif target is _aten.copy_.default and twin in _COPY_FORMS:
            self.copy_into_buffer(self.functional.index_of.get(node.name, -1))
        elif target is _aten.copy_.default and twin is _aten.slice_backward.default:
            self.slice_backward_into_buffer(self.functional.index_of.get(node.name, -1))
        elif target is _aten.zero_.default and twin is None:
            self.zero_fill()
        elif (
            target is _aten.fill_.Scalar
            and getattr(twin, "_schema", None) is not None
            and (twin._schema.name in _CONSTANT_FACTORIES)
        ):
            self.fill_into_buffer(twin, self.functional.index_of.get(node.name, -1))
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
        # Through resize_/as_strided_ write-backs, and copy_ into what a copy_ returned
        # (the input itself: copy_(copy_(x1, v0), v1) for an input passed twice).
        while isinstance(dst, Node) and dst.op == "call_function" and dst.target in _WRITE_BACK_OPS:
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
        writing into one of `foo`'s own operands or into another buffer (a dead one a memory
        plan reuses): does what `foo` does, into that tensor."""
        rec, node, target = self.rec, self.node, self.target
        reads = self.operands(target, self.snap_args, self.snap_kwargs)
        written = next(a.name for a in target._schema.arguments if _is_write(a))
        self_operand = next((i for i, r in enumerate(reads) if r[0] == written), -1)
        rule = _RULE_INPLACE
        if _out_form_of(functional_target, target):
            # foo.out(a, b, out=b): the out= argument is the memory of an operand foo reads
            # (exactly its elements); the reads line up with foo's without it.
            out = reads.pop(self_operand)
            self_operand = next((i for i, r in enumerate(reads) if r[2] == out[2]), -1)
            if self_operand < 0:
                # foo.out(a, b, out=d), d none of foo's operands: d goes last, not read;
                # the checker holds it to ATen's out= rule (it may overlap no operand).
                reads.append((out[0], out[1], out[2], False))
                self_operand, rule = len(reads) - 1, _RULE_OUT
        if target is _aten.copy_.default:
            reads[self_operand] = (*reads[self_operand][:3], False)  # copy_ overwrites self whole
        outs = [v for v in _leaves(self.value) if isinstance(v, torch.Tensor)]
        cast = self.cast_stored_in_place(functional_target, outs)
        if cast is not None:
            self.counterpart_name = cast  # a holds the cast's values: its fill (see fill)
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
            rule=rule,
            pointwise=pointwise,
            self_operand=self_operand,
            commutative_pair=self.commutative_pair(functional_target),
        )

    def cast_stored_in_place(self, functional_target: Any, outs: list[torch.Tensor]) -> str | None:
        """The functional cast whose value `foo_(a, ...)` stores, or None: foo returns
        booleans that the functional graph converts to a's dtype with `_to_copy` (foo's only
        user, a conversion of dtype alone), and ATen's `foo_` stores exactly that conversion
        (`a.ge_(b)` for `_to_copy(ge(a, b), dtype=a.dtype)`). Whether the cast's users now
        read a is for the simulation to prove, as for any value."""
        if (
            len(outs) != 1
            or not isinstance(functional_target, torch._ops.OpOverload)
            or functional_target._schema.name not in _STORES_CONVERTED
            or self.functional is None
        ):
            return None
        cast = self.functional.dtype_cast_of(self.node.name)
        return cast[0] if cast is not None and cast[1] == outs[0].dtype else None

    def copy_into_buffer(self, counterpart: int) -> None:
        """`copy_(d, x)` standing for the functional `clone(x)` or `_to_copy(x)` (as a memory
        plan writes it into a dead buffer d): x's values, converted to d's dtype, into d, which
        goes last among the reads, not read; the checker holds it to ATen's out= rule."""
        bound = _bind(self.target, self.snap_args, self.snap_kwargs)
        dst, src = bound["self"], bound["src"]
        reads = [("self", src.source, src.ref, True), ("out", dst.source, dst.ref, False)]
        out, src_live = self.value, _bind(self.target, self.args, self.kwargs)["src"]
        if _same_kind(out, src_live) and out.shape == src_live.shape:
            effects = [self.copy(out, src_live)]
        else:  # a conversion: the functional op's value, as its own fill names it
            effects = [self.fill(out, ("out", 0))]
        self.rec.add(
            self.node, counterpart, [], reads, effects, rule=_RULE_OUT, pointwise=True, self_operand=1
        )

    def zeros(self, t: torch.Tensor) -> tuple:
        """Zeros of t's shape and dtype: one value wherever a graph computes it (`zero_` in the
        rewritten graph, the part of `slice_backward`'s result outside its slice)."""
        key = ("zeros", tuple(t.shape), t.dtype)
        return (_FILL, self.rec.ref(t), None, self.rec.slot(ZEROS, key, t, "zeros"), 0)

    def zero_fill(self) -> None:
        """`zero_(d)` with no functional counterpart (a memory plan clearing a dead buffer for a
        `slice_backward`): d's values are not read; every element becomes zero."""
        dst = _bind(self.target, self.snap_args, self.snap_kwargs)["self"]
        reads = [("self", dst.source, dst.ref, False)]
        effects = [self.zeros(self.value)]
        self.rec.add(self.node, -1, [], reads, effects, rule=_RULE_INPLACE, pointwise=True, self_operand=0)

    def fill_into_buffer(self, functional_target: Any, counterpart: int) -> None:
        """`fill_(d, v)` standing for a functional constant factory (`zeros`, `full_like`, ...,
        as a memory plan writes one into a dead buffer d): d is not read, and every element
        becomes the factory's value, which v must be."""
        want = _CONSTANT_FACTORIES[functional_target._schema.name]
        if isinstance(want, str):  # the factory's argument of that name
            want = self.functional.scalars.get(self.node.name, {}).get(want)
        value = _bind(self.target, self.args, self.kwargs)["value"]
        if _scalar_view(value) != _scalar_view(want):
            self.rec.finding(
                _REASON.wrong_argument,
                f"fills with {_show(value)} where the functional graph's {_op_name(functional_target)} "
                f"fills with {_show(want)}",
                self.node,
            )
            return
        dst = _bind(self.target, self.snap_args, self.snap_kwargs)["self"]
        reads = [("out", dst.source, dst.ref, False)]
        effects = [self.fill(self.value, ("out", 0))]
        self.rec.add(
            self.node, counterpart, [], reads, effects, rule=_RULE_OUT, pointwise=True, self_operand=0
        )

    def slice_backward_into_buffer(self, counterpart: int) -> None:
        """`copy_(slice(d, ...), grad)` standing for the functional `slice_backward(grad, ...)`
        after `zero_(d)` (as a memory plan writes it into a dead buffer d): grad's values into
        the slice, which goes last among the reads, not read; ATen's out= rule holds. The rest
        of d must already hold the zeros the functional op has there."""
        bound = _bind(self.target, self.snap_args, self.snap_kwargs)
        dst, src = bound["self"], bound["src"]
        reads = [("grad_output", src.source, src.ref, True), ("out", dst.source, dst.ref, False)]
        live = _bind(self.target, self.args, self.kwargs)
        if not (_same_kind(live["self"], live["src"]) and live["self"].shape == live["src"].shape):
            raise _CannotCheck(f"node {self.node.name} (copy_ for slice_backward) converts or broadcasts")
        effects = [self.copy(self.value, live["src"])]
        self.rec.add(
            self.node, counterpart, [], reads, effects, rule=_RULE_OUT, pointwise=True, self_operand=1
        )

    def commutative_pair(self, functional_target: Any) -> bool:
        """`b.foo_(a)` may stand for `foo(a, b)`: foo commutes in its two tensor operands
        (add without alpha, mul, ...; the operator facts say which), and nothing else is passed."""
        if (
            not isinstance(functional_target, torch._ops.OpOverload)
            or (functional_target._schema.name, functional_target._schema.overload_name) not in _COMMUTATIVE
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


# Functional copies a memory plan writes as `copy_` into a dead buffer.
_COPY_FORMS = (_aten.clone.default, _aten._to_copy.default)
# The slot name of zeros (of each shape and dtype): no node's name, one value wherever computed.
ZEROS = "<zeros>"


def _same_argument(name: str, mine: Any, theirs: Any, my_args: dict, their_args: dict) -> bool:
    """Whether the rewritten node's argument `name` is the functional node's. The strides of
    an as_strided-like op (`size`, `stride`) address nothing along a dimension of size 1, nor
    anywhere in a tensor with a dimension of size 0, and a rewrite may change what a graph
    reads of such a stride (random pipelines seed 3624: `sym_stride(mul, 0)` of a (1, 8)
    result computed in a transposed input's memory, 1 rather than 8, passed to
    `as_strided_scatter`): only the others are compared, as output layouts are."""
    if mine == theirs:
        return True
    size = my_args.get("size")
    if name != "stride" or size is None or size != their_args.get("size"):
        return False
    if not (isinstance(mine, tuple) and isinstance(theirs, tuple) and len(mine) == len(theirs) == len(size)):
        return False
    if any(type(n) is int and n == 0 for n in size):
        return True  # an empty tensor: no stride addresses anything (seed 5116)
    return all(a == b or (type(n) is int and n <= 1) for a, b, n in zip(mine, theirs, size, strict=True))
