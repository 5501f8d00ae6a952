"""fxinplace as a ``torch.compile`` backend: AOTAutograd, then ``fxinplace.reinplace``, then run.

    torch.compile(model, backend="fxinplace")     # found by name after `pip install fxinplace`
    torch.compile(model, backend="fxinplace", options={"check": True})

AOTAutograd traces each graph Dynamo captures into functional ATen graphs (forward,
backward, or one inference graph), with the mutations of inputs (optimizer state,
BatchNorm running stats, KV caches) kept in the graph as trailing ``copy_(input, new)``
write-backs. Each graph is re-inplaced with ``policy="compile"`` (the stock pass's
rewrites plus computing a written-back input's new value in its own memory, so that
``cache.index_copy_(...)`` stays a one-row write instead of a copy of the cache) and then
handed to the inner compiler: by default it runs as it is, the way ``aot_eager`` runs.

Backend authors plug their own compiler in after the pass::

    backend = fxinplace.compile.make_backend(my_compiler)   # my_compiler(gm, example_inputs)
    torch.compile(model, backend=backend)

Decompositions: none beyond what AOTAutograd always applies (CompositeImplicitAutograd
ops), as ``aot_eager``; the graphs keep ATen ops whose in-place variants exist. Pass
``decompositions=`` to ``make_backend`` (or in ``options``) for others.

Options (``options=`` of ``torch.compile``, or keyword arguments of ``make_backend``):

- ``check`` (bool): prove every rewritten graph against its functional original with
  ``fxinplace.check_reinplaced`` (slower; raises ``ReinplaceCheckError``).
- ``explain`` (bool): log every decision at INFO on the ``fxinplace.compile`` logger.
  ``TORCH_LOGS=fxinplace`` (alone or in a comma-separated list) turns it on too.
- ``decompositions`` (dict): an AOTAutograd decomposition table.
- ``policy`` (str): ``"compile"`` (default), ``"stock"`` (only what the stock pass does) or
  ``"none"`` (no pass: AOTAutograd and the inner compiler alone, for comparisons).
- ``memory_plan`` (bool, default False): after re-inplacing, an op that still allocates
  writes its result into a buffer that is dead by then, through its ``out=`` kernel, where
  that does not raise the modelled peak (``policy="compile"`` only; see
  ``fxinplace.reinplace_report``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.fx import GraphModule

from fxinplace._reinplace import POLICIES, reinplace_report

__all__ = ["InnerCompiler", "backend", "make_backend"]

log = logging.getLogger(__name__)

#: ``inner(gm, example_inputs)`` returns what AOTAutograd's ``fw_compiler`` returns: a
#: callable taking the flat inputs (boxed: one list argument, marked ``_boxed_call``).
InnerCompiler = Callable[[GraphModule, list[Any]], Callable[..., Any]]

_OPTIONS = ("check", "explain", "decompositions", "policy", "memory_plan")


def _run_as_is(gm: GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Run the graph's own code, boxed: it takes the list of inputs and empties it as it
    starts, so each input is freed once the graph is done with it (as aot_eager and
    Inductor free them), rather than when the call returns."""
    boxed_codegen = getattr(torch.fx.graph, "_BoxedCodeGen", None)
    if boxed_codegen is None:  # not in this torch: the unboxed code, inputs held to the end
        from functorch.compile import make_boxed_func

        return make_boxed_func(gm.forward)
    gm.graph.set_codegen(boxed_codegen())
    gm.recompile()

    def run(args: list[Any]) -> Any:
        return gm.forward(args)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


