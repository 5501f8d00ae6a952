"""The checker from fake example inputs: AOTAutograd hands a compiler FakeTensors, inside
its fake mode (forward) or outside any (a backward compiled at the first backward call).
Only the inputs' sizes, strides, offsets, dtypes and storage sharing matter to the
checker, so it proves the same things from fake args as from real ones, whatever fake
mode is active; symbolic sizes are checked at their hints. Where it cannot work from
fakes (a size with no hint, an op whose output depends on values) it says so."""

from __future__ import annotations

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

import fxinplace
import fxinplace.compile as fx_compile
from fxinplace._checker import copy_functional
from fxinplace.testing.harness.compile_programs import program

_aten = torch.ops.aten


def _f(x):
    y = x + 1
    z = y * 2
    return z.relu(), y.sum()


def _g(x):
    """_f with a view whose sizes are computed from x's (sym_size nodes when traced symbolically)."""
    y = x + 1
    z = y.view(x.shape[0] // 2, 2) * 2
    return z.relu(), y.sum()


def _rewritten(wrong: bool, *, fn=_f, tracing_mode: str = "real", args=None):
    """(functional graph, its rewrite): the pass's, or a wrong one (mul_ into y, read later)."""
    args = args or (torch.arange(-3.0, 3.0),)
    gm = make_fx(fn, tracing_mode=tracing_mode)(*args)
    functional = copy_functional(gm)
    if wrong:
        (mul,) = [n for n in gm.graph.nodes if n.target is _aten.mul.Tensor]
        mul.target = _aten.mul_.Tensor
        gm.recompile()
    else:
        fxinplace.reinplace(gm, *args)
    return functional, gm


def _args(kind: str) -> tuple[tuple, FakeTensorMode | None]:
    """Sample args of a kind, and the fake mode to have active around the check (or None)."""
    x = torch.arange(-3.0, 3.0)
    mode = FakeTensorMode()
    if kind == "real":
        return (x,), None
    if kind == "real in a fake mode":
        return (x,), mode
    fake = mode.from_tensor(x)
    return (fake,), (mode if kind == "fake in its mode" else None)


KINDS = ["real", "real in a fake mode", "fake", "fake in its mode"]


def _check(functional, gm, args, mode, **kwargs) -> None:
    if mode is None:
        fxinplace.check_reinplaced(functional, gm, *args, **kwargs)
    else:
        with mode:
            fxinplace.check_reinplaced(functional, gm, *args, **kwargs)


@pytest.mark.parametrize("kind", KINDS)
def test_a_correct_rewrite_checks_cleanly(kind: str) -> None:
    args, mode = _args(kind)
    functional, gm = _rewritten(False)
    assert _aten.relu_.default in [n.target for n in gm.graph.nodes], gm.code
    _check(functional, gm, args, mode)


@pytest.mark.parametrize("kind", KINDS)
def test_a_wrong_rewrite_is_caught_the_same(kind: str) -> None:
    args, mode = _args(kind)
    functional, gm = _rewritten(True)
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        _check(functional, gm, args, mode)
    error = info.value
    assert not error.cannot_check and error.reason == "wrong_value" and error.node == "sum_1", error
    assert (
        "which holds mul's value at [0] (written by mul); the functional graph has add's value at [0]"
        in str(error)
    ), error


def _write_back_graphs() -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    """F: a = add(x, 1); b = mul(y, 2); copy_(x, a); return b.
    R: add_(x, 1); b = mul(y, 2); return b, right only while y does not share x's memory."""
    graphs = []
    for rewritten in (False, True):
        g = torch.fx.Graph()
        x, y = g.placeholder("x"), g.placeholder("y")
        target = _aten.add_.Tensor if rewritten else _aten.add.Tensor
        add = g.create_node("call_function", target, (x, 1), name="add")
        mul = g.create_node("call_function", _aten.mul.Tensor, (y, 2), name="mul")
        if not rewritten:
            g.create_node("call_function", _aten.copy_.default, (x, add), name="copy_")
        g.output((mul,))
        graphs.append(torch.fx.GraphModule(torch.nn.Module(), g))
    return graphs[0], graphs[1]


@pytest.mark.parametrize("fake", [False, True])
@pytest.mark.parametrize("shared", [False, True])
def test_fake_args_share_storage_as_the_real_ones_do(fake: bool, shared: bool) -> None:
    functional, gm = _write_back_graphs()
    x = torch.arange(4.0)
    y = x[:] if shared else torch.arange(4.0)
    args = (x, y)
    if fake:
        mode = FakeTensorMode()
        args = tuple(mode.from_tensor(a) for a in args)
        assert (args[0].untyped_storage()._cdata == args[1].untyped_storage()._cdata) == shared
    if not shared:
        fxinplace.check_reinplaced(functional, gm, *args, inputs_written_back_may_be_written=True)
        return
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *args, inputs_written_back_may_be_written=True)
    assert info.value.reason == "wrong_value" and info.value.node == "mul", info.value


