"""``cat`` / ``stack`` of views of mutated tensors; ``matmul`` / ``linear`` with a mutated weight
view; reductions after a mutation."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a44, r44, r44_r44, rn


@functionalize_case(a44, "cat")
def cat_views_of_mutated(x):
    a = x.clone()
    a[1].add_(100)
    return torch.cat([a[0], a[1], a[:, 0]]), a


@functionalize_case(r44_r44, "cat", "input_mutation")
def stack_views_after_input_mutation(x, y):
    x.t()[0].mul_(2)
    return torch.stack([x[0], y[1], x[:, 0]], dim=1)


@functionalize_case(lambda: (rn(3, 4), rn(5, 4, seed=1), rn(5, seed=2)), "matmul")
def linear_with_mutated_weight_view(x, w, b):
    wc = w.clone()
    wc[0].mul_(2)
    wc.t()[1].zero_()
    return F.linear(x, wc, b), x @ wc.t()


@functionalize_case(lambda: (rn(3, 4), rn(5, 4, seed=1)), "matmul", "input_mutation")
def matmul_with_mutated_input_weight(x, w):
    w[1:3].add_(1.0)
    y = torch.mm(x, w.t())
    w[0].zero_()
    return y, torch.matmul(x, w[:2].t())


@functionalize_case(
    lambda: (rn(2, 3, 4), rn(4, 2, seed=1)),
    "matmul",
    stock_fails=("mutations_and_views",),
    stock_fails_reason=(
        "aten::matmul with a >2-d operand decomposes (CompositeImplicitAutograd) into "
        "expand/view + bmm, and torch.func.functionalize leaves those aten.view/aten.expand "
        "nodes in the graph with remove='mutations_and_views' (values are right)"
    ),
)
def matmul_batched_views(x, w):
    a = x.clone()
    a[:, 0].mul_(2)
    return torch.matmul(a, w), a


@functionalize_case(r44, "reduction")
def reductions_after_mutation(x):
    a = x.clone()
    a[1:3].mul_(4)
    return a.sum(), a.mean(0), a.amax(1), a.argmax(), a.std(), a.norm()
