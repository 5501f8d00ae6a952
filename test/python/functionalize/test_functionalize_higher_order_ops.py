"""Higher-order ops (torch.cond, while_loop) inside fxinplace.functionalize.

torch.cond compiled itself with dynamo when run eagerly, and dynamo cannot trace
functional tensors ("Trying to resize storage that is not resizable", issue 7).
Now the op runs on the unwrapped operands with each subgraph functionalized in a
region of its own; under make_fx the graph keeps the higher-order op with functional
subgraphs. Other higher-order ops are a clear error.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace import _C
from fxinplace.testing.harness.functionalize_differential import eager_parity_problems


def _check(fn, make_args) -> None:
    # Graph structure is checked below: graph_problems rejects higher-order ops.
    problems = eager_parity_problems(fn, make_args, check_graph=False)
    assert not problems, "\n".join(problems)


def _cond_program(x, y):
    x.add_(1)

    def true_fn(a, b):
        c = a.clone()
        c[0].mul_(b[0])  # a mutation inside the branch, on a branch-local tensor
        return c[1:] * 2

    out = torch.cond(x.sum() > 4, true_fn, lambda a, b: (a - b)[:2].clone(), (x, y))
    y.mul_(2)
    return out


@pytest.mark.parametrize("start", [0.0, -5.0], ids=["true_branch", "false_branch"])
def test_cond_matches_eager(start: float) -> None:
    _check(_cond_program, lambda: (torch.arange(start, start + 3), torch.full((3,), 3.0)))


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_cond_graph_has_functional_subgraphs(remove: str) -> None:
    gm = make_fx(fxinplace.functionalize(_cond_program, remove=remove))(torch.arange(3.0), torch.ones(3))
    cond = [n for n in gm.graph.nodes if n.target is torch.ops.higher_order.cond]
    assert len(cond) == 1
    for sub in (gm.true_graph_0, gm.false_graph_0):
        for node in sub.graph.nodes:
            if isinstance(node.target, torch._ops.OpOverload):
                assert not node.target._schema.is_mutable, node.format_node()
                if remove == "mutations_and_views":
                    assert not any(r.alias_info for r in node.target._schema.returns), node.format_node()


def test_while_loop_matches_eager() -> None:
    # The op itself: torch._higher_order_ops.while_loop lifts closed-over tensors
    # into additional_inputs only under dynamo.
    def f(x):
        x.mul_(2)
        return torch.ops.higher_order.while_loop(
            lambda i, t, step: i < 3, lambda i, t, step: (i + 1, t + step), (torch.tensor(0), x), (x * 1,)
        )

    _check(f, lambda: (torch.arange(3.0),))


def _closure_program(x):
    y = x * 2
    return torch.cond(x.sum() > 0, lambda t: t + y, lambda t: t - y, (x,))


def test_a_subgraph_reading_a_closed_over_tensor_runs_eagerly() -> None:
    x = torch.arange(3.0)
    assert torch.equal(fxinplace.functionalize(_closure_program)(x), _closure_program(x))


def test_a_subgraph_reading_a_closed_over_tensor_while_tracing_is_a_clear_error() -> None:
    # The trace would bake the tensor's value into the subgraph as a constant.
    with pytest.raises(
        RuntimeError, match=r"fxinplace.*reads a tensor from outside the subgraph.*as an operand"
    ):
        make_fx(fxinplace.functionalize(_closure_program))(torch.arange(3.0))


def test_a_subgraph_writing_a_closed_over_tensor_is_a_clear_error() -> None:
    def f(x):
        y = x * 2

        def true_fn(t):
            y.add_(1)
            return t + 0

        return torch.cond(x.sum() > 0, true_fn, lambda t: t + 1, (x,))

    with pytest.raises(
        RuntimeError, match=r"fxinplace.*add_\.Tensor writes a tensor from outside the subgraph"
    ):
        fxinplace.functionalize(f)(torch.arange(3.0))


def test_a_branch_writing_its_operand_is_a_clear_error() -> None:
    def f(x):
        def true_fn(t):
            t.add_(1)
            return t + 0

        return torch.cond(x.sum() > 0, true_fn, lambda t: t + 1, (x,))

    with pytest.raises(RuntimeError, match=r"fxinplace.*higher_order.cond changes its operand 0 in place"):
        fxinplace.functionalize(f)(torch.arange(3.0))


def test_unsupported_higher_order_op_is_a_clear_error() -> None:
    def f(x):
        return torch.ops.higher_order.map_impl(lambda t: t + 1, (x,), ())

    with pytest.raises(
        RuntimeError, match=r"fxinplace.functionalize: the higher-order op .*map_impl is not supported"
    ):
        fxinplace.functionalize(f)(torch.arange(3.0).reshape(3, 1))


def test_region_state_is_restored_after_a_cond() -> None:
    def f(x):
        return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))

    fxinplace.functionalize(f)(torch.arange(3.0))
    assert not _C.functionalize.region_active()
    assert torch.equal(torch.arange(3.0) + 1, torch.arange(3.0).add(1))  # ordinary dispatch again


@pytest.mark.parametrize(
    "branch",
    [lambda t, y: y, lambda t, y: t, lambda t, y: t[1:]],
    ids=["closed_over", "operand", "operand_view"],
)
def test_a_subgraph_returning_an_alias_raises_as_eager_does(branch) -> None:
    def f(x):
        y = x * 2
        return torch.cond(x.sum() > 0, lambda t: branch(t, y), lambda t: t[1:].clone(), (x,))

    with pytest.raises(Exception, match="alias"):  # eager: dynamo's UncapturedHigherOrderOpError
        f(torch.arange(3.0))
    with pytest.raises(RuntimeError, match=r"fxinplace.*higher-order ops do not support aliasing"):
        fxinplace.functionalize(f)(torch.arange(3.0))


def test_cond_on_operands_that_share_memory_raises_as_eager_does() -> None:
    def f(x):
        return torch.cond(x.sum() > 0, lambda a, b: a[1:] + b, lambda a, b: a[1:] - b, (x, x[1:]))

    with pytest.raises(Exception, match="alias"):  # eager: dynamo's UncapturedHigherOrderOpError
        f(torch.arange(4.0))
    with pytest.raises(
        RuntimeError, match=r"fxinplace.*operands of torch.ops.higher_order.cond share memory"
    ):
        fxinplace.functionalize(f)(torch.arange(4.0))
