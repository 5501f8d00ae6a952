"""The benchmarks' big synthetic graphs are built by repeating one traced stretch of the
program (`fxinplace.testing.graphs`): at a size past that shortcut, each must be the graph
make_fx(functionalize(f)) records for the whole program, node for node, and compute what the
program computes."""

from __future__ import annotations

import pytest
import torch

from fxinplace.testing import graphs


def _traced_matmul_chain(n_iters: int, x: torch.Tensor) -> torch.fx.GraphModule:
    return graphs._functional_trace(graphs._matmul_chain_fn(n_iters), x)


CASES = {
    # builder, nodes asked, (the whole program traced, the program's eager function)
    "chain": (graphs.chain_graph, 40, lambda x: graphs.trace_chain(38)[0](), graphs._chain_fn(38)),
    "view_mutation": (
        graphs.view_mutation_graph,
        63,
        lambda x: graphs.trace_view_mutation(12)[0](),
        graphs._view_mutation_fn(12),
    ),
    "matmul_chain": (
        graphs.matmul_chain_graph,
        32,
        lambda x: _traced_matmul_chain(10, x),
        graphs._matmul_chain_fn(10),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_built_graph_is_the_traced_program(name: str) -> None:
    build, n_nodes, trace, program = CASES[name]
    make_gm, (x,) = build(n_nodes)
    built = make_gm()
    assert built.code == trace(x).code
    assert make_gm() is not built and make_gm().graph is not built.graph  # fresh copies
    torch.testing.assert_close(built(x.clone()), program(x.clone()), rtol=0, atol=0)


def test_the_matmul_chain_gives_the_memory_plan_a_buffer_at_every_step() -> None:
    import fxinplace

    make_gm, args = graphs.matmul_chain_graph(32)  # 10 mm
    gm = make_gm()
    want = gm(*args)
    report = fxinplace.reinplace_report(gm, *args, policy="compile", memory_plan=True, check=True)
    assert report.num_buffers_reused == 8  # every mm but the first two
    torch.testing.assert_close(gm(*args), want, rtol=0, atol=0)
