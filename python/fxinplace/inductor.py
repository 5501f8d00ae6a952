"""fxinplace inside Inductor: the native pass in Inductor's re-inplacing slot.

    import fxinplace.inductor
    fxinplace.inductor.install()          # every later Inductor compile uses it
    torch.compile(model)(x)
    fxinplace.inductor.uninstall()

    with fxinplace.inductor.installed():  # or for a block (compiles happen at the first call)
        torch.compile(model)(x)

Inductor re-inplaces last among its post-grad passes (`reinplace_inplaceable_ops`, a module
global of `torch._inductor.fx_passes.post_grad`); `install` puts `reinplace_for_inductor`
there, which runs `fxinplace.reinplace(..., policy="inductor")` on the graph: the rewrites
Inductor lowers as writes and profits from (index_put, scatters worth it, `_foreach_*` and
auto_functionalized bases written back into inputs, collectives), decided by the native
planner with the soundness checks Inductor's pass lacks, and never a pointwise `op_` that
Inductor would fuse (see `PlanOptions::inductor` in csrc/core/reinplace_planner.h).

Caching: Inductor's FX-graph cache key does not see a module global, so `install` also adds
`CacheKey`, a pass that does nothing but carry fxinplace's identity (version and native
library) into the key through `config.post_grad_custom_post_pass` (a `CustomGraphPass`
with a `uuid`): graphs compiled with and without the hook never share a cache entry, and
caching stays on.

Graphs with nodes the planner does not model (`triton_kernel_wrapper_functional`,
`with_effects`), or that the pass rejects as unsupported input (`ReinplaceInputError`), get
Inductor's own pass instead: a safe skip, logged on the `fxinplace.inductor` logger.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import torch
from torch.fx import Graph, GraphModule

from fxinplace._reinplace import reinplace_report
from fxinplace._reinplace.errors import ReinplaceInputError
from fxinplace._version import __version__

__all__ = ["CacheKey", "install", "installed", "is_installed", "reinplace_for_inductor", "uninstall"]

log = logging.getLogger(__name__)

_state: dict[str, Any] = {}


def _post_grad() -> Any:
    from torch._inductor.fx_passes import post_grad

    return post_grad


def _stock_pass() -> Any:
    from torch._inductor.fx_passes.reinplace import reinplace_inplaceable_ops

    return reinplace_inplaceable_ops


def _unmodelled_nodes(graph: Graph) -> list[str]:
    hops = torch.ops.higher_order
    unmodelled = [getattr(hops, name, None) for name in ("triton_kernel_wrapper_functional", "with_effects")]
    return [n.name for n in graph.nodes if n.op == "call_function" and n.target in unmodelled]


def reinplace_for_inductor(fake_tensor_updater: Any, graph: Graph) -> None:
    """Inductor's re-inplacing slot: `post_grad.reinplace_inplaceable_ops(updater, graph)`."""
    gm = graph.owning_module
    unmodelled = _unmodelled_nodes(graph)
    if unmodelled or not isinstance(gm, GraphModule):
        log.info("fxinplace.inductor: Inductor's own pass runs (nodes not modelled: %s)", unmodelled)
        _stock_pass()(fake_tensor_updater, graph)
        return
    example_inputs = [p.meta.get("val") for p in graph.find_nodes(op="placeholder")]
    try:
        report = reinplace_report(
            gm,
            *example_inputs,
            policy="inductor",
            recompile=False,
            check=_state.get("check", False),
            shared_inputs_disjoint=True,  # AOTAutograd's graphs
        )
    except ReinplaceInputError as e:
        log.info("fxinplace.inductor: Inductor's own pass runs (%s)", e)
        _stock_pass()(fake_tensor_updater, graph)
        return
    if _state.get("explain") or log.isEnabledFor(logging.DEBUG):
        log.info("fxinplace.inductor: %d ops re-inplaced\n%s", report.num_reinplaced, report.explain())


class CacheKey:
    """Carries fxinplace's identity into Inductor's FX-graph cache key; does nothing."""

    def __call__(self, graph: Graph) -> None:
        return None

    def uuid(self) -> Any:
        return _identity()


