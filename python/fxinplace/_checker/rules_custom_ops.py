"""The checker's rules for custom ops: auto_functionalized_v2, auto_functionalized
(v1), and the pass's direct call of a custom op that stands for either. A mixin of
`rules._Translator`, whose state (`rec`, `node`, `args`, ...) and helpers (`fill`,
`opaque`, `counterpart_same_target`) these methods use."""

from __future__ import annotations

from typing import Any

import torch

from fxinplace._checker.refs import (
    _COPY,
    _RULE_CUSTOM_OP,
    _RULE_NONE,
    _bind,
    _CannotCheck,
    _is_write,
    _leaves,
    _needed,
    _Ref,
    _walk,
)
from fxinplace._torch_compat import has_out_semantics


class _CustomOpRules:
    """auto_functionalized(_v2) nodes and direct custom-op calls, for `_Translator`."""

    rec: Any
    node: Any
    target: Any
    args: Any
    kwargs: Any
    snap_args: Any
    snap_kwargs: Any
    value: Any
    functional: Any
    counterpart_name: str

    def queue_or_match_custom_call(self, op: torch._ops.OpOverload, hop: str) -> int:
        """In the functional graph, queues the call for the direct call that may replace it
        (-1); in the rewritten one, its counterpart's index, taken off that queue."""
        if self.functional is None:
            self.rec.afv2_queue.setdefault(op, []).append(self.node.name)
            return -1
        counterpart = self.counterpart_same_target()
        queue = self.functional.afv2_queue.get(op, [])
        if self.node.name in queue:
            queue.remove(self.node.name)
        if counterpart < 0:
            raise _CannotCheck(f"node {self.node.name} ({hop}) is not in the functional graph")
        return counterpart

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
        counterpart = self.queue_or_match_custom_call(op, "auto_functionalized_v2")
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
        counterpart = self.queue_or_match_custom_call(op, "auto_functionalized")
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
