"""Whether a symbolic trace still claims to be valid at another size.

``make_fx(..., tracing_mode="symbolic")`` records the shape guards its trace relied on in
``gm.shape_env``. Some ops pin a size: ``x.unbind(1)`` over a symbolic dimension returns one
tensor per element, so the trace guards ``Eq(s0, 7)`` and the graph is valid at 7 only. Run at
another size, such a graph may raise or compute something else, for ``torch.func.functionalize``
and ``fxinplace.functionalize`` alike; that is the trace's contract, not a wrong result. A graph
whose guards *hold* at the second size must compute eager's values there, and the harness holds
it to that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.fx
from torch.utils._pytree import tree_leaves

__all__ = ["guards_hold"]


def guards_hold(gm: torch.fx.GraphModule, args: Sequence[Any]) -> bool | None:
    """True when every shape guard of ``gm``'s symbolic trace holds for ``args``, False when one
    fails (the trace specialized, or sizes it found equal differ now), None when it cannot
    tell (no shape environment, or a guard on a symbol whose sources ``args`` lack)."""
    env = getattr(gm, "shape_env", None)
    if env is None:
        return None
    # make_fx names the source of its k-th tensor input "input{k}" (torch.fx.experimental.
    # proxy_tensor, _convert_args_to_fake); each symbol's source resolves against the new args.
    tensors = [leaf for leaf in tree_leaves(list(args)) if isinstance(leaf, torch.Tensor)]
    scope = {f"input{k}": t for k, t in enumerate(tensors)}
    values = {}
    cache: dict[Any, Any] = {}
    for symbol, sources in env.var_to_sources.items():
        # A symbol stands for every size the trace found equal (duck sizing); at the new
        # args they must still be equal, or the trace assumed what no longer holds.
        seen = {_resolve(source, scope, cache) for source in sources} - {None}
        if len(seen) > 1:
            return False
        if seen:
            values[symbol] = seen.pop()
    verdict: bool | None = True
    for guard in env.guards:
        try:
            held = guard.expr.xreplace(values)
        except Exception:  # noqa: BLE001
            held = guard.expr
        if held.free_symbols:
            verdict = None  # a guard on a symbol these args do not bind
            continue
        try:
            truth = bool(held)
        except TypeError:  # sympy cannot decide it (an undecidable relational): no say
            verdict = None
            continue
        if not truth:
            return False
    return verdict


def _resolve(source: Any, scope: dict[str, torch.Tensor], cache: dict[Any, Any]) -> int | None:
    try:
        value = source.get_value({}, dict(scope), cache)
    except Exception:  # noqa: BLE001 - a source these args lack (no ._base): no say
        return None
    return value if isinstance(value, int) else None