def _identity() -> str:
    if "identity" not in _state:
        from torch._inductor.custom_graph_pass import get_hash_for_files

        from fxinplace import _C

        files = (_C.__file__, __file__, *_python_sources())
        _state["identity"] = f"fxinplace {__version__} " + get_hash_for_files(files).hex()
    return _state["identity"]


def _python_sources() -> tuple[str, ...]:
    import pathlib

    here = pathlib.Path(__file__).parent
    # The private modules and the private packages' modules (_reinplace/, ...).
    return tuple(sorted(str(p) for p in (*here.glob("_*.py"), *here.glob("_*/**/*.py"))))


def _cache_key_pass() -> Any:
    from torch._inductor.custom_graph_pass import CustomGraphPass

    if "key_pass" not in _state:
        _state["key_pass"] = type("FxinplaceCacheKey", (CacheKey, CustomGraphPass), {})()
    return _state["key_pass"]


def _inductor_takes_pass_lists() -> bool:
    """Whether `config.post_grad_custom_post_pass` may be a list (newer Inductors); older
    ones call it as one pass."""
    from torch._inductor import custom_graph_pass

    return hasattr(custom_graph_pass, "get_custom_graph_passes")


def _chained_key_pass(theirs: Any) -> Any:
    """The user's custom pass, then our key, as one pass for an Inductor that takes one. Its
    uuid is both (None, no caching, where theirs has none: as Inductor treats theirs alone)."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class Chained(CustomGraphPass):
        def __call__(self, graph: Graph) -> None:
            theirs(graph)

        def uuid(self) -> Any:
            their_id = theirs.uuid() if hasattr(theirs, "uuid") else None
            return None if their_id is None else (their_id, _identity())

    chained = Chained()
    chained.theirs = theirs  # type: ignore[attr-defined]
    return chained


def is_installed() -> bool:
    return _state.get("installed", False)


def install(*, check: bool = False, explain: bool = False) -> None:
    """Put the native pass in Inductor's re-inplacing slot (idempotent).

    check=True proves every rewritten graph against its functional original (slower;
    raises ReinplaceCheckError). explain=True logs every decision at INFO on the
    `fxinplace.inductor` logger."""
    from torch._inductor import config

    _state.update(check=check, explain=explain)
    if is_installed():
        return
    post_grad = _post_grad()
    _state["replaced"] = post_grad.reinplace_inplaceable_ops
    post_grad.reinplace_inplaceable_ops = reinplace_for_inductor
    _state["installed"] = True
    key = _cache_key_pass()
    current = config.post_grad_custom_post_pass
    if _inductor_takes_pass_lists():
        passes = list(current) if isinstance(current, (list, tuple)) else [] if current is None else [current]
        chosen: Any = [*passes, key]
    else:  # an Inductor that runs one custom pass: ours, or the user's with our key chained on
        chosen = key if current is None else _chained_key_pass(current)
    _state["config_before"] = current
    _state["config_set"] = config.post_grad_custom_post_pass = chosen


def uninstall() -> None:
    """Give Inductor its own pass back, and the custom-pass config without our key."""
    from torch._inductor import config

    if not is_installed():
        return
    _state["installed"] = False
    _post_grad().reinplace_inplaceable_ops = _state.pop("replaced", None) or _stock_pass()
    key = _state.get("key_pass")
    current = config.post_grad_custom_post_pass
    if current is _state.pop("config_set", None):  # untouched since install: as it was
        config.post_grad_custom_post_pass = _state.pop("config_before", None)
    elif isinstance(current, list):  # changed since: only our key goes
        config.post_grad_custom_post_pass = [p for p in current if p is not key]


@contextlib.contextmanager
def installed(*, check: bool = False, explain: bool = False) -> Iterator[None]:
    """`install` for the duration of a block (torch.compile compiles at the first call)."""
    was = is_installed()
    install(check=check, explain=explain)
    try:
        yield
    finally:
        if not was:
            uninstall()
