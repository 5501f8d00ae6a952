"""Issue 15's programs, where the compile paths were wrong: each through the path that was.

Oracle: eager (outputs, inputs after the call, which outputs alias inputs); the hook runs
with `check=True` (the checker proves every rewrite, Inductor's contract included).

- f1: a scatter removed as a no-op whose base the program then overwrites;
- f2: a scatter through a dtype view, which Inductor lowers as a value conversion;
- f3, f4 and the random programs' forms: writes in place that Inductor fuses with reads of
  other elements of the same buffer (a flip, a roll);
- RAdam's foreach step: an out= destination that an earlier `_foreach_*_` rewrite erased;
- Adam(W) with amsgrad: `_foreach_maximum_`, which Inductor cannot lower, is not introduced
  (the hook allocates no more per step than stock Inductor);
- activation checkpointing: AOTAutograd's RNG higher-order ops, which carry no recorded
  value, through the backend.
"""

from __future__ import annotations

import pytest
import torch
from issue15_programs import ISSUE15_PROGRAMS

from fxinplace.compile import make_backend
from fxinplace.testing.harness.inductor_parity import compile_and_run
from fxinplace.testing.harness.memory import measure


def neg_of_flip_out(x):
    x[torch.tensor([0])] = 0.0
    torch.neg(x.flip(0), out=x)
    return x


def index_put_of_roll(x, pos):
    x[:, pos] = 1.0
    x.index_put_((torch.tensor([0]),), x.roll(1, 2) * 2.0)
    return x


def foreach_lerp_of_roll(x, pos):
    x[:, pos] = 1.0
    torch._foreach_lerp_([x], [x.roll(1, 0)], 0.5)
    return x


def foreach_copy_of_flip(x):
    torch._foreach_copy_([x], torch._foreach_add([x], [x.flip(1)]))
    return x


def index_put_through_dtype_view(x):
    v = x.cumsum(0)
    v.view(torch.int32)[torch.tensor([0, 3])] = 7
    return v


def dtype_view_then_index_put(x):
    x.view(torch.int32)[0] = 7
    x[torch.tensor([1])] = 2.0
    return x


PROGRAMS = {
    **ISSUE15_PROGRAMS,  # f1-f4
    "neg_of_flip_out": (neg_of_flip_out, lambda: (torch.arange(6.0).reshape(2, 3),)),
    "index_put_of_roll": (
        index_put_of_roll,
        lambda: (torch.arange(12.0).reshape(1, 3, 4), torch.tensor([1])),
    ),
    "foreach_lerp_of_roll": (
        foreach_lerp_of_roll,
        lambda: (torch.arange(12.0).reshape(3, 4), torch.tensor([2])),
    ),
    "foreach_copy_of_flip": (foreach_copy_of_flip, lambda: (torch.arange(12.0).reshape(3, 4),)),
    "index_put_through_dtype_view": (
        index_put_through_dtype_view,
        lambda: (torch.arange(12.0).reshape(4, 3),),
    ),
    "dtype_view_then_index_put": (dtype_view_then_index_put, lambda: (torch.arange(12.0).reshape(4, 3),)),
}


def _same(want, got, what: str) -> None:
    assert type(want) is type(got), what
    if isinstance(want, torch.Tensor):
        assert want.dtype == got.dtype and want.shape == got.shape, what
        assert torch.allclose(want, got, rtol=1e-6, atol=1e-6, equal_nan=True), f"{what}: {want} vs {got}"
    else:
        for k, (w, g) in enumerate(zip(want, got, strict=True)):
            _same(w, g, f"{what}[{k}]")


def _aliases(out, args) -> list[tuple[int, int]]:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [
        (i, j)
        for i, o in enumerate(outs)
        for j, a in enumerate(args)
        if isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
    ]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_hook_matches_eager(name: str) -> None:
    fn, make = PROGRAMS[name]
    want_args = make()
    want = fn(*want_args)
    got_args = make()
    run = compile_and_run(fn, lambda c: [c(*got_args)], hook=True, check=True)
    got = run.steps[0]
    _same(want, got, f"{name}: output")
    _same(tuple(want_args), tuple(got_args), f"{name}: inputs after the call")
    assert _aliases(got, got_args) == _aliases(want, want_args), f"{name}: output aliasing"


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_backend_matches_aot_eager(name: str) -> None:
    fn, make = PROGRAMS[name]
    results = {}
    for label, backend in (("aot_eager", "aot_eager"), ("fxinplace", make_backend(check=True))):
        torch._dynamo.reset()
        args = make()
        out = torch.compile(fn, backend=backend)(*args)
        results[label] = (out, args, _aliases(out, args))
    (want, want_args, want_alias), (got, got_args, got_alias) = results["aot_eager"], results["fxinplace"]
    leaves = torch.utils._pytree.tree_leaves
    for w, g in zip(leaves((want, want_args)), leaves((got, got_args)), strict=True):
        assert torch.equal(w, g), f"{name}: differs from aot_eager"
    assert got_alias == want_alias


