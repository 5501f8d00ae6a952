"""fxinplace.inductor: the native pass in Inductor's re-inplacing slot (issue 10).

Oracles: eager (values, inputs after the call), stock Inductor (values, generated kernel
count, and Inductor's own pass run on a copy of every graph at the slot: our rewrites are at
least as many), and the graph structure where a rewrite is promised. Programs where stock
Inductor is wrong (pytorch issues 197829/198031/198094's shapes) are checked against eager.
"""

from __future__ import annotations

import contextlib
import pathlib

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor.fx_passes import post_grad

import fxinplace.inductor as fi
from fxinplace.testing.harness.inductor_parity import compile_and_run

aten = torch.ops.aten


def _clone_args(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _check_against_eager(fn, make_args, *, dynamic=None, calls=1):
    """Compile `fn` with the hook (a fresh cache, Inductor's pass shadowing ours on a copy
    of each graph); outputs and inputs after each call equal eager's. Returns the run."""

    def seeded(k):
        torch.manual_seed(k)
        return make_args(k)

    eager_args = [seeded(k) for k in range(calls)]
    want = [fn(*a) for a in eager_args]

    def run(compiled):
        got_args = [seeded(k) for k in range(calls)]
        return [(compiled(*a), a) for a in got_args]

    result = compile_and_run(fn, run, hook=True, dynamic=dynamic, shadow_stock=True, check=True)
    for (got, got_args), w, w_args in zip(result.steps, want, eager_args, strict=True):
        flat_w, flat_g = torch.utils._pytree.tree_leaves(w), torch.utils._pytree.tree_leaves(got)
        for a, b in zip(flat_w, flat_g, strict=True):
            assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), f"{fn.__name__}: output differs from eager"
        for a, b in zip(w_args, got_args, strict=True):
            if isinstance(a, torch.Tensor):
                assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), f"{fn.__name__}: input after the call"
    return result


def _stock(fn, make_args, *, dynamic=None):
    return compile_and_run(fn, lambda c: [c(*make_args(0))], hook=False, dynamic=dynamic)


# ---- install / uninstall / caching


def test_install_and_uninstall_restore_inductor() -> None:
    stock = post_grad.reinplace_inplaceable_ops
    before = inductor_config.post_grad_custom_post_pass
    assert not fi.is_installed()
    fi.install()
    fi.install()  # idempotent
    assert fi.is_installed() and post_grad.reinplace_inplaceable_ops is fi.reinplace_for_inductor
    assert isinstance(inductor_config.post_grad_custom_post_pass, list)
    fi.uninstall()
    fi.uninstall()
    assert post_grad.reinplace_inplaceable_ops is stock
    assert inductor_config.post_grad_custom_post_pass is before
    with fi.installed():
        assert fi.is_installed()
    assert not fi.is_installed()


def test_a_users_custom_post_pass_is_kept() -> None:
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class Mine(CustomGraphPass):
        def __call__(self, graph):
            return None

        def uuid(self):
            return "mine"

    mine = Mine()
    # The user's pass runs only when Inductor compiles: a hit in the on-disk FX graph cache
    # (this test's own graph from an earlier run: the key is the same) skips every pass.
    with inductor_config.patch(post_grad_custom_post_pass=mine, force_disable_caches=True):
        with fi.installed():
            assert inductor_config.post_grad_custom_post_pass[0] is mine
        assert inductor_config.post_grad_custom_post_pass is mine


def test_an_inductor_that_takes_one_custom_pass_gets_one(monkeypatch) -> None:
    """Older Inductors (torch 2.11) call `post_grad_custom_post_pass` as one pass, never a
    list: the key alone, or the user's pass with the key chained on (theirs still runs)."""
    from torch._inductor.custom_graph_pass import CustomGraphPass

    monkeypatch.setattr(fi, "_inductor_takes_pass_lists", lambda: False)
    calls = []

    class Mine(CustomGraphPass):
        def __call__(self, graph):
            calls.append(graph)

        def uuid(self):
            return "mine"

    mine = Mine()
    with inductor_config.patch(post_grad_custom_post_pass=None):
        with fi.installed():
            assert isinstance(inductor_config.post_grad_custom_post_pass, fi.CacheKey)
        assert inductor_config.post_grad_custom_post_pass is None
    # The user's pass runs only when Inductor compiles: a hit in the on-disk FX graph cache
    # (this test's own graph from an earlier run: the key is the same) skips every pass.
    with inductor_config.patch(post_grad_custom_post_pass=mine, force_disable_caches=True):
        with fi.installed():
            chained = inductor_config.post_grad_custom_post_pass
            assert not isinstance(chained, list) and chained.uuid()[0] == "mine"
            torch._dynamo.reset()
            x = torch.arange(32.0).reshape(4, 8)
            torch.compile(lambda t: t.index_put_((torch.arange(2),), t[:2] * 2.0).sin())(x)
            assert calls  # the user's pass ran through the chain
        assert inductor_config.post_grad_custom_post_pass is mine


