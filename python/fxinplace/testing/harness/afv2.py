"""Custom mutable ops and helpers shared by the auto_functionalized_v2 re-inplacing tests
(``test_reinplace_auto_functionalized*.py``, ``test_check_reinplaced.py``).

Graphs come from torch's own machinery (FunctionalTensorMode under make_fx), or from
make_fx of functions that call auto_functionalized_v2 themselves; `check_eager` runs a
re-inplaced graph against eager execution: outputs and input mutations.
"""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree
from torch._subclasses.functional_tensor import (
    FunctionalTensor,
    FunctionalTensorMode,
    dispatch_functionalize,
)
from torch.fx.experimental.proxy_tensor import make_fx

from fxinplace.testing.harness.oracle import value_difference

AFV2 = torch.ops.higher_order.auto_functionalized_v2
aten = torch.ops.aten


@torch.library.custom_op("fxafv2test::add_one_", mutates_args={"x"})
def add_one_(x: torch.Tensor) -> None:
    x.add_(1)


@torch.library.custom_op("fxafv2test::two_", mutates_args={"x", "y"})
def two_(x: torch.Tensor, y: torch.Tensor, alpha: float) -> None:
    x.add_(alpha)
    y.mul_(2)


@torch.library.custom_op("fxafv2test::scale_ret_", mutates_args={"x"})
def scale_ret_(x: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    out = x * other
    x.add_(other)
    return out


@scale_ret_.register_fake
def _(x, other):
    return torch.empty_like(x)


@torch.library.custom_op("fxafv2test::list_", mutates_args={"xs"})
def list_(xs: list[torch.Tensor]) -> None:
    for i, x in enumerate(xs):
        x.add_(i + 1)


@torch.library.custom_op("fxafv2test::maybe_", mutates_args={"x"})
def maybe_(x: torch.Tensor | None, y: torch.Tensor) -> None:
    if x is not None:
        x.add_(y)


ADD_ONE = torch.ops.fxafv2test.add_one_.default
TWO = torch.ops.fxafv2test.two_.default
SCALE_RET = torch.ops.fxafv2test.scale_ret_.default
LIST = torch.ops.fxafv2test.list_.default
MAYBE = torch.ops.fxafv2test.maybe_.default


# ----------------------------------------------------------------------------
# Helpers


def _functionalize_with_copy_back(fn):
    """dispatch_functionalize, plus the `copy_` of each mutated input's new value
    back into it (as AOTAutograd emits), so the graph mutates its inputs as eager does."""

    def inner(*args):
        exclude = torch._C._ExcludeDispatchKeyGuard(
            torch._C.DispatchKeySet(torch._C.DispatchKey.Functionalize)
        )
        with exclude:
            with FunctionalTensorMode():
                fargs = [
                    FunctionalTensor.to_functional(a) if isinstance(a, torch.Tensor) else a for a in args
                ]
                out = fn(*fargs)

                def from_fun(t):
                    torch._sync(t)
                    return torch._from_functional_tensor(t.elem)

                outs = pytree.tree_map_only(FunctionalTensor, from_fun, out)
                new_values = []
                for fa in fargs:
                    mutated = isinstance(fa, FunctionalTensor) and (
                        torch._sync(fa) or torch._functionalize_has_data_mutation(fa.elem)
                    )
                    new_values.append(from_fun(fa) if mutated else None)
            for a, new in zip(args, new_values, strict=True):
                if new is not None:
                    a.copy_(new)
        return outs

    return inner


def clones_every_base(node) -> bool:
    """The node still clones all its bases (no _only_clone_these_bases, or one listing every base)."""
    only = node.kwargs.get("_only_clone_these_bases")
    return only is None or set(only) == set(range(len(node.kwargs["_all_bases"])))


def trace(fn, *args, copy_back=False):
    inner = (
        _functionalize_with_copy_back(fn) if copy_back else dispatch_functionalize(fn, FunctionalTensorMode())
    )
    return make_fx(inner)(*args)


def trace_direct(fn, *args):
    """make_fx of a function that calls auto_functionalized_v2 itself (hand-written AFv2 uses)."""
    return make_fx(fn)(*args)


def _clone_args(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _assert_same(got, expected):
    got_leaves, expected_leaves = pytree.tree_leaves(got), pytree.tree_leaves(expected)
    assert len(got_leaves) == len(expected_leaves)
    for g, e in zip(got_leaves, expected_leaves, strict=True):
        why = value_difference(g, e, tolerance=(0.0, 0.0))
        assert why is None, why


def check_eager(fn, gm, args, *, inputs_mutated=True):
    """Runs gm and fn on copies of args: same outputs; same input mutations
    (inputs_mutated=False: gm was traced without the copy back, so inputs stay as they were)."""
    eager_args, graph_args = _clone_args(args), _clone_args(args)
    _assert_same(gm(*graph_args), fn(*eager_args))
    _assert_same(graph_args, eager_args if inputs_mutated else args)


def count(gm, target):
    return sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target is target)


def afv2_nodes(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is AFV2]


def decision(report, name):
    found = [d for d in report.decisions if d.node == name]
    assert len(found) == 1, report.decisions
    return found[0]
