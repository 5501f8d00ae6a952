"""Differential tests of ``fxinplace.functionalize`` on the hand-written corpus.

Every case of the corpus (``corpus/functionalize/``) runs in both ``remove`` modes
through ``fxinplace.testing.harness.functionalize_differential.check_functionalize`` (eager vs the
implementation, eagerly and traced with ``make_fx`` in "real" and "fake" mode,
plus ``torch.func.functionalize`` as an oracle).

``FXINPLACE_FUNCTIONALIZE_IMPL=stock`` tests ``torch.func.functionalize`` instead
of ``fxinplace.functionalize`` (to validate the harness and the corpus); cases
marked ``stock_fails`` are then expected to fail (xfail) and must fail.
"""

from __future__ import annotations

import pytest
import torch
from corpus.functionalize import PROGRAMS, case_by_name
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace  # noqa: F401 - the package under test (fxinplace.functionalize)
from fxinplace.testing.harness.functionalize_differential import (
    IMPL,
    IMPL_NAME,
    REMOVE_MODES,
    FunctionalizeCase,
    check_functionalize,
    format_problems,
    stock_fails,
)


@pytest.mark.parametrize("remove", REMOVE_MODES)
@pytest.mark.parametrize("case", PROGRAMS, ids=lambda c: c.name)
def test_functionalize_case(case: FunctionalizeCase, remove: str) -> None:
    problems = check_functionalize(case, IMPL, remove)
    if IMPL_NAME == "stock" and stock_fails(case, remove):
        if not problems:
            pytest.fail(f"{case.name} is marked stock_fails for remove={remove!r} but stock passes")
        pytest.xfail(f"known stock failure: {case.stock_fails_reason}")
    assert not problems, format_problems(case, remove, problems)


# --------------------------------------------------------------------------- corpus and harness


def test_corpus_shape() -> None:
    names = [c.name for c in PROGRAMS]
    assert len(names) >= 60
    assert len(set(names)) == len(names), "case names must be unique"
    marked = [c.name for c in PROGRAMS if c.stock_fails]
    # The stock oracle must keep covering the bulk of the corpus.
    assert len(marked) <= len(names) // 10, f"too many cases marked stock_fails: {marked}"
    assert any(c.inference_mode for c in PROGRAMS)


def _identity_impl(func, *, remove="mutations"):
    """Broken: leaves every mutation (and view) in place."""
    return func


def _drops_input_mutations(func, *, remove="mutations"):
    """Broken: functionalizes a copy of the inputs, so input mutations are lost."""

    def wrapped(*args):
        return torch.func.functionalize(func, remove=remove)(*[a.clone() for a in args])

    return wrapped


def _keeps_views(func, *, remove="mutations"):
    """Broken for remove='mutations_and_views': keeps view ops."""
    return torch.func.functionalize(func, remove="mutations")


@pytest.mark.parametrize(
    ("impl_fn", "case_name", "remove", "expected"),
    [
        (_identity_impl, "view_inplace_updates_base", "mutations", "mutating op left in the graph"),
        (_identity_impl, "input_add_", "mutations", "mutating op left in the graph"),
        (_drops_input_mutations, "input_add_", "mutations", "input post-state value: input[0]"),
        (_drops_input_mutations, "input_two_inputs_mutated", "mutations_and_views", "value: input[1]"),
        (_keeps_views, "chain_diagonal", "mutations_and_views", "view op left"),
    ],
)
def test_harness_flags_broken_impl(impl_fn, case_name: str, remove: str, expected: str) -> None:
    problems = check_functionalize(case_by_name(case_name), impl_fn, remove, check_stock=False)
    assert any(expected in p for p in problems), "\n".join(problems) or "<no problems reported>"


def test_harness_flags_input_aliasing_output() -> None:
    """An output that aliases an input where eager's does not is reported."""

    def fn(x):
        return x + 1

    def aliasing_impl(func, *, remove="mutations"):
        def wrapped(x):
            return x.add_(1)  # right values, wrong aliasing (and wrong input post-state)

        return wrapped

    case = FunctionalizeCase("aliasing_probe", fn, lambda: (torch.arange(3.0),))
    problems = check_functionalize(case, aliasing_impl, "mutations", check_stock=False)
    assert any("output/input aliasing: output[0] aliases inputs [0]" in p for p in problems), problems


# --------------------------------------------------------------------------- custom mutable ops


@torch.library.custom_op("fxinplace_functionalize_test::add_one_", mutates_args={"x"})
def _add_one_(x: torch.Tensor) -> None:
    x.add_(1)


@_add_one_.register_fake
def _(x: torch.Tensor) -> None:
    return None


def test_stock_functionalize_rejects_custom_mutable_op() -> None:
    """Records torch 2.13's behaviour: functionalize refuses a mutable custom op.

    ``torch.library.custom_op`` with ``mutates_args`` gives the schema
    ``(Tensor(a0!) x) -> ()``; functionalization's fallback for non-ATen ops
    rejects any alias annotation (the auto_functionalized HOP is only used by
    ``torch.compile``/AOTAutograd, not by ``torch.func.functionalize``).
    """

    def f(x):
        y = x.clone()
        _add_one_(y)
        return y

    assert str(torch.ops.fxinplace_functionalize_test.add_one_.default._schema).endswith(
        "(Tensor(a0!) x) -> ()"
    )
    assert torch.equal(f(torch.zeros(3)), torch.ones(3))  # fine eagerly
    with pytest.raises(
        RuntimeError, match="Found a custom \\(non-ATen\\) operator whose output has alias annotations"
    ):
        make_fx(torch.func.functionalize(f))(torch.zeros(3))
