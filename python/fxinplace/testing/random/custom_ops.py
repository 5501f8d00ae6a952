"""Custom mutable ops that random programs call on views and dtype views.

Compiled programs reach custom ops that write their arguments (``mutates_args``) through
``auto_functionalized_v2``, whose bases fxinplace may leave uncloned: the random generator
calls these on slices, transposes and dtype views of inputs and intermediates so that both
compile paths and ``fxinplace.functionalize`` meet them. A program that uses them imports
this module (its source says so), which registers the ops under ``torch.ops.fxrandom``.

Each op is defined for every dtype its body accepts; the generator keeps a call only where
eager runs it at every size.
"""

from __future__ import annotations

import torch

__all__ = ["CUSTOM_OPS", "IMPORT_LINE", "NAMESPACE"]

NAMESPACE = "fxrandom"
#: The line a program's source needs to find the ops.
IMPORT_LINE = "import fxinplace.testing.random.custom_ops  # registers torch.ops.fxrandom"


@torch.library.custom_op("fxrandom::negate_", mutates_args={"x"})
def negate_(x: torch.Tensor) -> None:
    x.neg_()


@torch.library.custom_op("fxrandom::fill_code_", mutates_args={"x"})
def fill_code_(x: torch.Tensor) -> None:
    x.fill_(7)


@torch.library.custom_op("fxrandom::add_into_", mutates_args={"x"})
def add_into_(x: torch.Tensor, y: torch.Tensor) -> None:
    x.add_(y)


@torch.library.custom_op("fxrandom::write_both_", mutates_args={"x", "y"})
def write_both_(x: torch.Tensor, y: torch.Tensor) -> None:
    x.add_(1)
    y.mul_(2)


@torch.library.custom_op("fxrandom::double_ret_", mutates_args={"x"})
def double_ret_(x: torch.Tensor) -> torch.Tensor:
    """Returns twice ``x``'s old value and adds one to ``x``: a result and a write."""
    out = x * 2
    x.add_(1)
    return out


@double_ret_.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x * 2)


#: ``(name, mutated tensor arguments, reads another tensor, returns a tensor)``.
CUSTOM_OPS: tuple[tuple[str, int, bool, bool], ...] = (
    ("negate_", 1, False, False),
    ("fill_code_", 1, False, False),
    ("add_into_", 1, True, False),
    ("write_both_", 2, False, False),
    ("double_ret_", 1, False, True),
)