def test_the_cache_key_hashes_the_pass_and_the_checker_sources() -> None:
    """A change to the pass (or the checker it runs with check=True) must change the key."""
    sources = {
        pathlib.Path(p).relative_to(pathlib.Path(fi.__file__).parent).as_posix() for p in fi._python_sources()
    }
    assert {"_reinplace/__init__.py", "_reinplace/apply.py", "_reinplace/inductor_policy.py"} <= sources
    assert {"_reinplace/auto_functionalized/v2.py", "_checker/rules.py"} <= sources


def test_the_hook_is_part_of_the_fx_graph_cache_key() -> None:
    """A graph compiled without the hook is never served to a compile with it (the slot
    runs), and the reverse; caching stays on for both."""
    from torch._dynamo.utils import counters
    from torch._inductor.utils import fresh_cache

    calls = []
    original = fi.reinplace_for_inductor

    def spy(updater, graph):
        calls.append(graph)
        original(updater, graph)

    def f(a, b):
        return (a * b).sin() + 1

    args = [torch.randn(4, 8), torch.randn(4, 8)]

    def compile_once(hook):
        torch._dynamo.reset()
        counters.clear()
        with fi.installed() if hook else contextlib.nullcontext():
            torch.compile(f)(*args)
        return counters["inductor"]["fxgraph_cache_hit"]

    fi.reinplace_for_inductor = spy  # what install() puts in the slot
    try:
        with fresh_cache():
            assert compile_once(False) == 0
            assert compile_once(True) == 0 and len(calls) == 1
            assert compile_once(False) == 1
            assert compile_once(True) == 1 and len(calls) == 1
    finally:
        fi.reinplace_for_inductor = original
        torch._dynamo.reset()


# ---- what Inductor's contract allows: no pointwise op_ rewrites


def test_pointwise_ops_stay_functional_and_inductor_fuses_them() -> None:
    """The issue's 4-op program: as FX-level `add_` into `m`, Inductor fused `mul` with it
    and ran the mm after, a wrong `g`. The Inductor policy leaves pointwise ops alone."""

    def f(a, b, c, w):
        m = a * b
        g = m.reshape(-1, 8) @ w
        s = m + c
        return g, s

    def make(k):
        torch.manual_seed(k)
        return [torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8), torch.randn(8, 8)]

    run = _check_against_eager(f, make)
    assert run.writes == 0 and all(r.same_as_stock for r in run.slots)
    assert run.kernels <= _stock(f, make).kernels


def test_graph_without_candidates_is_left_untouched_with_a_reason() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    import fxinplace

    def f(x):
        return (x * 2).sin().cos()

    gm = make_fx(f)(torch.randn(4))
    before = gm.code
    report = fxinplace.reinplace_report(gm, torch.randn(4), policy="inductor")
    assert gm.code == before
    assert "policy='inductor'" in report.explain()


# ---- what Inductor's pass does, and more


class _KVCache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(2, 16, 8))

    def forward(self, new, pos):
        self.cache[:, pos] = new
        return self.cache.sum(1)


def test_kv_cache_write_goes_into_the_cache_in_place() -> None:
    torch.manual_seed(0)
    eager, compiled = _KVCache(), _KVCache()

    def make(k):  # pos as an index tensor: cache[:, pos] = new is an index_put
        return [torch.full((2, 1, 8), float(k + 1)), torch.tensor([k])]

    want = [eager(*make(k)) for k in range(3)]
    result = compile_and_run(
        compiled, lambda c: [c(*make(k)) for k in range(3)], hook=True, shadow_stock=True, check=True
    )
    for w, g in zip(want, result.steps, strict=True):
        assert torch.equal(w, g)
    assert torch.equal(eager.cache, compiled.cache)
    assert result.writes >= sum(r.stock_writes for r in result.slots) > 0


def test_a_scatter_into_an_intermediate_stays_functional_for_fusion() -> None:
    def f(x, src):
        a = x.relu()
        a[1] = src  # select_scatter into a: fused with relu when functional
        return a * 2

    def make(k):
        return [torch.randn(4, 8), torch.randn(8)]

    run = _check_against_eager(f, make)
    assert run.writes == 0
    assert run.kernels <= _stock(f, make).kernels


def test_an_as_strided_scatter_is_always_written_in_place() -> None:
    def f(x, src):
        a = x.exp()
        a.as_strided((2, 2), (4, 1), 1).copy_(src)
        return a + 1

    def make(k):
        return [torch.randn(4, 4), torch.randn(2, 2)]

    run = _check_against_eager(f, make)
    assert run.writes >= sum(r.stock_writes for r in run.slots)


