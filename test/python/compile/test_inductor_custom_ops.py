"""fxinplace.inductor with custom mutable ops (auto_functionalized v1 and v2): the bases
the op may write in place are left uncloned through Inductor's own
`meta["only_clone_these_tensors"]`, at least where Inductor's pass does, and the results
equal eager (inputs, slices of inputs, intermediates and their slices)."""

from __future__ import annotations

import pytest
import torch
from torch._inductor import config as inductor_config

from fxinplace.testing.harness.inductor_parity import compile_and_run


@torch.library.custom_op("fxinplace_inductor_test::scale_", mutates_args={"x"})
def scale_(x: torch.Tensor, by: float) -> None:
    x.mul_(by)


@scale_.register_fake
def _(x, by):
    return None


@torch.library.custom_op("fxinplace_inductor_test::mix_", mutates_args={"a", "b"})
def mix_(a: torch.Tensor, b: torch.Tensor) -> None:
    tmp = a.clone()
    a.add_(b)
    b.sub_(tmp)


@mix_.register_fake
def _(a, b):
    return None


def on_input(x):
    scale_(x, 2.0)
    return x.sum()


def on_input_slice(x):
    scale_(x[1:], 3.0)
    return x * 1


def on_intermediate(x):
    y = x.exp()
    scale_(y, 2.0)
    return y + 1


def on_intermediate_slice_read_later(x):
    y = x.exp()
    z = y[:2]
    scale_(z, 2.0)
    return y, y.sum()


def two_bases(x, y):
    a = x.clone()
    mix_(a, y)
    return a, y


def two_views_of_one_base(x):
    a = x.exp()
    mix_(a[0], a[1])
    return a


PROGRAMS = [on_input, on_input_slice, on_intermediate, on_intermediate_slice_read_later, two_bases]


def _args(fn):
    torch.manual_seed(0)
    n = 2 if fn is two_bases else 1
    return [torch.randn(4, 4) for _ in range(n)]


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("fn", [*PROGRAMS, two_views_of_one_base], ids=lambda f: getattr(f, "__name__", f))
def test_custom_mutable_ops(fn, version) -> None:
    want_args = _args(fn)
    want = fn(*want_args)
    with inductor_config.patch(enable_auto_functionalized_v2=version == "v2"):
        got_args = _args(fn)
        run = compile_and_run(fn, lambda c: c(*got_args), hook=True, shadow_stock=True, check=True)
    for w, g in zip(
        torch.utils._pytree.tree_leaves(want), torch.utils._pytree.tree_leaves(run.steps), strict=True
    ):
        assert torch.allclose(w, g, rtol=1e-5, atol=1e-6), f"{fn.__name__} ({version}): output"
    for w, g in zip(want_args, got_args, strict=True):
        assert torch.allclose(w, g, rtol=1e-5, atol=1e-6), f"{fn.__name__} ({version}): input after the call"
    stock_writes = sum(r.stock_writes for r in run.slots)
    assert run.writes >= stock_writes, f"{fn.__name__} ({version}): {run.writes} < Inductor's {stock_writes}"
    if fn in (on_input, on_intermediate, two_bases):
        assert run.writes > 0, f"{fn.__name__} ({version}): the base should be written in place"
