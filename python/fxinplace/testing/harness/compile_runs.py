"""One callable compiled one way and run: the compilers the compile-path harnesses compare.

Each compile path is compared with an oracle that differs from it by fxinplace's pass alone:

* ``backend`` path: ``torch.compile(f, backend="fxinplace", options={"check": True,
  "memory_plan": True})`` against ``backend="aot_eager"`` (the same AOTAutograd graphs, run
  as they are: re-inplacing and the memory plan change where values live, not how they are
  computed);
* ``hook`` path: Inductor with ``fxinplace.inductor.installed(check=True)`` against Inductor
  whose re-inplacing slot does nothing (the same kernels otherwise: re-inplacing is the last
  post-grad pass), and, to tell a finding of ours from one of Inductor's own pass, stock
  Inductor.

Inductor runs go through ``inductor_parity.compile_and_run`` with the FX-graph cache off (a
cache hit would skip the slot; the kernel cache stays on, so two runs that differ only by the
pass share compiled kernels) and ``fallback_random`` on (random ops draw from eager's
generator). ``run(compiled)`` is called with the compiled callable; Dynamo is reset around
every compile.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fxinplace.testing.harness.worker_pool import note_stage

__all__ = ["COMPILERS", "NO_OP_SLOT", "ORACLE", "OURS", "run_compiled"]

#: The compiler under test and its oracle, per path.
OURS = {"backend": "fxinplace", "hook": "inductor+fxinplace"}
ORACLE = {"backend": "aot_eager", "hook": "inductor-noop"}
COMPILERS = ("eager", "aot_eager", "fxinplace", "inductor-noop", "inductor+fxinplace", "inductor-stock")


def NO_OP_SLOT(fake_tensor_updater: Any, graph: Any) -> None:  # noqa: N802 - a constant of the module
    """Inductor's re-inplacing slot doing nothing: the graph keeps its functional ops and
    epilogue copies, which Inductor lowers as they are."""
    del fake_tensor_updater, graph


@contextlib.contextmanager
def _inductor_settings() -> Iterator[None]:
    from torch._inductor import config

    with config.patch(fx_graph_cache=False, fallback_random=True, compile_threads=1):
        yield


@contextlib.contextmanager
def _slot(pass_: Callable[..., None]) -> Iterator[None]:
    from torch._inductor.fx_passes import post_grad

    current = post_grad.reinplace_inplaceable_ops
    post_grad.reinplace_inplaceable_ops = pass_
    try:
        yield
    finally:
        post_grad.reinplace_inplaceable_ops = current


def run_compiled(
    compiler: str,
    target: Callable[..., Any],
    run: Callable[[Callable[..., Any]], Any],
    *,
    dynamic: bool = False,
    check: bool = True,
    backend: Any = None,
) -> Any:
    """``run(compiled target)`` with ``compiler`` (one of ``COMPILERS``); ``eager`` runs the
    target itself. ``check`` turns fxinplace's checker on (backend option / hook install);
    ``backend`` replaces the fxinplace backend (a deliberately broken one, for self-checks)."""
    note_stage(compiler)  # a campaign attributes a crash to the compiler that was running
    if compiler == "eager":
        return run(target)
    if compiler in ("aot_eager", "fxinplace"):
        if compiler == "aot_eager":
            kwargs: dict[str, Any] = {"backend": "aot_eager"}
        elif backend is not None:
            kwargs = {"backend": backend}
        else:
            kwargs = {"backend": "fxinplace", "options": {"check": check, "memory_plan": True}}
        torch._dynamo.reset()
        try:
            return run(torch.compile(target, dynamic=dynamic, **kwargs))
        finally:
            torch._dynamo.reset()
    from fxinplace.testing.harness.inductor_parity import compile_and_run

    hook = compiler == "inductor+fxinplace"
    slot = _slot(NO_OP_SLOT) if compiler == "inductor-noop" else contextlib.nullcontext()
    if compiler not in ("inductor-noop", "inductor+fxinplace", "inductor-stock"):
        raise ValueError(f"unknown compiler {compiler!r}; expected one of {COMPILERS}")
    with _inductor_settings(), slot:
        return compile_and_run(target, run, hook=hook, dynamic=dynamic, fresh=False, check=check).steps
