"""Functional collectives: schemas that hide aliasing (issue 7).

`_c10d_functional.wait_tensor` returns its argument, the buffer the collective
wrote, although its schema and its fake kernel say the result is fresh. Checked
on a 1-process gloo group.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch.fx import Graph, GraphModule

import fxinplace

c10d = torch.ops._c10d_functional


@pytest.fixture(scope="module")
def group_name(tmp_path_factory):
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    store = tmp_path_factory.mktemp("gloo") / "store"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    yield dist.group.WORLD.group_name
    dist.destroy_process_group()


def _all_reduce_read_twice(group_name: str, *, with_vals: bool) -> GraphModule:
    # mm = a @ b; ar = all_reduce(mm); w = wait_tensor(ar); y = w * 2; z = ar + 1
    # (as a graph from tracing a program that reads the collective's result
    # directly). `y` may not be written into `w`: that is `ar`, read by `z`.
    g = Graph()
    a, b = g.placeholder("a"), g.placeholder("b")
    mm = g.call_function(torch.ops.aten.mm.default, (a, b))
    ar = g.call_function(c10d.all_reduce.default, (mm, "sum", group_name))
    w = g.call_function(c10d.wait_tensor.default, (ar,))
    y = g.call_function(torch.ops.aten.mul.Tensor, (w, 2))
    z = g.call_function(torch.ops.aten.add.Tensor, (ar, 1))
    g.output((y, z))
    gm = GraphModule(torch.nn.Module(), g)
    if with_vals:
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        FakeTensorProp(gm).propagate(torch.randn(3, 3), torch.randn(3, 3))
    return gm


@pytest.mark.parametrize("with_vals", [False, True])
def test_wait_tensor_is_its_argument(group_name, with_vals):
    a, b = torch.randn(3, 3), torch.randn(3, 3)
    want = ((a @ b) * 2, (a @ b) + 1)  # one rank: all_reduce(sum) is the identity
    gm = _all_reduce_read_twice(group_name, with_vals=with_vals)
    report = fxinplace.reinplace_report(gm, a, b, check=True)
    by_node = {d.node: d for d in report.decisions}
    (mul,) = [n for n in gm.graph.nodes if n.target is torch.ops.aten.mul.Tensor]
    assert by_node[mul.name].reason_code == "used_later", report.explain()
    y, z = gm(a, b)
    torch.testing.assert_close(y, want[0])
    torch.testing.assert_close(z, want[1])
