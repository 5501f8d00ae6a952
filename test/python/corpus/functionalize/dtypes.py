"""Python scalars (wrapped numbers), integer and bool tensors."""

from __future__ import annotations

import torch

from fxinplace.testing.harness.functionalize_differential import functionalize_case

from ..inputs import a34, ar, r44, rn


@functionalize_case(a34, "scalar")
def scalar_inplace_ops(x):
    a = x.clone()
    a.add_(2)
    a.mul_(0.5)
    a[0].sub_(1, alpha=3)
    a[1] /= 4
    a[2] **= 2
    return a


@functionalize_case(lambda: (torch.arange(12).reshape(3, 4),), "int")
def int_tensor_mutations(x):
    a = x.clone()
    a[0] += 5
    a[1].mul_(-3)
    a.t()[2].floor_divide_(2)
    a.remainder_(7)
    return a, a.sum(), a.max()


@functionalize_case(
    lambda: (torch.arange(12, dtype=torch.int32).reshape(3, 4), ar(3, 4)), "int", "input_mutation"
)
def int_input_mutated_float_from_int(i, f):
    i[1:].add_(10)
    f.add_(i)
    return f, i.float() / 2


@functionalize_case(r44, "bool")
def bool_tensor_mutations(x):
    m = x > 0
    m[0] = False
    m.t()[1].logical_not_()
    m[2].bitwise_and_(x[3] < 0.5)
    return m, x.masked_fill(m, 0.0), m.sum()


@functionalize_case(lambda: (rn(4, 4) > 0, rn(4, 4, seed=3)), "bool", "input_mutation")
def bool_input_mutated(m, x):
    m[:, 0].fill_(True)
    m.logical_and_(x > -1.0)
    return torch.where(m, x, -x)