def _donated_inputs() -> list[int]:
    """The backward graph's donated buffers: saved activations whose storage no forward
    input, user output or other backward input shares, which AOTAutograd lets the backward
    free (and torch raises if a later backward asks to retain the graph). Read as Inductor
    reads them (`torch._inductor.utils.get_donated_idxs`): from the tracing context."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context is not None else None
    return list(getattr(metadata, "bw_donated_idxs", None) or [])


def _internal_outputs(gm: GraphModule, graph_kind: str) -> list[int]:
    """Positions of the graph's outputs that only AOTAutograd's runtime sees, never the
    caller's code: a forward graph's saved activations (AOTAutograd detaches the ones that
    are views before saving them), and every output of a backward graph (gradients, which
    autograd takes whatever their base). An inference graph's outputs are all the user's."""
    output = next(iter(reversed(gm.graph.nodes)))
    returned = output.args[0] if output.args else ()
    count = len(returned) if isinstance(returned, (tuple, list)) else 1
    if graph_kind == "backward":
        return list(range(count))
    if graph_kind != "forward":
        return []
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context is not None else None
    try:
        saved = metadata.tensors_saved_for_backwards_slice  # type: ignore[union-attr]
    except Exception:  # no metadata, or not filled in: every output counts as the user's
        return []
    return [k for k in range(count)[saved]]


def _explain_requested() -> bool:
    return "fxinplace" in {s.strip().lstrip("+") for s in os.environ.get("TORCH_LOGS", "").split(",")}


def _reinplacing(
    inner: InnerCompiler, graph_kind: str, *, check: bool, explain: bool, policy: str, memory_plan: bool
) -> InnerCompiler:
    def compile_graph(gm: GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        if policy == "none":
            return inner(gm, example_inputs)
        # _run_as_is regenerates the code (boxed) anyway: the pass need not recompile
        # first. Another inner compiler gets a recompiled graph module.
        report = reinplace_report(
            gm,
            *example_inputs,
            check=check,
            policy=policy,
            recompile=inner is not _run_as_is,
            memory_plan=memory_plan,
            donated_inputs=_donated_inputs() if graph_kind == "backward" else (),
            shared_inputs_disjoint=True,  # AOTAutograd's graphs
            internal_outputs=_internal_outputs(gm, graph_kind) if memory_plan else (),
        )
        if explain or _explain_requested() or log.isEnabledFor(logging.DEBUG):
            log.info(
                "fxinplace: %s graph, %d ops re-inplaced, %d scatters removed, "
                "%d buffers reused (%d bytes)\n%s",
                graph_kind,
                report.num_reinplaced,
                report.num_scatters_removed,
                report.num_buffers_reused,
                report.bytes_reused,
                report.explain(),
            )
        return inner(gm, example_inputs)

    compile_graph.__name__ = f"fxinplace_{graph_kind}_compiler"
    return compile_graph


def make_backend(
    inner_compiler: InnerCompiler | None = None,
    *,
    check: bool = False,
    explain: bool = False,
    decompositions: Mapping[Any, Callable[..., Any]] | None = None,
    policy: str = "compile",
    memory_plan: bool = False,
) -> Callable[..., Any]:
    """A ``torch.compile`` backend: AOTAutograd, ``fxinplace.reinplace`` on every graph
    (forward, backward, inference), then ``inner_compiler(gm, example_inputs)`` (default: run
    the re-inplaced graph as it is). Options as in this module's docstring."""
    if policy not in (*POLICIES, "none"):
        raise ValueError(
            f"fxinplace.compile: unknown policy {policy!r}; expected one of {(*POLICIES, 'none')}"
        )
    from functorch.compile import min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd

    inner = inner_compiler or _run_as_is
    if memory_plan and policy != "compile":
        raise ValueError(f"fxinplace.compile: memory_plan=True needs policy='compile' (got {policy!r})")
    knobs = {"check": check, "explain": explain, "policy": policy, "memory_plan": memory_plan}
    kwargs: dict[str, Any] = {
        "fw_compiler": _reinplacing(inner, "forward", **knobs),
        "bw_compiler": _reinplacing(inner, "backward", **knobs),
        "inference_compiler": _reinplacing(inner, "inference", **knobs),
        "partition_fn": min_cut_rematerialization_partition,
        # Input mutations stay in the inference graph as copy_ write-backs (as in
        # aot_eager), which policy="compile" turns into in-place updates.
        "keep_inference_input_mutations": True,
    }
    if decompositions is not None:
        kwargs["decompositions"] = decompositions
    return aot_autograd(**kwargs)


def backend(
    gm: torch.fx.GraphModule, example_inputs: list[Any], options: Mapping[str, Any] | None = None
) -> Callable[..., Any]:
    """The backend registered as ``"fxinplace"`` (entry point ``torch_dynamo_backends``)."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"fxinplace.compile: unknown option(s) {unknown}; expected some of {list(_OPTIONS)}")
    return make_backend(**options)(gm, example_inputs)
