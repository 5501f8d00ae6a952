"""Issue 15's four programs (f1-f4), shared by the tests that run them through the compile
paths (test_compile_regressions.py) and the tests of Inductor's contract in the checker
(test_check_inductor_contract.py).

- f1: a scatter that is a no-op when taken, whose base the program then overwrites;
- f2: a scatter into a buffer a custom op wrote through a dtype view;
- f3: `index_put_` into x, then `x.add_(x.flip(0))`;
- f4: `_foreach_add_([x], [x.flip(0)])`.

``ISSUE15_PROGRAMS`` has each with a maker of fresh sample args.
"""

from __future__ import annotations

import torch


@torch.library.custom_op("fxinplace_issue15::negate_", mutates_args={"x"})
def negate_(x: torch.Tensor) -> None:
    x.neg_()


@negate_.register_fake
def _(x: torch.Tensor) -> None:
    return None


def f1(x):
    y = torch.diagonal_scatter(x, x.diagonal())
    x.fill_(2)
    return y


def f2(x, src):
    y = x.clone()
    negate_(y.view(torch.float32))
    return torch.diagonal_scatter(y, src)


def f3(x):
    x.index_put_((torch.arange(4),), x * 2.0)
    x.add_(x.flip(0))
    return x


def f4(x):
    torch._foreach_add_([x], [x.flip(0)])
    return x


ISSUE15_PROGRAMS = {
    "f1": (f1, lambda: (torch.arange(16.0).reshape(4, 4),)),
    "f2": (
        f2,
        lambda: (
            torch.arange(16, dtype=torch.int32).reshape(4, 4),
            torch.tensor([7, 8, 9, 10], dtype=torch.int32),
        ),
    ),
    "f3": (f3, lambda: (torch.arange(32.0).reshape(4, 8) / 7,)),
    "f4": (f4, lambda: (torch.arange(64.0).reshape(8, 8) / 3,)),
}