def _symbolic(x: torch.Tensor) -> tuple[torch.Tensor, FakeTensorMode]:
    mode = FakeTensorMode(shape_env=ShapeEnv())
    fake = mode.from_tensor(
        x, symbolic_context=StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DYNAMIC] * x.dim())
    )
    assert isinstance(fake.shape[0], torch.SymInt)
    return fake, mode


@pytest.mark.parametrize("wrong", [False, True])
def test_symbolic_sizes_are_checked_at_their_hints(wrong: bool) -> None:
    x = torch.arange(-3.0, 3.0)
    fake, mode = _symbolic(x)
    functional, gm = _rewritten(wrong, fn=_g, tracing_mode="symbolic", args=(x,))
    assert _aten.sym_size.int in [n.target for n in gm.graph.nodes], gm.code
    if not wrong:
        with mode:
            fxinplace.check_reinplaced(functional, gm, fake)
        return
    with pytest.raises(fxinplace.ReinplaceCheckError) as info, mode:
        fxinplace.check_reinplaced(functional, gm, fake)
    assert info.value.reason == "wrong_value" and not info.value.cannot_check, info.value


def test_a_size_without_a_hint_cannot_be_checked() -> None:
    shape_env = ShapeEnv()
    mode = FakeTensorMode(shape_env=shape_env)
    with mode:
        unbacked = torch.empty(shape_env.create_unbacked_symint())
    functional, gm = _rewritten(False)
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, unbacked)
    error = info.value
    assert error.cannot_check and error.reason == "cannot_check", error
    assert "sample arg x_1 has a symbolic size or value with no hint" in str(error), error


def test_a_data_dependent_op_cannot_be_checked_from_fake_args() -> None:
    def f(x):
        return x.nonzero() + 1

    x = torch.tensor([0.0, 1.0, 2.0])
    gm = make_fx(f)(x)
    functional = copy_functional(gm)
    fxinplace.check_reinplaced(functional, gm, x)  # real args: fine
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, FakeTensorMode().from_tensor(x))
    error = info.value
    assert error.cannot_check and error.reason == "cannot_check", error
    assert not isinstance(error, fxinplace.FunctionalGraphRaisedError), error
    assert "node nonzero (aten.nonzero.default) cannot run on fake example inputs" in str(error), error


@pytest.mark.parametrize("dynamic", [False, True])
def test_batchnorm_training_through_the_backend_checks(dynamic: bool) -> None:
    """Forward graphs get fake inputs inside AOTAutograd's fake mode, the backward outside any;
    BatchNorm's running stats are written-back inputs."""
    seen = []

    def inner(gm, example_inputs):
        seen.append(example_inputs)
        return fx_compile._run_as_is(gm, example_inputs)

    torch._dynamo.reset()
    s = program("batchnorm_train").setup()
    eager = program("batchnorm_train").setup()
    f = torch.compile(s.target, backend=fx_compile.make_backend(inner, check=True), dynamic=dynamic)
    for _ in range(2):
        got, want = s.step(f), eager.step(eager.target)
        for k in want:
            assert torch.allclose(got[k], want[k], rtol=1e-4, atol=1e-5), k
    assert len(seen) >= 2  # forward and backward
    assert all(isinstance(a, FakeTensor) for inputs in seen for a in inputs if isinstance(a, torch.Tensor))
    symbolic = any(
        isinstance(d, torch.SymInt)
        for inputs in seen
        for a in inputs
        if isinstance(a, torch.Tensor)
        for d in a.shape
    )
    assert symbolic == dynamic
