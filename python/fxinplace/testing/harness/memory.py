"""Bytes a call allocates on the CPU, from the profiler's allocation records.

``measure(fn)`` runs ``fn()`` under ``torch.profiler`` with memory profiling and reads
every allocation and free of the CPU allocator in time order: the peak of bytes live
(relative to the start of the call), the bytes allocated in total and the number of
allocations. Used by the compile benchmark and its tests (no timing: counts only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MemoryStats", "measure"]


@dataclass(frozen=True)
class MemoryStats:
    peak_live_bytes: int  # the most bytes held at once beyond what was live at the start
    allocated_bytes: int  # the sum of every allocation's size
    allocations: int


def _allocation_records(prof: Any) -> list[tuple[int, int]]:
    from torch._C._profiler import _EventType

    records = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        event = stack.pop()
        if event.typed[0] == _EventType.Allocation:
            records.append((event.start_time_ns, event.typed[1].alloc_size))  # a free is negative
        stack.extend(event.children)
    return sorted(records)


def measure(fn: Callable[[], Any]) -> tuple[MemoryStats, Any]:
    """``fn()``'s allocations, and its result."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    live = peak = allocated = count = 0
    for _, size in _allocation_records(prof):
        live += size
        peak = max(peak, live)
        if size > 0:
            allocated += size
            count += 1
    return MemoryStats(peak, allocated, count), result
