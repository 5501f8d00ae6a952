"""`fxinplace.reinplace`: a native drop-in for torch.fx.passes.reinplace.reinplace."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from torch.fx import GraphModule

from fxinplace import _C, _check
from fxinplace._apply_plan import apply_plan
from fxinplace._auto_functionalized import metadata_runners, reinplace_auto_functionalized
from fxinplace._graph_records import build_records, validate
from fxinplace._higher_order import metadata_runners as higher_order_runners
from fxinplace._metadata import propagate


@dataclass(frozen=True)
class Decision:
    """What happened to one node, and why."""

    node: str
    # keep | inplace | scatter_to_copy | remove_scatter; for auto_functionalized_v2
    # nodes also partial_inplace (some bases still cloned) and, for the copy_ of a
    # new base back into an input that the node now mutates in place, remove_copy.
    action: str
    reason: str
    reason_code: str  # stable identifier of `reason`, e.g. "used_later"
    culprit: str | None  # the node behind a refusal (a later use, an aliasing operand)


@dataclass
class ReinplaceReport:
    graph_module: GraphModule
    decisions: list[Decision] = field(default_factory=list)
    # "meta": recorded values + meta views; "fake": FakeTensor replay at the sample
    # args' sizes; "symbolic": the trace's own symbolic values (see _metadata).
    metadata_path: str = "meta"
    walks: int = 1

    @property
    def num_reinplaced(self) -> int:
        return sum(d.action == "inplace" for d in self.decisions)

    @property
    def num_scatters_removed(self) -> int:
        return sum(d.action == "remove_scatter" for d in self.decisions)

    @property
    def num_scatters_to_copy(self) -> int:
        return sum(d.action == "scatter_to_copy" for d in self.decisions)

    def explain(self, *, include_non_candidates: bool = False) -> str:
        lines = []
        for d in self.decisions:
            if d.reason_code in ("not_candidate", "view") and not include_non_candidates:
                continue
            why = "done" if d.reason_code == "done" else d.reason
            culprit = f" (see {d.culprit})" if d.culprit else ""
            lines.append(f"{d.node}: {d.action}: {why}{culprit}")
        return "\n".join(lines)


def reinplace_report(gm: GraphModule, *sample_args: Any, check: bool = False) -> ReinplaceReport:
    """Re-inplace `gm` like `reinplace`, and return every decision with its reason.

    check=True: afterwards, prove the result against a copy of the functional
    graph with `fxinplace.check_reinplaced` (raises ReinplaceCheckError).
    """
    functional = _check.copy_functional(gm) if check else None
    report = _reinplace_report(gm, sample_args, metadata="auto")
    if functional is not None:
        _check.check_reinplaced(functional, gm, *sample_args)
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


def _reinplace_report(gm: GraphModule, sample_args: tuple, *, metadata: str) -> ReinplaceReport:
    with _gc_paused():
        return _run_pass(gm, sample_args, metadata=metadata)


def _run_pass(gm: GraphModule, sample_args: tuple, *, metadata: str) -> ReinplaceReport:
    validate(gm, sample_args)
    runners = {**metadata_runners(gm, sample_args), **higher_order_runners(gm)}
    found = propagate(gm, sample_args, metadata=metadata, runners=runners)
    path = found.path
    records, nodes, num_storages = build_records(gm, found)
    del found
    decisions, walks = _C.plan(records, num_storages)
    report = ReinplaceReport(gm, metadata_path=path, walks=walks)
    for node, (action, reason, culprit, _repl) in zip(nodes, decisions, strict=True):
        report.decisions.append(
            Decision(
                node=node.name,
                action=_C.action_name(action),
                reason=_C.reason_text(reason),
                reason_code=_C.reason_name(reason),
                culprit=nodes[culprit].name if culprit >= 0 else None,
            )
        )
    apply_plan(gm, nodes, decisions)
    _merge(report, reinplace_auto_functionalized(gm, sample_args))
    gm.recompile()
    return report


def _merge(report: ReinplaceReport, afv2_decisions: list) -> None:
    """The auto_functionalized_v2 pass's decisions replace the native ones for those nodes."""
    if not afv2_decisions:
        return
    where = {d.node: i for i, d in enumerate(report.decisions)}
    for d in afv2_decisions:
        decision = Decision(d.node, d.action, d.reason, d.reason_code, d.culprit)
        if d.node in where:
            report.decisions[where[d.node]] = decision
        else:
            report.decisions.append(decision)


def reinplace(gm: GraphModule, *sample_args: Any, check: bool = False) -> GraphModule:
    """Turn out-of-place ops whose `self` is dead afterwards into their in-place overloads.

    Same contract as torch.fx.passes.reinplace.reinplace: mutates `gm`, recompiles it
    and returns it. Sample args give the inputs' shapes and aliasing. check=True
    verifies the result independently (see `reinplace_report`); for tests.
    """
    return reinplace_report(gm, *sample_args, check=check).graph_module
