"""torch.compile(m, backend="fxinplace") and fxinplace.compile.make_backend (issue 9).

Oracles: eager (values, close: compiled graphs may reorder float math) and the same
AOTAutograd graphs without the pass (``policy="none"``: bitwise equal, since re-inplacing
changes where values live, not how they are computed); graph structure where a rewrite
is promised (the KV-cache update writes the cache in place, the copy_ goes). Every graph
the pass rewrites is proven by the checker (``check=True``, ``CHECKED``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch
from functorch.compile import make_boxed_func

import fxinplace
import fxinplace.compile as fx_compile
from fxinplace.testing.harness.compile_programs import PROGRAMS, CacheUpdate, KVViewsDecoder, program

# The backend with every rewritten graph (forward, backward, inference) proven by
# fxinplace.check_reinplaced.
CHECKED = fx_compile.make_backend(check=True)


def _steps(setup, fn, n=2):
    return [setup.step(fn) for _ in range(n)]


def _run(name: str, backend, *, dynamic: bool | None = None, n: int = 2):
    torch._dynamo.reset()
    s = program(name).setup()
    return _steps(s, torch.compile(s.target, backend=backend, dynamic=dynamic), n)


def _close(want, got, what: str) -> None:
    assert len(want) == len(got)
    for step, (w, g) in enumerate(zip(want, got, strict=True)):
        assert w.keys() == g.keys(), what
        for k in w:
            assert w[k].dtype == g[k].dtype and w[k].shape == g[k].shape, f"{what}: step {step} {k}"
            assert torch.allclose(w[k], g[k], rtol=1e-4, atol=1e-5, equal_nan=True), (
                f"{what}: step {step} {k}"
            )


def _equal(want, got, what: str) -> None:
    for step, (w, g) in enumerate(zip(want, got, strict=True)):
        for k in w:
            assert torch.equal(w[k], g[k]), (
                f"{what}: step {step} {k} differs from the graphs without the pass"
            )


STATIC = [p.name for p in PROGRAMS]
DYNAMIC = [
    "gpt2_infer",
    "llama_train",
    "batchnorm_train",
    "kv_cache_decode",
    "kv_views_decode",
    "adamw_foreach",
]


@pytest.mark.parametrize("name", STATIC)
def test_compiled_program_equals_eager_and_the_unreinplaced_graphs(name: str) -> None:
    s = program(name).setup()
    eager = _steps(s, s.target)
    ours = _run(name, CHECKED)
    _close(eager, ours, f"{name} vs eager")
    _equal(_run(name, fx_compile.make_backend(policy="none")), ours, name)


@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic_shapes(name: str) -> None:
    s = program(name).setup()
    eager = _steps(s, s.target, n=3)
    _close(eager, _run(name, CHECKED, dynamic=True, n=3), f"{name} (dynamic=True) vs eager")


def _captured(module: torch.nn.Module, *args, dynamic: bool | None = None, **options):
    graphs = []

    def inner(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    backend = fx_compile.make_backend(inner, check=True, **options)
    compiled = torch.compile(module, backend=backend, dynamic=dynamic)
    with torch.no_grad():
        out = compiled(*args)
    return graphs, out


def _targets(gm: torch.fx.GraphModule) -> list:
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_a_cache_update_writes_the_cache_in_place() -> None:
    """cache.index_copy_(2, pos, new): AOTAutograd's graph computes a new cache and copies it
    back; with the pass the cache is written in place and the copy_ goes."""
    m = CacheUpdate(mib=1)
    new, pos = torch.ones(1, 16, 1, 512), torch.tensor([3])
    graphs, out = _captured(m, new, pos)
    (gm,) = graphs
    targets = _targets(gm)
    assert torch.ops.aten.index_copy_.default in targets, gm.code
    assert torch.ops.aten.index_copy.default not in targets, gm.code
    assert torch.ops.aten.copy_.default not in targets, gm.code
    assert torch.equal(m.cache[:, :, 3], torch.ones(1, 16, 512))
    assert out.item() == m.cache[:, :, :8].sum().item()
    stock_graphs, _ = _captured(CacheUpdate(mib=1), new, pos, policy="stock")
    assert torch.ops.aten.copy_.default in _targets(stock_graphs[0]), "the stock rules keep the copy"


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_caches_that_are_views_of_one_tensor_are_written_in_place(dynamic: bool) -> None:
    """k = kv[0], v = kv[1] of one buffer (a paged cache's layout): torch.compile passes them
    as two graph inputs sharing a storage. They share no element, so each cache is written
    in place like a cache of its own, and both copy_s go. Under dynamic shapes v's storage
    offset is a symbol of its own; AOTAutograd passes such inputs separately only when they
    do not overlap (and guards on it), which the backend relies on."""
    torch.manual_seed(0)
    m, eager = KVViewsDecoder(), KVViewsDecoder()
    eager.load_state_dict(m.state_dict())
    x, pos = torch.randn(2, 1, 64), torch.tensor([2])
    graphs, out = _captured(m, x, pos, dynamic=dynamic)
    (gm,) = graphs
    targets = _targets(gm)
    assert targets.count(torch.ops.aten.index_copy_.default) == 2, gm.code
    assert torch.ops.aten.index_copy.default not in targets, gm.code
    assert torch.ops.aten.copy_.default not in targets, gm.code
    with torch.no_grad():
        want = eager(x, pos)
    assert torch.allclose(out, want, rtol=1e-5, atol=1e-6)
    assert torch.equal(m.kv, eager.kv) and m.k_cache.data_ptr() != m.v_cache.data_ptr()
    assert m.v_cache.untyped_storage().data_ptr() == m.kv.untyped_storage().data_ptr()


def test_no_output_comes_to_alias_an_input() -> None:
    """y = x * 2; x.copy_(y); return y: computing y in x's memory would return x itself."""

    def f(x):
        y = x * 2
        x.copy_(y)
        return y

    x = torch.arange(4.0)
    torch._dynamo.reset()
    y = torch.compile(f, backend="fxinplace", options={"check": True})(x)
    assert torch.equal(x, torch.arange(4.0) * 2) and torch.equal(y, x)
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_the_inner_compiler_gets_the_reinplaced_graphs_with_fake_inputs() -> None:
    seen = []

    def inner(gm, example_inputs):
        seen.append((gm, example_inputs))
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    f = torch.compile(lambda x: (x + 1).relu() * 3, backend=fx_compile.make_backend(inner, check=True))
    x = torch.randn(8)
    assert torch.allclose(f(x), (x + 1).relu() * 3)
    ((gm, example_inputs),) = seen
    assert isinstance(example_inputs[0], torch._subclasses.FakeTensor)
    assert torch.ops.aten.relu_.default in _targets(gm) and torch.ops.aten.mul_.Tensor in _targets(gm), (
        gm.code
    )


def test_options_are_validated() -> None:
    torch._dynamo.reset()
    f = torch.compile(lambda x: x + 1, backend="fxinplace", options={"explian": True})
    with pytest.raises(Exception, match="fxinplace.compile: unknown option"):
        f(torch.ones(2))
    with pytest.raises(ValueError, match="fxinplace.compile: unknown policy"):
        fx_compile.make_backend(policy="fast")


def test_explain_logs_every_decision(caplog: pytest.LogCaptureFixture) -> None:
    torch._dynamo.reset()
    with caplog.at_level("INFO", logger="fxinplace.compile"):
        torch.compile(lambda x: (x * 2).sin(), backend="fxinplace", options={"explain": True, "check": True})(
            torch.ones(3)
        )
    text = caplog.text
    assert "fxinplace: inference graph" in text and "sin: inplace: done" in text, text


def test_found_by_name_without_an_import() -> None:
    """The entry point (torch_dynamo_backends) makes the name known to a fresh interpreter."""
    code = textwrap.dedent(
        """
        import sys, torch
        f = torch.compile(lambda x: (x + 1).cos(), backend="fxinplace", options={"check": True})
        x = torch.arange(3.0)
        assert torch.allclose(f(x), (x + 1).cos())
        assert "fxinplace" in torch._dynamo.list_backends(), torch._dynamo.list_backends()
        assert "fxinplace.compile" in sys.modules
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_foreach_ops_become_their_in_place_forms() -> None:
    """_foreach_mul(xs, 2) with every x dead afterwards -> _foreach_mul_(xs, 2); with one read
    later, the whole node stays (the in-place form writes every element)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def dead(a, b):
        xs = [a + 1, b + 1]
        ys = torch._foreach_mul(xs, 2.0)
        return ys[0] + 1, ys[1]

    def read_later(a, b):
        xs = [a + 1, b + 1]
        ys = torch._foreach_mul(xs, 2.0)
        return ys[0], ys[1], xs[1] * 3

    args = (torch.arange(3.0), torch.arange(4.0))
    for fn, in_place in ((dead, True), (read_later, False)):
        gm = make_fx(fn)(*args)
        fxinplace.reinplace(gm, *args, check=True)
        targets = _targets(gm)
        assert (torch.ops.aten._foreach_mul_.Scalar in targets) == in_place, gm.code
        want = fn(*args)
        for w, g in zip(want, gm(*args), strict=True):
            assert torch.equal(w, g), gm.code
