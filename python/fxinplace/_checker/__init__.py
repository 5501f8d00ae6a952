"""`fxinplace.check_reinplaced`: an independent check of a re-inplaced graph.

Written apart from the pass: it shares none of the planner's alias, geometry
or overlap code, nor its metadata (`_reinplace.metadata`, `_reinplace.records`). Both graphs
are run for real on copies of the sample args (same random seed), and each
node's tensors are recorded as (storage, sizes, strides, offset, itemsize) as
they are when the node runs. From that, every node becomes a list of what it
reads and what it writes, and the simulation in csrc/checker/rewrite_checker.cpp
proves the rewritten graph reads, element by element, the values the
functional graph defines (see rewrite_checker.h for the rules it checks).

What a node does to memory, decided here from the op alone:

* a view (its result shares storage with an operand, found in the real run)
  writes nothing;
* ops that only move values (clone, copy, _to_copy to the same dtype, the
  four `*_scatter` ops, `*_copy` variants of views) copy their operands'
  tags; every other op fills its fresh results with the functional node's
  own tags. An in-place op `foo_` does what the functional `foo` it stands
  for does, into its `self`; a `_foreach_foo_(xs, ...)` puts what
  `_foreach_foo` computes as its result k into xs[k] (ATen's in-place rule
  per list element, and no element's operand touching another's xs[j]);
* auto_functionalized_v2 clones the bases it is told to clone (as torch's
  `clone_preserve_strides`: the storage up to the base's last element), reads
  its arguments regenerated on them (torch's own view decoding), then the op
  writes every mutated argument and its outputs with fresh tags. Its direct
  call (the pass's rewrite when no base is cloned) is matched to the
  functional node calling the same op, in order; auto_functionalized (v1)
  likewise, cloning the written arguments themselves;
* functionalization's write-backs (`copy_`/`resize_`/`as_strided_` into a
  placeholder) write the input.

Non-tensor arguments (sizes, dims, scalars) of a rewritten node must equal
those of the functional node of the same name, since tags do not see them.

Outputs must also have the functional graph's layout (strides, storage offset).
Under `compiler="inductor"` each rewritten node also says how Inductor runs it
(`inductor.inductor_code`: extern, pointwise, any index), and the
simulation proves Inductor's contract (csrc/checker/inductor_contract.h).
Verdicts are `_C.checker.CheckReason`s (csrc/checker/check_reasons.h).

Costs: two real runs of the graph, and O(elements read and written) for the
simulation. For tests; not meant for production-sized graphs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch.fx import GraphModule

from fxinplace import _C
from fxinplace._checker.inputs import _Inputs
from fxinplace._checker.recorder import _Recorder
from fxinplace._checker.refs import _CANNOT_CHECK, _OK, _REASON, _CannotCheck, _FunctionalRaised

#: What `check_reinplaced(compiler=...)` also proves the rewrite sound for.
COMPILERS = (None, "inductor")


class ReinplaceCheckError(AssertionError):
    """`check_reinplaced` found the rewritten graph wrong, or could not check it.

    `node` is the rewritten graph's node at fault (None: the graph as a whole,
    e.g. an input's final contents), `operand` the operand concerned (or None),
    `reason` a stable name from the checker's table of reasons
    (`fxinplace._C.checker.CheckReason`, csrc/checker/check_reasons.h: "wrong_value",
    "input_written", "operand_overlaps_self", "output_layout", ...,
    "fused_read_hazard", "raised"; "cannot_check" when the checker could not
    model the graphs, "functional_raised" (FunctionalGraphRaisedError) when the
    functional graph raises on the sample args; `cannot_check` is then True);
    `reason_text` says what it means.
    """

    def __init__(
        self,
        message: str,
        *,
        node: str | None = None,
        operand: str | None = None,
        reason: str = "",
        cannot_check: bool = False,
    ) -> None:
        super().__init__(message)
        self.node = node
        self.operand = operand
        self.reason = reason
        self.cannot_check = cannot_check

    @property
    def reason_text(self) -> str:
        """The reason in words (the checker's table)."""
        found = getattr(_REASON, self.reason, None)
        return found.text if found is not None else ""


class FunctionalGraphRaisedError(ReinplaceCheckError, RuntimeError):
    """The functional graph itself raises when run on the sample args, so it
    defines no values to check the rewrite against. Not a verdict on the
    rewrite: the graph is broken for these args (make_fx, for one, keeps an op
    that raised inside a try/except of the traced program). A RuntimeError as
    well as a ReinplaceCheckError (with `cannot_check` True, `reason`
    "functional_raised"); `node` names the functional graph's node that raised.
    """


def check_reinplaced(
    functional_gm: GraphModule,
    reinplaced_gm: GraphModule,
    *sample_args: Any,
    inputs_written_back_may_be_written: bool = False,
    compiler: str | None = None,
    donated_inputs: Sequence[int] = (),
) -> None:
    """Raise ReinplaceCheckError unless `reinplaced_gm` provably computes what
    `functional_gm` computes on `sample_args` (outputs, output aliasing, inputs'
    final contents), writes no graph input but by write-backs, and breaks no
    aliasing rule of its in-place ops. Graphs are checked at the sample args'
    concrete sizes.

    Sample args may be real or FakeTensors (what AOTAutograd hands a compiler),
    with any fake mode active or none: only their sizes, strides, offsets,
    dtypes and storage sharing matter (see `_Inputs`). Symbolic sizes are
    checked at their hints, the sizes of the example the graph was traced
    from: a proof for that size only. A size with no hint, or an op whose
    output depends on values it cannot have from fake args, is a
    ReinplaceCheckError with `cannot_check` True.

    inputs_written_back_may_be_written: any node may write the bytes of a
    graph input that the functional graph writes back (what
    `reinplace(policy="compile")` does); every read and the final contents are
    still proven.

    compiler="inductor": also prove the rewrite sound as Inductor lowers it
    (what `reinplace(policy="inductor", check=True)` asks): no in-place write
    through a view of another dtype than its buffer's, and no write whose fused
    producers read the written buffer at other elements where the rewrite
    introduced it (csrc/checker/inductor_contract.h states both rules).

    donated_inputs: positions of sample args that are donated buffers (AOTAutograd's
    `bw_donated_idxs`, which a memory plan may reuse once dead): the rewritten graph may
    write them, and their final contents are not compared; every read is still proven."""
    if compiler not in COMPILERS:
        raise ValueError(f"check_reinplaced: unknown compiler {compiler!r}; expected one of {COMPILERS}")
    for gm in (functional_gm, reinplaced_gm):
        if not isinstance(gm, GraphModule):
            raise TypeError(f"check_reinplaced expects torch.fx.GraphModules, got {type(gm).__name__}")
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    # A compiler may call us inside its fake mode (AOTAutograd does): the runs
    # choose their own mode (see _Inputs), whatever is active around them.
    with unset_fake_temporarily():
        _check(
            functional_gm,
            reinplaced_gm,
            sample_args,
            inputs_written_back_may_be_written,
            compiler,
            tuple(donated_inputs),
        )


def _check(
    functional_gm: GraphModule,
    reinplaced_gm: GraphModule,
    sample_args: tuple,
    inputs_written_back_may_be_written: bool,
    compiler: str | None = None,
    donated_inputs: tuple[int, ...] = (),
) -> None:
    try:
        inputs = _Inputs(functional_gm, sample_args, donated_inputs)
        slots: list[tuple] = []
        functional = _Recorder(functional_gm, inputs, slots, None)
        functional.run()
        rewritten = _Recorder(reinplaced_gm, inputs, slots, functional, compiler=compiler)
        failure = rewritten.run()
    except _FunctionalRaised as e:
        raise FunctionalGraphRaisedError(
            f"fxinplace: cannot check the rewritten graph: {e}; it defines no values to check against",
            node=e.node,
            reason=_REASON.functional_raised.name,
            cannot_check=True,
        ) from e.__cause__
    except _CannotCheck as e:
        raise ReinplaceCheckError(
            f"fxinplace: cannot check the rewritten graph: {e}",
            reason=_REASON.cannot_check.name,
            cannot_check=True,
        ) from e
    problem = (
        inputs.table(),
        slots,
        functional.graph_tuple(),
        rewritten.graph_tuple(),
        inputs_written_back_may_be_written,
        compiler == "inductor",
    )
    result = _C.checker.check_rewrite(problem)
    outcome, index, operand = result.outcome, result.node, result.operand
    # Findings are (position, node, operand, reason, message, cannot_check); the
    # earliest in the rewritten graph is reported.
    findings = list(rewritten.findings)
    if outcome != _OK and (failure is None or index >= 0):
        node = rewritten.check_nodes[index] if index >= 0 else None
        operand_name = rewritten.reads[index][operand] if index >= 0 and operand >= 0 else None
        where = index if index >= 0 else math.inf
        findings.append(
            (where, node, operand_name, result.reason.name, result.message, outcome == _CANNOT_CHECK)
        )
    if failure is not None:
        findings.append(failure)
    if not findings:
        return
    _where, node, operand_name, reason, message, cannot = min(findings, key=lambda f: f[0])
    prefix = "fxinplace: cannot check the rewritten graph: " if cannot else "fxinplace: rewritten graph: "
    raise ReinplaceCheckError(
        prefix + message, node=node, operand=operand_name, reason=reason, cannot_check=cannot
    )


def copy_functional(gm: Any) -> GraphModule | None:
    """A copy of `gm`'s graph to check against after the pass rewrites `gm`
    (node names kept; attributes shared, the pass never writes them)."""
    if not isinstance(gm, GraphModule):
        return None  # the pass itself reports it
    graph = torch.fx.Graph()
    result = graph.graph_copy(gm.graph, {}, return_output_node=True)
    if result is not None:
        value, output = result
        graph.output(value, output.type)
    return GraphModule(gm, graph)
