"""What `fxinplace.reinplace_report` returns: every decision of the planner with its reason."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from torch.fx import GraphModule

from fxinplace import _C


@dataclass(frozen=True)
class Decision:
    """What happened to one node, and why."""

    node: str
    # keep | inplace | scatter_to_copy | remove_scatter | remove_copy (a write-back
    # copy_ into an input that already holds the value) | remove_cast (a `_to_copy` whose
    # comparison now stores the converted value in place); for auto_functionalized_v2
    # nodes also partial_inplace (some bases still cloned).
    action: str
    reason: str
    reason_code: str  # stable identifier of `reason`, e.g. "used_later"
    culprit: str | None  # the node behind a refusal (a later use, an aliasing operand)


@dataclass
class ReinplaceReport:
    graph_module: GraphModule
    # "meta": recorded values + meta views; "fake": FakeTensor replay at the sample
    # args' sizes; "symbolic": the trace's own symbolic values (see metadata).
    metadata_path: str = "meta"
    walks: int = 1
    # The plan and the node names it speaks of; decisions are read on demand.
    _plan: Any = field(default=None, repr=False)
    _names: list[str] = field(default_factory=list, repr=False)
    _base_names: dict[int, list[str | None]] = field(default_factory=dict, repr=False)
    # Set when the planner was not needed: why no node could be rewritten.
    nothing_to_plan: str | None = None

    @functools.cached_property
    def decisions(self) -> list[Decision]:
        return [self._decision(i) for i in range(len(self._names))]

    def _decision(self, i: int) -> Decision:
        d = self._plan.decision(i)
        culprit = self._names[d.culprit] if d.culprit is not None else None
        reason = "done" if d.reason == _C.planner.Reason.DONE else d.reason.text
        if d.slots:
            reason = self._explain_bases(i, d)
        return Decision(self._names[i], d.action.label, reason, d.reason.code, culprit)

    def _explain_bases(self, i: int, d: Any) -> str:
        """auto_functionalized_v2: which bases are written in place, and why the others are not."""
        bases = self._base_names.get(i, [])
        refused = [
            f"base {k} ({bases[k] if k < len(bases) else '?'}): {s.reason.text}"
            + (f" (see {self._names[s.culprit]})" if s.culprit is not None else "")
            for k, s in enumerate(d.slots)
            if not s.in_place
        ]
        if not refused:
            return "done: every base written in place"
        written = [k for k, s in enumerate(d.slots) if s.in_place]
        if not written:
            return "every base still cloned: " + "; ".join(refused)
        return f"bases {written} written in place, the others still cloned: " + "; ".join(refused)

    @property
    def num_buffers_reused(self) -> int:
        """memory_plan: how many results went into a dead buffer instead of allocating."""
        return len(self._plan.reuses()) if self._plan is not None else 0

    @property
    def bytes_reused(self) -> int:
        """memory_plan: the bytes those results would have allocated (size hints when symbolic)."""
        return self._plan.bytes_reused if self._plan is not None else 0

    def _memory_lines(self) -> list[str]:
        """One line per allocating op node of the memory plan: reused from which node, bytes,
        the window the buffer is held (dead after which node); or why it still allocates."""
        if self._plan is None:
            return []
        lines = []
        quiet = (_C.planner.MemoryReason.NOT_ALLOCATING, _C.planner.MemoryReason.WRITTEN_IN_PLACE)
        for i, m in enumerate(self._plan.memory()):
            if m.reason in quiet:
                continue
            if m.reason == _C.planner.MemoryReason.REUSED:
                lines.append(
                    f"{self._names[i]}: memory: reuses the buffer of {self._names[m.donor]} "
                    f"({m.bytes} bytes, dead after {self._names[m.freed_after]})"
                    + (", laid out anew (as_strided)" if m.restrided else "")
                )
            else:
                lines.append(f"{self._names[i]}: memory: allocates ({m.bytes} bytes): {m.reason.text}")
        return lines

    @property
    def num_reinplaced(self) -> int:
        return self._plan.count(_C.planner.Action.INPLACE) if self._plan is not None else 0

    @property
    def num_scatters_removed(self) -> int:
        return self._plan.count(_C.planner.Action.REMOVE_SCATTER) if self._plan is not None else 0

    @property
    def num_scatters_to_copy(self) -> int:
        return self._plan.count(_C.planner.Action.SCATTER_TO_COPY) if self._plan is not None else 0

    def explain(self, *, include_non_candidates: bool = False) -> str:
        if self.nothing_to_plan is not None:
            return self.nothing_to_plan
        lines = []
        for d in self.decisions:
            if d.reason_code in ("not_candidate", "view") and not include_non_candidates:
                continue
            culprit = f" (see {d.culprit})" if d.culprit and "(see" not in d.reason else ""
            lines.append(f"{d.node}: {d.action}: {d.reason}{culprit}")
        return "\n".join(lines + self._memory_lines())
