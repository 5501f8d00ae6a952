"""What the pass asks of Inductor, for `policy="inductor"`.

What Inductor does with each op node, read from Inductor's own tables: the facts the
planner's Inductor policy decides on. Inductor itself is only imported for that policy: it
costs about a second to import.

The planner's decision on an auto_functionalized(_v2) node, for Inductor: the node
stays as it is and `meta["only_clone_these_tensors"]` lists what must still be cloned,
which Inductor's `decompose_auto_functionalized` reads when it expands the node into
clones and the mutable op (a base not cloned is written in place and returned as is)."""

from __future__ import annotations

import warnings
from functools import cache
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.fx import GraphModule, Node

from fxinplace import _C
from fxinplace._reinplace.auto_functionalized.v1 import AFV1, AFv1Call, read_v1_call
from fxinplace._reinplace.auto_functionalized.v2 import AFV2, AFv2Call, read_call
from fxinplace._reinplace.op_info import op_info


def inductor_facts(node: Node) -> list[tuple[Node, bool, bool, bool, bool, bool]]:
    """What Inductor does with `node`, for `_C.planner.GraphBuilder.compiler_facts`: a list of
    (node, realized, extern_kernel, inplace_form, lacks_inplace_lowering, opaque), empty
    when there is nothing to say.

    realized: Inductor keeps the value in a buffer of its own anyway (its helper
    `is_node_realized`: a fallback's result, an input or output, or an operand of an op
    that needs realized inputs). The planner asks it of scatters and their bases only, so
    only those are looked up (a scatter's entry covers its base too). extern_kernel:
    Inductor runs the op as a library kernel whose in-place form it accepts (see
    `_extern_in_place`). inplace_form: Inductor has an in-place form that ATen lacks
    (`_unsafe_index_put` -> `prims._unsafe_index_put_`). lacks_inplace_lowering: Inductor
    generates the op's code but would run its in-place form as a library kernel (see
    `_lacks_inplace_lowering`). opaque: Inductor runs the node as a library kernel because
    of its tensors' types (`_runs_opaquely`); asked of views, scatters and custom-op calls,
    the nodes whose writes go through views. An auto_functionalized(_v2) node also describes
    the view chains of its bases (`_view_chain_realized`).
    """
    target = node.target
    if target is AFV1 or target is AFV2:
        facts = _view_chain_realized(node)
        return [(node, False, False, False, False, True), *facts] if _runs_opaquely(node) else facts
    if not isinstance(target, torch._ops.OpOverload):
        return []
    extern, form, is_scatter, _, lacks = _op_facts(target)
    if is_scatter:
        from torch._inductor.fx_utils import is_node_realized

        facts = [(node, is_node_realized(node), extern, form, lacks, _runs_opaquely(node))]
        base = node.args[0] if node.args else None
        if isinstance(base, Node):
            facts.append((base, is_node_realized(base), False, False, False, False))
        return facts
    opaque = _is_view_op(target) and _runs_opaquely(node)
    return [(node, False, extern, form, lacks, opaque)] if extern or form or lacks or opaque else []


def _view_chain_realized(node: Node) -> list[tuple[Node, bool, bool, bool, bool, bool]]:
    """Whether Inductor realizes each node on the view chains of an auto_functionalized(_v2)
    node's written bases (the planner writes a base that is a view in place only when its
    chain's root is realized: hazard 6 in planner_inductor.cpp)."""
    from torch._inductor.fx_utils import is_node_realized

    bases = read_call(node).bases if node.target is AFV2 else read_v1_call(node).written()
    facts = []
    seen: set[Node] = set()
    for base in bases:
        while isinstance(base, Node) and base not in seen:
            seen.add(base)
            facts.append((base, is_node_realized(base), False, False, False, False))
            target = base.target
            if not (isinstance(target, torch._ops.OpOverload) and _is_view_op(target)) or not base.args:
                break
            base = base.args[0]
    return facts


def _is_view_op(target: torch._ops.OpOverload) -> bool:
    return op_info(target).facts.view != _C.planner.ViewKind.NONE


def _runs_opaquely(node: Node) -> bool:
    """Inductor runs `node` as a library kernel because of its tensors' types (complex,
    sparse, ...): Inductor's own test, `lowering.unsupported_input_tensor` /
    `unsupported_output_tensor`, on the node's operands and results (real or fake values).

    Those tests read the node's target and each tensor's dtype, device and layout (and
    `config.disable_cpp_codegen`), never its sizes: the answer is kept per such key, as
    asking Inductor for every view of every graph was a third of the pass on small graphs."""

    outputs = _tensors(node.meta.get("val"))
    operands = [t for a in node.all_input_nodes for t in _tensors(a.meta.get("val"))]
    from torch._inductor import config

    key = (
        node.target,
        config.disable_cpp_codegen,
        tuple((t.dtype, t.device, t.layout) for t in outputs),
        tuple((t.dtype, t.device, t.layout) for t in operands),
    )
    known = _OPAQUE_BY_TYPES.get(key)
    if known is None:
        known = _OPAQUE_BY_TYPES[key] = _ask_inductor_if_opaque(node, outputs, operands)
    return known


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):  # most nodes: skip the tree walk
        return [value]
    return [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]


# Inductor's answer per (target, cpp codegen off, output and operand types); bounded by
# the ops and tensor types a process compiles.
_OPAQUE_BY_TYPES: dict[tuple, bool] = {}


def _ask_inductor_if_opaque(node: Node, outputs: list[torch.Tensor], operands: list[torch.Tensor]) -> bool:
    from torch._inductor.lowering import unsupported_input_tensor, unsupported_output_tensor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Inductor's "no code generation for complex operators"
        if any(unsupported_output_tensor(t, node) for t in outputs):
            return True
        return any(unsupported_input_tensor(t, node) for t in operands)


