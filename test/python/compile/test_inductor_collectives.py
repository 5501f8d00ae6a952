"""fxinplace.inductor with functional collectives: `torch.distributed` over gloo, two
processes on loopback. An `all_reduce` of an intermediate becomes `all_reduce_` into its
buffer (as Inductor's pass does), `all_reduce_coalesced` of intermediates
`all_reduce_coalesced_`; an `all_reduce` of a graph input is never written into
the caller's tensor; a `wait_tensor` result read twice reads the reduced values both times."""

from __future__ import annotations

import os
import socket
import traceback

import pytest
import torch
import torch.distributed as dist


def of_intermediate(x):
    import torch.distributed._functional_collectives as funcol

    y = x * 2
    r = funcol.all_reduce(y, "sum", dist.group.WORLD)
    return r + r.sum()  # the collective's result read twice


def of_input(x):
    import torch.distributed._functional_collectives as funcol

    r = funcol.all_reduce(x, "sum", dist.group.WORLD)
    return r * 2, x + 1  # x itself is read after the collective


def coalesced_of_intermediates(x):
    import torch.distributed._functional_collectives as funcol

    a, b = x * 2, x + 1
    ra, rb = funcol.all_reduce_coalesced([a, b], "sum", dist.group.WORLD)
    return ra - rb


def _worker(rank: int, port: int, errors) -> None:
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=2)
        from fxinplace.testing.harness.inductor_parity import compile_and_run

        programs = ((of_intermediate, True), (of_input, False), (coalesced_of_intermediates, True))
        for fn, expect_write in programs:
            x = torch.arange(6.0).reshape(2, 3) + rank
            want = fn(x.clone())
            arg = x.clone()
            run = compile_and_run(fn, lambda c, arg=arg: c(arg), hook=True, shadow_stock=True)
            for w, g in zip(
                torch.utils._pytree.tree_leaves(want), torch.utils._pytree.tree_leaves(run.steps), strict=True
            ):
                assert torch.equal(w, g), f"{fn.__name__} on rank {rank}: {w} != {g}"
            assert torch.equal(arg, x), f"{fn.__name__} on rank {rank}: the input was written"
            for r in run.slots:
                assert r.writes >= r.stock_writes, fn.__name__
            assert (run.writes > 0) == expect_write, f"{fn.__name__}: {run.writes} rewrites"
        dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - reported to the parent
        errors.put(f"rank {rank}: {traceback.format_exc()}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not dist.is_available(), reason="torch built without distributed")
def test_all_reduce_over_gloo() -> None:
    ctx = torch.multiprocessing.get_context("spawn")
    errors = ctx.SimpleQueue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(rank, port, errors)) for rank in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
    reports = []
    while not errors.empty():
        reports.append(errors.get())
    assert not reports, "\n".join(reports)
    assert all(p.exitcode == 0 for p in procs)
