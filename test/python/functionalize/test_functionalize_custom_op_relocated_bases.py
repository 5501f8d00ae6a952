"""A custom mutable op writing a view(dtype) of an input that does not start its storage, or
has gaps, with remove="mutations_and_views".

There the op's base is reinterpreted by view_copy, which makes a compact copy at offset 0;
the mutated view was located in the input's own layout, so auto_functionalized_v2 rebuilt
it outside the copy's storage ("setStorage: ... out of bounds"; random pipelines seeds 825
and 931). Compared with eager, eagerly and through make_fx.
"""

from __future__ import annotations

import pytest
import torch

from fxinplace.testing.harness.functionalize_differential import eager_parity_problems


@torch.library.custom_op("fxinplace_relocated_test::bump_bits_", mutates_args={"x"})
def bump_bits_(x: torch.Tensor) -> None:
    x.add_(1)


def _int_view_bumped(x):
    bump_bits_(x.view(torch.int32))
    return x * 1


def _int_view_of_a_slice_bumped(x):
    bump_bits_(x[-2:].view(torch.int32))
    return x * 1


@pytest.mark.parametrize("fn", [_int_view_bumped, _int_view_of_a_slice_bumped], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "make_input",
    [lambda: torch.arange(9.0)[1:-1], lambda: torch.arange(24.0).reshape(4, 6)[:, ::2]],
    ids=["offset", "gaps"],
)
def test_a_dtype_view_of_a_relocated_input_is_located_in_the_copy(fn, make_input) -> None:
    problems = eager_parity_problems(
        fn,
        lambda: (make_input(),),
        removes=("mutations_and_views",),
        tracing_modes=("real",),
        check_graph=False,  # the graph holds auto_functionalized_v2 by design
    )
    assert not problems, "\n".join(problems)