NO_INDUCTOR_CANDIDATES = (
    "policy='inductor': no node here is one Inductor lets the pass write (index_put, a scatter, "
    "a collective, _foreach_*, auto_functionalized, a library kernel with an in-place form): "
    "Inductor fuses the rest and reuses buffers itself"
)


def has_inductor_candidates(gm: GraphModule) -> bool:
    """Whether any node could be written in place under the Inductor policy (the planner's
    own test, `_C.planner.inductor_may_write`, on each op; every `_foreach_*` and auto_functionalized)."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if target is AFV1 or target is AFV2:
            return True
        if isinstance(target, torch._ops.OpOverload) and _op_facts(target)[3]:
            return True
    return False


# Keyed by id() (OpOverload hashes in Python); the value holds the target, so its id
# is not reused while cached.
_OP_FACTS: dict[int, tuple[object, tuple[bool, bool, bool, bool, bool]]] = {}


def _op_facts(target: torch._ops.OpOverload) -> tuple[bool, bool, bool, bool, bool]:
    """(extern_kernel, inplace_form, is_scatter, may_write, lacks_inplace_lowering) of an
    operator, once per operator; may_write: the planner's Inductor policy lets it write in
    place at all."""
    hit = _OP_FACTS.get(id(target))
    if hit is None:
        info = op_info(target)
        extern = _extern_in_place(target)
        may_write = info.is_foreach or _C.planner.inductor_may_write(info.facts, extern)
        lacks = may_write and not extern and _lacks_inplace_lowering(target)
        facts = (extern, target in _inductor_inplace_forms(), info.is_scatter, may_write, lacks)
        hit = _OP_FACTS[id(target)] = (target, facts)
    return hit[1]


def inductor_inplace_form(target: object) -> object | None:
    """The in-place op Inductor provides for `target` where ATen has none."""
    return _inductor_inplace_forms().get(target)


@cache
def _inductor_inplace_forms() -> dict:
    from torch._inductor import inductor_prims

    return {torch.ops.aten._unsafe_index_put.default: inductor_prims._unsafe_index_put_}


def _generates_code(target: object) -> bool:
    """Inductor lowers `target` to code it generates (and fuses), or decomposes it."""
    from torch._inductor.decomposition import decompositions
    from torch._inductor.lowering import lowerings

    if target in decompositions:
        return True
    lowering = lowerings.get(target)
    return lowering is not None and not getattr(lowering, "__qualname__", "").startswith("fallback_handler")


def _lacks_inplace_lowering(target: torch._ops.OpOverload) -> bool:
    """Inductor generates `target`'s code but has no lowering of its own for the in-place
    form (`_foreach_maximum.List` -> `_foreach_maximum_.List`): written in place, the op would
    run as a library kernel, a buffer the functional form fuses into its write-back. Asked
    of Inductor's own tables (`lowerings`, `decompositions`), not a hand list."""
    inplace = op_info(target).inplace
    return inplace is not None and _generates_code(target) and not _generates_code(inplace)


def _extern_in_place(target: object) -> bool:
    """Inductor runs `target` as a library kernel (a fallback), and its in-place form too:
    no fusion is lost by writing in place, and the functional form's fresh buffer is saved.
    (Read once per operator, by `_op_facts`.)"""
    from torch._inductor.decomposition import decompositions
    from torch._inductor.lowering import fallbacks, lowerings

    if not isinstance(target, torch._ops.OpOverload) or target not in fallbacks:
        return False
    # Some ops in `fallbacks` are lowered to generated code all the same (digamma is
    # pointwise, cumsum a scan): only a lowering that is the fallback handler itself
    # runs the library kernel.
    lowering = lowerings.get(target)
    if lowering is not None and not getattr(lowering, "__qualname__", "").startswith("fallback_handler"):
        return False
    inplace = op_info(target).inplace
    return inplace is not None and inplace not in lowerings and inplace not in decompositions


def mark_clones_for_inductor(node: Node, call: AFv1Call | AFv2Call, in_place: list[bool]) -> None:
    """`in_place[k]`: the planner's slot k is written in place. v2 lists base indices,
    v1 argument names (written lists stay cloned: they have no slot)."""
    if isinstance(call, AFv1Call):
        written = {name for name, done in zip(call.slot_args, in_place, strict=True) if done}
        node.meta["only_clone_these_tensors"] = [
            name
            for name, arg in call.mutable
            if arg is not None and name not in written and name not in call.not_cloned
        ]
        return
    slot_bases = [j for j, b in enumerate(call.bases) if b is not None]
    written = {j for j, done in zip(slot_bases, in_place, strict=True) if done}
    node.meta["only_clone_these_tensors"] = [j for j in call.cloned if j not in written]


def with_clones_in_kwargs(gm: GraphModule) -> GraphModule:
    """A copy of `gm` in which each auto_functionalized(_v2) node states what it clones in
    its own kwargs (`_only_clone_these_tensors` / `_only_clone_these_bases`) rather than in
    Inductor's meta: the form `fxinplace.check_reinplaced` models."""
    from fxinplace._checker import copy_functional

    copy = copy_functional(gm)
    for node in copy.graph.nodes:
        only = node.meta.get("only_clone_these_tensors")
        if only is None or node.target not in (AFV1, AFV2):
            continue
        key = "_only_clone_these_bases" if node.target is AFV2 else "_only_clone_these_tensors"
        node.kwargs = {**node.kwargs, key: tuple(only)}
    copy.recompile()
    return copy
