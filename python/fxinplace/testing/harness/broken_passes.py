"""Deliberately unsound passes: the harness must flag them (a generator self-check).

"When a random run finds nothing for a long time, suspect the generator": these passes
make mistakes of the kind a real planner or functionalization bug makes, so a run with one
of them in place of ``fxinplace.reinplace`` (or ``fxinplace.functionalize``) must report
wrong results.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

import fxinplace

__all__ = [
    "broken_compile_backend",
    "functionalize_baking_the_trace_size",
    "functionalize_ignoring_input_aliasing",
    "inplace_first_candidate",
]


def _inplace_sibling(target: object) -> torch._ops.OpOverload | None:
    if not isinstance(target, torch._ops.OpOverload):
        return None
    schema = target._schema
    if schema.is_mutable or not schema.name.startswith("aten::"):
        return None
    packet = getattr(torch.ops.aten, schema.name.removeprefix("aten::") + "_", None)
    return getattr(packet, target._overloadname, None) if packet is not None else None


def inplace_first_candidate(gm: torch.fx.GraphModule, *sample_args: Any) -> torch.fx.GraphModule:
    """``fxinplace.reinplace``, then the first remaining out-of-place op with an in-place
    sibling (``add`` -> ``add_``) is made in-place without any check: wrong whenever its
    ``self`` is a graph input or is read afterwards."""
    fxinplace.reinplace(gm, *sample_args)
    return _break_first_candidate(gm)


def functionalize_ignoring_input_aliasing(fn: Any, remove: str = "mutations") -> Any:
    """``fxinplace.functionalize`` that treats inputs sharing memory with an earlier input as
    separate tensors (it sees a clone of each): a write through one is lost to the other and
    to the caller -- what a functionalization blind to aliased inputs gets wrong."""

    def separated(*args: Any) -> Any:
        seen: set[int] = set()
        own = []
        for a in args:
            if isinstance(a, torch.Tensor):
                storage = a.untyped_storage()._cdata
                own.append(a.clone() if storage in seen else a)
                seen.add(storage)
            else:
                own.append(a)
        return fn(*own)

    return fxinplace.functionalize(separated, remove=remove)


def functionalize_baking_the_trace_size(fn: Any, remove: str = "mutations") -> Any:
    """``fxinplace.functionalize`` whose outputs keep, along their first dimension, only as many
    elements as the trace size had, with no shape guard saying so: what a functionalization
    that reads a symbolic size's hint where it should keep the symbol gets wrong. Its symbolic
    traces are right at the trace size and wrong at every larger one."""
    from torch.fx.experimental.symbolic_shapes import optimization_hint

    def baked(t: Any) -> Any:
        if isinstance(t, torch.Tensor) and t.dim() > 0 and isinstance(t.shape[0], torch.SymInt):
            # as_strided checks no bounds, so the trace records no guard on the size.
            size = (optimization_hint(t.shape[0]), *t.shape[1:])
            return t.as_strided(size, t.stride(), t.storage_offset())
        return t

    functional = fxinplace.functionalize(fn, remove=remove)

    def run(*args: Any) -> Any:
        return torch.utils._pytree.tree_map(baked, functional(*args))

    return run


def broken_compile_backend() -> Any:
    """A ``torch.compile`` backend: ``fxinplace.compile.make_backend`` (AOTAutograd, then the
    pass with ``policy="compile"``) whose inner compiler then makes the first remaining
    candidate in-place unchecked, as ``inplace_first_candidate`` does."""
    from functorch.compile import make_boxed_func

    import fxinplace.compile

    def inner(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        return make_boxed_func(_break_first_candidate(gm).forward)

    return fxinplace.compile.make_backend(inner)


def _break_first_candidate(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    for node in gm.graph.nodes:
        if node.op != "call_function" or not node.args or not isinstance(node.args[0], torch.fx.Node):
            continue
        sibling = _inplace_sibling(node.target)
        if sibling is not None:
            node.target = sibling
            break
    gm.recompile()
    return gm
