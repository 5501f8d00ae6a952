"""Worker processes that survive a crashing program.

    for result in map_in_workers(check, seeds, jobs=2, on_crash=crash_report):
        ...

A random program can kill the process that runs it (a segfault in a kernel, an abort).
``multiprocessing.Pool`` then replaces the dead worker but loses its task, and ``imap``
waits for that result forever: a campaign hangs instead of reporting the crash. Here each
worker takes one item at a time over a pipe of its own; the parent watches the pipes and
the workers' sentinels together, and when a worker dies it reports the item the worker held
through ``on_crash(item, exitcode, stage)`` and starts a fresh worker; ``note_stage`` in the
work tells the parent what runs (which compiler), so that a crash can be attributed. Results come back in the
order of ``items``. Workers are forked, so ``work`` need not be picklable (its results must be).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["map_in_workers", "note_stage"]


_to_parent: Any = None  # in a worker: its pipe to the parent


def note_stage(stage: str) -> None:
    """Tell the parent what this worker does now (``on_crash`` hears the last stage if the
    worker dies: which compiler crashed, say). Does nothing outside a worker."""
    if _to_parent is not None:
        _to_parent.send(("stage", stage))


def _serve(work: Callable[[Any], Any], conn: Any) -> None:
    global _to_parent
    _to_parent = conn
    while True:
        item = conn.recv()
        if item is None:
            return
        conn.send(("result", work(item)))


class _Worker:
    def __init__(self, ctx: Any, work: Callable[[Any], Any]) -> None:
        self.conn, theirs = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(work, theirs), daemon=True)
        self.process.start()
        theirs.close()
        self.holding: int | None = None  # index of the item it runs
        self.stage: str | None = None  # what it last said it does (note_stage)

    def give(self, index: int, item: Any) -> None:
        self.holding = index
        self.stage = None
        self.conn.send(item)

    def read(self, done: dict[int, Any]) -> bool:
        """Takes the messages waiting on the pipe; False when the pipe is closed."""
        try:
            while self.conn.poll():
                kind, payload = self.conn.recv()
                if kind == "stage":
                    self.stage = payload
                else:
                    done[self.holding] = payload
                    self.holding = None
        except (EOFError, OSError):
            return False
        return True

    def stop(self) -> None:
        try:
            if self.process.is_alive():
                self.conn.send(None)
            self.process.join(timeout=5)
        except (OSError, EOFError, BrokenPipeError):
            pass
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def map_in_workers(
    work: Callable[[Any], Any],
    items: Iterable[Any],
    *,
    jobs: int,
    on_crash: Callable[[Any, int | None, str | None], Any],
) -> Iterator[Any]:
    """``work(item)`` for every item, in ``jobs`` forked workers, yielded in order; an item
    whose worker dies yields ``on_crash(item, exitcode, stage)`` (a negative exit code: the
    signal; ``stage``: what the worker last said it does, see ``note_stage``)."""
    items = list(items)
    ctx = multiprocessing.get_context("fork")
    workers = [_Worker(ctx, work) for _ in range(min(jobs, len(items)))]
    done: dict[int, Any] = {}
    next_item = 0
    next_out = 0
    try:
        for w in workers:
            if next_item < len(items):
                w.give(next_item, items[next_item])
                next_item += 1
        while next_out < len(items):
            busy = [w for w in workers if w.holding is not None]
            watched = [w.conn for w in busy] + [w.process.sentinel for w in busy]
            ready = multiprocessing.connection.wait(watched)
            for k, w in enumerate(workers):
                if w.holding is None:
                    continue
                died = w.process.sentinel in ready
                if w.conn in ready and not w.read(done):
                    died = True
                if died or not w.process.is_alive():
                    w.process.join()
                    if w.holding is not None:
                        done[w.holding] = on_crash(items[w.holding], w.process.exitcode, w.stage)
                    w.conn.close()
                    workers[k] = w = _Worker(ctx, work)
                if w.holding is None and next_item < len(items):
                    w.give(next_item, items[next_item])
                    next_item += 1
            while next_out in done:
                yield done.pop(next_out)
                next_out += 1
    finally:
        for w in workers:
            w.stop()