def test_index_put_into_an_intermediate() -> None:
    def f(x, idx, v):
        a = x @ x
        b = torch.index_put(a, (idx,), v)
        return b.sum(0)

    def make(k):
        return [torch.randn(6, 6), torch.tensor([0, 3]), torch.randn(2, 6)]

    run = _check_against_eager(f, make)
    assert run.writes >= sum(r.stock_writes for r in run.slots) > 0


def test_extern_kernels_with_an_in_place_form_are_written_in_place() -> None:
    """Beyond Inductor's table: `uniform` runs as a library kernel (with fallback_random),
    so `uniform_` into the dead buffer saves its allocation and loses no fusion."""

    def f(x):
        a = x * 2
        b = aten.uniform(a)
        return b + 1

    def make(k):
        torch.manual_seed(0)
        return [torch.randn(64, 8)]

    with inductor_config.patch(fallback_random=True):

        def seeded(x):
            return f(x)

        torch.manual_seed(0)
        want = f(*make(0))
        result = compile_and_run(
            seeded, lambda c: [(torch.manual_seed(0), c(*make(0)))[1]], hook=True, shadow_stock=True
        )
        assert torch.equal(want, result.steps[0])
        assert result.writes == 1 and sum(r.stock_writes for r in result.slots) == 0
        assert result.kernels <= _stock(f, make).kernels


# ---- pytorch issues where Inductor's own pass is wrong (197829 / 198031, 198094)


def transposed_values(x, idx):
    """index_put into x of values that are x transposed: written in place, later rows would
    read columns already overwritten (another operand aliases the mutated input)."""
    y = torch.index_put(x, (idx,), x.t())
    x.copy_(y)
    return x.sum(0)


def other_value_written_back(x, idx, v):
    """The epilogue copies z, not the index_put's result y, which is also returned: y may
    not live in x, or the copy_ would overwrite it."""
    y = torch.index_put(x, (idx,), v)
    z = y * 2
    x.copy_(z)
    return y


@pytest.mark.parametrize(
    "fn, make",
    [
        (transposed_values, lambda k: [torch.arange(16.0).reshape(4, 4), torch.arange(4)]),
        (
            other_value_written_back,
            lambda k: [torch.arange(8.0).reshape(4, 2), torch.tensor([0, 2]), torch.ones(2)],
        ),
    ],
    ids=["197829_operand_aliases_input", "198094_epilogue_copies_another_value"],
)
def test_where_inductors_pass_is_wrong(fn, make) -> None:
    run = _check_against_eager(fn, make)
    assert run.writes == 0, "the write would be unsound"


# ---- dynamic shapes


def test_dynamic_shapes() -> None:
    def f(x, idx, v):
        a = x.exp()
        b = torch.index_put(a, (idx,), v)
        return b.cos()

    def make(k):
        n = 6 + 2 * k
        return [torch.randn(n, 4), torch.tensor([0, n - 1]), torch.randn(2, 4)]

    run = _check_against_eager(f, make, dynamic=True, calls=2)
    assert run.writes >= sum(r.stock_writes for r in run.slots) > 0


def test_unsafe_index_put_becomes_inductors_in_place_prim() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    import fxinplace

    def f(x, idx, v):
        a = x * 2
        b = aten._unsafe_index_put(a, [idx], v)
        return b + 1

    args = (torch.randn(4, 3), torch.tensor([0, 2]), torch.randn(2, 3))
    gm = make_fx(f)(*args)
    fxinplace.reinplace(gm, *args, policy="inductor", check=True)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.prims._unsafe_index_put_.default in targets
    assert aten.add_.Tensor not in targets and aten.mul_.Tensor not in targets
    assert torch.equal(gm(*args), f(*args))


def test_rewritten_and_inserted_nodes_carry_fake_values() -> None:
    """Lowering reads `meta['val']`: every node the pass rewrites or inserts (here
    `index_put_`, and the `as_strided` view + `copy_` of a scatter) has one, of the shape
    the node produces."""
    seen = []
    original = fi.reinplace_for_inductor

    def spy(updater, graph):
        original(updater, graph)
        seen.append([(n.name, n.target, n.meta.get("val")) for n in graph.nodes if n.op == "call_function"])

    def f(x, idx, v, src):
        a = x.exp()
        b = torch.index_put(a, (idx,), v)
        b.as_strided((2, 2), (4, 1), 1).copy_(src)
        return b + 1

    def make(k):
        return [torch.randn(4, 4), torch.tensor([0, 3]), torch.randn(2, 4), torch.randn(2, 2)]

    fi.reinplace_for_inductor = spy
    try:
        _check_against_eager(f, make)
    finally:
        fi.reinplace_for_inductor = original
    (nodes,) = seen
    targets = {t for _, t, _ in nodes}
    assert aten.index_put_.default in targets and aten.copy_.default in targets
    for name, target, val in nodes:
        if target in (aten.index_put_.default, aten.copy_.default, aten.as_strided.default):
            assert isinstance(val, torch.Tensor), f"{name} ({target}) has no meta['val']"