def radam_core(a, b):
    """RAdam's foreach step, reduced: `where` writes into a `_foreach_sqrt` result whose
    getitem the `_foreach_sqrt_` rewrite erased."""
    zs = torch._foreach_sqrt(torch._foreach_sub([a, b], 4.0))
    w0 = torch.where(a > 5, zs[0], 0.0)
    w1 = torch.where(b > 5, zs[1], 0.0)
    return torch._foreach_mul([a, b], [w0, w1])


def test_radam_core_through_the_backend() -> None:
    a, b = torch.arange(1.0, 9.0), torch.arange(8.0, 0.0, -1.0)
    want = radam_core(a, b)
    torch._dynamo.reset()
    got = torch.compile(radam_core, backend=make_backend(check=True))(a, b)
    _same(tuple(want), tuple(got), "radam_core")


def _optimizer_steps(make_opt, *, hook: bool | None):
    """Two steps of `make_opt(params)` (eager when hook is None); the parameters and state
    after them, and the allocation stats of the second (compiled) step."""
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(16, 8)), torch.nn.Parameter(torch.randn(8))]
    opt = make_opt(params)

    def one(fn, k):
        g = torch.Generator().manual_seed(k)
        for p in params:
            p.grad = torch.randn(p.shape, generator=g)
        return fn()

    def observe():
        state = {f"p{i}": p.detach().clone() for i, p in enumerate(params)}
        for i, p in enumerate(params):
            for k, v in opt.state[p].items():
                if isinstance(v, torch.Tensor):
                    state[f"s{i}.{k}"] = v.detach().clone()
        return state

    if hook is None:
        one(opt.step, 0)
        one(opt.step, 1)
        return observe(), None
    stats = []

    def run(compiled):
        one(compiled, 0)
        stats.append(measure(lambda: one(compiled, 1))[0])
        return [observe()]

    result = compile_and_run(opt.step, run, hook=hook, check=hook)
    return result.steps[0], stats[0]


@pytest.mark.parametrize(
    "make_opt",
    [
        pytest.param(
            lambda ps: torch.optim.AdamW(ps, lr=1e-2, foreach=True, amsgrad=True), id="adamw_amsgrad"
        ),
        pytest.param(lambda ps: torch.optim.RAdam(ps, lr=1e-2, foreach=True), id="radam"),
    ],
)
def test_optimizer_steps_with_the_hook_cost_no_more_than_stock(make_opt) -> None:
    want, _ = _optimizer_steps(make_opt, hook=None)
    ours, ours_stats = _optimizer_steps(make_opt, hook=True)
    stock, stock_stats = _optimizer_steps(make_opt, hook=False)
    for k in want:
        assert torch.allclose(want[k], ours[k], rtol=1e-5, atol=1e-6), f"{k} differs from eager"
    assert ours_stats.allocated_bytes <= stock_stats.allocated_bytes, (ours_stats, stock_stats)
    assert ours_stats.peak_live_bytes <= stock_stats.peak_live_bytes, (ours_stats, stock_stats)
    assert set(stock) == set(ours)


def test_activation_checkpointing_through_the_backend() -> None:
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)

    def block(x):
        return torch.nn.functional.dropout(lin(x).relu(), 0.5, training=True) * 2

    def f(x):
        return checkpoint(block, x, use_reentrant=False).sum()

    results = []
    for backend in ("aot_eager", make_backend(check=True)):
        torch._dynamo.reset()
        torch.manual_seed(1)
        x = torch.randn(4, 8, requires_grad=True)
        lin.zero_grad()
        out = torch.compile(f, backend=backend)(x)
        out.backward()
        results.append((out.detach(), x.grad, lin.weight.grad.clone()))
    for w, g in zip(*results, strict=True):
        assert torch.equal(w, g)
