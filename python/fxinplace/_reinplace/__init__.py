"""`fxinplace.reinplace`: a native drop-in for torch.fx.passes.reinplace.reinplace.

Validate the graph and sample args (validate), read it into the planner's picture (frontend:
each node's values, then the builder), let the C++ planner decide everything, apply its plan
to the fx.Graph (apply)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence
from typing import Any

from torch.fx import GraphModule, Node

from fxinplace import _checker
from fxinplace._reinplace.apply import apply_plan
from fxinplace._reinplace.auto_functionalized.v1 import AFv1Call
from fxinplace._reinplace.frontend import read
from fxinplace._reinplace.inductor_policy import (
    NO_INDUCTOR_CANDIDATES,
    has_inductor_candidates,
    with_clones_in_kwargs,
)
from fxinplace._reinplace.memory import apply_memory_plan
from fxinplace._reinplace.report import ReinplaceReport
from fxinplace._reinplace.validate import validate as validate_graph

#: What the pass may rewrite (see `reinplace`).
POLICIES = ("stock", "compile", "inductor")


def _plan_options(policy: str, memory_plan: bool = False) -> dict[str, bool]:
    if policy not in POLICIES:
        raise ValueError(f"fxinplace.reinplace: unknown policy {policy!r}; expected one of {POLICIES}")
    if memory_plan and policy != "compile":
        raise ValueError(
            f"fxinplace.reinplace: memory_plan=True needs policy='compile' (got {policy!r}): the "
            "memory plan is for graphs run as they are; Inductor plans its own buffers"
        )
    return {
        "plan_memory": memory_plan,
        "reuse_written_back_inputs": policy in ("compile", "inductor"),
        "dead_operand_destinations": policy == "compile",
        "inductor": policy == "inductor",
        "outputs_taken_by_torch_compile": policy in ("compile", "inductor"),
    }


def reinplace_report(
    gm: GraphModule,
    *sample_args: Any,
    check: bool = False,
    policy: str = "stock",
    recompile: bool = True,
    memory_plan: bool = False,
    donated_inputs: Sequence[int] = (),
    shared_inputs_disjoint: bool = False,
    internal_outputs: Sequence[int] = (),
) -> ReinplaceReport:
    """Re-inplace `gm` like `reinplace`, and return every decision with its reason.

    check=True: afterwards, prove the result against a copy of the functional
    graph with `fxinplace.check_reinplaced` (raises ReinplaceCheckError).
    recompile=False leaves `gm.recompile()` to the caller: for a compiler that
    regenerates the code anyway (fxinplace.compile's default runner does).
    memory_plan=True (policy="compile" only): afterwards, an op that still allocates writes
    its result into a buffer that is dead by then, through its out= kernel
    (`y = mm.out(a, b, out=d)`), where that does not raise the modelled peak.
    donated_inputs: positions of sample args that are donated buffers (AOTAutograd's
    `bw_donated_idxs` for a backward graph: saved activations no one else holds, freed by
    the graph): with memory_plan=True their memory is reused too once they are dead.
    shared_inputs_disjoint=True: `gm` comes from AOTAutograd, which passes inputs that share a
    storage, one of them mutated, as separate inputs only when no two overlap (overlapping
    ones become one synthetic base; a guard holds it under dynamic shapes). Such inputs are
    then taken as disjoint even where symbolic storage offsets cannot show it (the compile
    backend and the Inductor hook set it; never for a graph of other origin).
    internal_outputs: positions in the graph's output tuple that only the compiled program
    sees (AOTAutograd's saved activations of a forward graph, a backward's gradients): with
    memory_plan=True a result returned only there may be a view of a dead buffer of another
    layout (`as_strided(d, ...)`); one the caller's code sees never is.
    """
    options = _plan_options(policy, memory_plan)
    options["shared_inputs_disjoint"] = shared_inputs_disjoint
    functional = _checker.copy_functional(gm) if check else None
    report = run_reinplace(
        gm,
        sample_args,
        metadata="auto",
        options=options,
        recompile=recompile or check,
        donated_inputs=tuple(donated_inputs) if memory_plan else (),
        internal_outputs=tuple(internal_outputs) if memory_plan else (),
    )
    if functional is not None:
        _checker.check_reinplaced(
            functional,
            with_clones_in_kwargs(gm) if options["inductor"] else gm,
            *sample_args,
            inputs_written_back_may_be_written=options["reuse_written_back_inputs"],
            compiler="inductor" if options["inductor"] else None,
            donated_inputs=tuple(donated_inputs) if memory_plan else (),
        )
    return report


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    # The pass allocates many small tuples while the graph holds tens of
    # thousands of tracked objects: each cyclic-GC pass would rescan them all
    # (measured: a third of the pass on a 10k-node graph). Nothing here makes
    # cycles that outlive the pass, so collection can wait until it ends.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run_reinplace(
    gm: GraphModule,
    sample_args: tuple,
    *,
    metadata: str,
    options: dict[str, bool] | None = None,
    recompile: bool = True,
    donated_inputs: tuple[int, ...] = (),
    internal_outputs: tuple[int, ...] = (),
) -> ReinplaceReport:
    """The pass itself, without the policy check or the checker of `reinplace_report`:
    `options` are the planner's (see `_plan_options`); metadata="fake" forces the FakeTensor
    replay (see `metadata.propagate`)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    # A compiler calls its passes inside its fake mode (AOTAutograd does): the
    # pass's own meta tensors would each go through FakeTensor dispatch, several
    # times slower, for nothing. Paths that need a fake mode enter their own.
    with _gc_paused(), unset_fake_temporarily():
        return _run_pass(
            gm,
            sample_args,
            metadata=metadata,
            options=options or {},
            recompile=recompile,
            donated_inputs=donated_inputs,
            internal_outputs=internal_outputs,
        )


def _run_pass(
    gm: GraphModule,
    sample_args: tuple,
    *,
    metadata: str,
    options: dict[str, bool],
    recompile: bool = True,
    donated_inputs: tuple[int, ...] = (),
    internal_outputs: tuple[int, ...] = (),
) -> ReinplaceReport:
    validate_graph(gm, sample_args)
    if options.get("inductor") and not has_inductor_candidates(gm):
        # Nothing the Inductor policy lets the planner write (model graphs often have
        # none): no values to find, nothing to plan or change.
        return ReinplaceReport(gm, metadata_path="none", walks=0, nothing_to_plan=NO_INDUCTOR_CANDIDATES)
    for_inductor = options.get("inductor", False)
    reading, path = read(
        gm,
        sample_args,
        metadata=metadata,
        with_destinations=options.get("dead_operand_destinations", False),
        for_inductor=for_inductor,
        with_memory_facts=options.get("plan_memory", False),
    )
    nodes = reading.nodes
    if donated_inputs:
        placeholders = [i for i, n in enumerate(nodes) if n.op == "placeholder"]
        for k in donated_inputs:
            if not 0 <= k < len(placeholders):
                raise ValueError(f"fxinplace.reinplace: donated input {k} is not an input of the graph")
            reading.builder.donated_input(placeholders[k])
    if internal_outputs:
        _mark_internal_outputs(reading.builder, nodes, internal_outputs)
    plan = reading.builder.plan(**options)
    base_names = {
        i: [dict(call.mutable)[name].name for name in call.slot_args]
        if isinstance(call, AFv1Call)
        else [b.name for b in call.bases if b is not None]
        for i, call in reading.afv2_calls.items()
    }
    report = ReinplaceReport(
        gm,
        metadata_path=path,
        walks=plan.walks,
        _plan=plan,
        _names=[n.name for n in nodes],
        _base_names=base_names,
    )
    apply_plan(gm, nodes, plan, reading.afv2_calls, reading.destinations, for_inductor=for_inductor)
    if options.get("plan_memory"):
        apply_memory_plan(nodes, plan, reading.memory)
    if recompile:
        gm.recompile()
    return report


def _mark_internal_outputs(builder: Any, nodes: list, positions: tuple[int, ...]) -> None:
    """Tell the planner which returned nodes only the compiled program sees: those at
    `positions` of the output tuple and at no other position."""
    output = nodes[-1]
    returned = output.args[0] if output.op == "output" and output.args else ()
    if not isinstance(returned, (tuple, list)):
        returned = (returned,)
    for k in positions:
        if not 0 <= k < len(returned):
            raise ValueError(f"fxinplace.reinplace: internal output {k} is not an output of the graph")
    internal = set(positions)
    seen_by_caller = {id(v) for k, v in enumerate(returned) if k not in internal}
    index = {id(n): i for i, n in enumerate(nodes)}
    for k in sorted(internal):
        value = returned[k]
        if isinstance(value, Node) and id(value) not in seen_by_caller:
            builder.internal_output(index[id(value)])


def reinplace(
    gm: GraphModule, *sample_args: Any, check: bool = False, policy: str = "stock", memory_plan: bool = False
) -> GraphModule:
    """Turn out-of-place ops whose `self` is dead afterwards into their in-place overloads.

    Same contract as torch.fx.passes.reinplace.reinplace: mutates `gm`, recompiles it
    and returns it. Sample args give the inputs' shapes and aliasing. check=True
    verifies the result independently (see `reinplace_report`); for tests.

    policy="stock" (the default) rewrites what the stock pass rewrites, where that is
    sound. policy="compile" is for graphs a compiler runs as they are (AOTAutograd's,
    see `fxinplace.compile`): besides, an op whose `self` is a graph input that the
    graph ends by overwriting (`copy_(x, r)`, AOTAutograd's write-back of a mutated
    input) computes `r` in `x`'s own memory and the `copy_` goes, when nothing reads
    `x` in between and no output comes to alias an input.
    policy="inductor" is for Inductor's post-grad graphs (see `fxinplace.inductor`): only
    what Inductor lowers as a write and profits from (index_put, scatters worth it,
    `_foreach_*` and auto_functionalized into written-back inputs, collectives), never
    an op Inductor fuses.
    memory_plan=True (policy="compile" only): then reuse dead buffers through out= kernels
    (see `reinplace_report`).
    """
    return reinplace_report(
        gm, *sample_args, check=check, policy=policy, memory_plan=memory_plan
    ).graph_module
