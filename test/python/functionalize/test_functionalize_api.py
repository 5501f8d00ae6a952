"""fxinplace.functionalize: its contract, its dispatch key, custom mutable ops and bad input.

The differential corpus (eager and torch.func.functionalize as oracles) is in
test_functionalize_corpus.py; this file checks what a corpus cannot: errors,
the registered key, and the exact form custom mutable ops take in the graph.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace


@torch.library.custom_op("fxinplace_api_test::add_one_", mutates_args={"x"})
def add_one_(x: torch.Tensor) -> None:
    x.add_(1)


@torch.library.custom_op("fxinplace_api_test::scale_and_sum_", mutates_args={"x", "y"})
def scale_and_sum_(x: torch.Tensor, y: torch.Tensor, factor: float) -> torch.Tensor:
    x.mul_(factor)
    y.add_(factor)
    return x.sum() + y.sum()


torch.library.define("fxinplace_api_test::my_view", "(Tensor(a) x) -> Tensor(a)")


@torch.library.impl("fxinplace_api_test::my_view", "CompositeExplicitAutograd")
def _my_view(x: torch.Tensor) -> torch.Tensor:
    return x.view(-1)


def _add_one_to_a_slice_of_a_clone(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    add_one_(y[1:])
    return y


def _targets(gm: torch.fx.GraphModule) -> list[object]:
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_fallback_owns_its_dispatch_key() -> None:
    fxinplace.functionalize(lambda x: x + 1)(torch.ones(2))
    assert fxinplace._functionalize.DISPATCH_KEY == "DeferredInit"
    assert torch._C._dispatch_has_backend_fallback(torch._C._dispatch_key_parse("DeferredInit"))


def test_the_dispatch_key_is_claimed_on_first_use_not_at_import() -> None:
    """Users who only compile or re-inplace never lose the key to fxinplace."""
    code = (
        "import torch, fxinplace, fxinplace.compile, fxinplace.inductor\n"
        "key = torch._C._dispatch_key_parse('DeferredInit')\n"
        "assert not torch._C._dispatch_has_backend_fallback(key), 'claimed at import'\n"
        "f = fxinplace.functionalize(lambda x: x.add_(1))\n"
        "assert not torch._C._dispatch_has_backend_fallback(key), 'claimed when wrapping'\n"
        "f(torch.ones(2)); f(torch.ones(2))\n"
        "assert torch._C._dispatch_has_backend_fallback(key), 'not claimed at the first call'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_remove_must_be_a_known_mode() -> None:
    with pytest.raises(ValueError, match="remove must be"):
        fxinplace.functionalize(lambda x: x, remove="views")


def test_nesting_inside_itself_is_rejected() -> None:
    inner = fxinplace.functionalize(lambda x: x.add_(1))
    with pytest.raises(RuntimeError, match="cannot be nested inside another fxinplace.functionalize"):
        fxinplace.functionalize(inner)(torch.ones(2))


def test_nesting_inside_torch_func_functionalize_is_rejected() -> None:
    inner = fxinplace.functionalize(lambda x: x.add_(1))
    with pytest.raises(RuntimeError, match="cannot run inside torch.func.functionalize"):
        torch.func.functionalize(inner)(torch.ones(2))


def test_writing_a_captured_tensor_with_functional_data_is_rejected() -> None:
    captured = torch.zeros(2)

    def f(x: torch.Tensor) -> torch.Tensor:
        captured.add_(x)
        return x

    with pytest.raises(RuntimeError, match=r"aten::add_\.Tensor writes its argument 'self'.*captured"):
        fxinplace.functionalize(f)(torch.ones(2))
    assert torch.equal(captured, torch.zeros(2)), "the captured tensor must stay untouched"


def _set_to_a_concatenation_and_back(p):
    saved = p.detach().clone()
    p.set_(torch.cat([p, p]))
    y = p * 2
    p.set_(saved)
    p.add_(1)
    return y


def _set_to_a_bigger_tensor(p):
    p.set_(torch.cat([p, p]))
    return p.sum()


def _set_then_write_through_both(x):
    y = x.clone()
    z = torch.zeros(3)
    y.set_(z)
    z.add_(1)  # y aliases z now: it sees the write
    return y * 2


def _set_to_a_transposed_view(x):
    src = torch.arange(6.0).reshape(2, 3).t()
    x.set_(src)
    return x + 0


@pytest.mark.parametrize(
    "fn",
    [
        _set_to_a_concatenation_and_back,
        _set_to_a_bigger_tensor,
        _set_then_write_through_both,
        _set_to_a_transposed_view,
    ],
)
def test_set_to_a_tensor(fn) -> None:
    # Issue 16: set_(tensor) was refused; torch.func.functionalize handles it. The input
    # takes the value (and shape) it ends with, as torch.func writes it back.
    from fxinplace.testing.harness.functionalize_differential import eager_parity_problems

    problems = eager_parity_problems(fn, lambda: (torch.arange(3.0),), tracing_modes=("real",))
    assert not problems, "\n".join(problems)


def test_set_to_a_storage_is_a_clear_error() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y.set_(torch.zeros(3).untyped_storage())
        return y

    with pytest.raises(RuntimeError, match=r"cannot functionalize aten::set_\.source_Storage"):
        fxinplace.functionalize(f)(torch.ones(2))


def test_custom_op_with_an_aliasing_output_is_a_clear_error() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.ops.fxinplace_api_test.my_view(x) + 1

    with pytest.raises(
        RuntimeError, match="cannot functionalize fxinplace_api_test::my_view.*aliases its input"
    ):
        fxinplace.functionalize(f)(torch.ones(2, 2))


def test_torch_func_functionalize_rejects_custom_mutable_ops() -> None:
    # Recorded on torch 2.13: core's Functionalize key refuses custom ops whose
    # schema has alias annotations; fxinplace.functionalize handles them.
    f = _add_one_to_a_slice_of_a_clone

    with pytest.raises(RuntimeError, match="Found a custom \\(non-ATen\\) operator whose output has alias"):
        make_fx(torch.func.functionalize(f))(torch.zeros(4))
    assert torch.equal(fxinplace.functionalize(f)(torch.zeros(4)), f(torch.zeros(4)))


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_custom_mutable_op_on_a_view_becomes_auto_functionalized_v2(remove: str) -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        add_one_(y[1:])
        return y * 2

    gm = make_fx(fxinplace.functionalize(f, remove=remove))(torch.zeros(4))
    targets = _targets(gm)
    assert torch.ops.higher_order.auto_functionalized_v2 in targets
    assert torch.ops.fxinplace_api_test.add_one_.default not in targets
    afv2 = next(n for n in gm.graph.nodes if n.target is torch.ops.higher_order.auto_functionalized_v2)
    assert (afv2.kwargs["_x_slice_dim"], afv2.kwargs["_x_slice_start"], afv2.kwargs["_x_slice_end"]) == (
        0,
        1,
        4,
    )
    x = torch.arange(4.0)
    assert torch.equal(gm(x.clone()), f(x.clone()))


def test_custom_op_with_two_mutated_inputs_and_a_result() -> None:
    def f(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        total = scale_and_sum_(a.t(), b[0], 2.0)
        return total, a + b

    args = (torch.arange(4.0).reshape(2, 2), torch.arange(4.0).reshape(2, 2))
    eager_args = tuple(a.clone() for a in args)
    expected = f(*eager_args)
    got = fxinplace.functionalize(f)(*args)
    assert all(torch.equal(g, e) for g, e in zip(got, expected, strict=True))
    assert all(torch.equal(a, e) for a, e in zip(args, eager_args, strict=True)), "inputs written back"
    gm = make_fx(fxinplace.functionalize(f))(*(a.clone() for a in eager_args))
    copies = [n for n in gm.graph.nodes if n.target is torch.ops.aten.copy_.default]
    assert len(copies) == 2 and all(c.args[0].op == "placeholder" for c in copies)


def test_inference_mode() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        x[0].mul_(3)
        return x.view(-1) + 1

    with torch.inference_mode():
        x, y = torch.arange(4.0).reshape(2, 2), torch.arange(4.0).reshape(2, 2)
        assert torch.equal(fxinplace.functionalize(f)(x), f(y))
        assert torch.equal(x, y)


@pytest.mark.parametrize("tracing_mode", ["real", "fake", "symbolic"])
def test_tracing_modes(tracing_mode: str) -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[1:].add_(1)
        return y.view(-1) * 2

    gm = make_fx(fxinplace.functionalize(f), tracing_mode=tracing_mode)(torch.arange(6.0).reshape(3, 2))
    assert not any(getattr(t, "_schema", None) is not None and t._schema.is_mutable for t in _targets(gm))
    x = torch.arange(6.0).reshape(3, 2)
    assert torch.equal(gm(x), f(x.clone()))


@pytest.mark.parametrize("tracing_mode", ["real", "fake"])
def test_a_trace_records_its_values_in_one_fake_mode_and_the_same_metadata(
    tracing_mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # make_fx in real mode builds a FakeTensorMode per recorded value unless one is ambient;
    # we provide one for the functionalized call (the trace's main cost otherwise). The graph
    # and each value's metadata must be what they are without it; in fake mode make_fx's own
    # mode is kept.
    import fxinplace._functionalize as functionalize_module

    def f(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        y[1:].add_(1)
        return y.t().contiguous() * 2

    x = torch.arange(6.0).reshape(3, 2)
    ours = make_fx(fxinplace.functionalize(f), tracing_mode=tracing_mode)(x)
    monkeypatch.setattr(
        functionalize_module, "one_fake_mode_per_trace", lambda args: contextlib.nullcontext()
    )
    without = make_fx(fxinplace.functionalize(f), tracing_mode=tracing_mode)(x)
    assert ours.code == without.code
    for a, b in zip(ours.graph.nodes, without.graph.nodes, strict=True):
        va, vb = a.meta.get("val"), b.meta.get("val")
        if isinstance(vb, torch.Tensor):
            assert (va.shape, va.stride(), va.dtype, va.device) == (
                vb.shape,
                vb.stride(),
                vb.dtype,
                vb.device,
            )
    modes = {id(n.meta["val"].fake_mode) for n in ours.graph.nodes if n.op == "call_function"}
    assert len(modes) == 1
    assert torch._guards.TracingContext.try_get() is None  # nothing left behind
    if tracing_mode == "fake":
        assert modes == {id(next(iter(ours.graph.nodes)).meta["val"].fake_mode)}  # make_fx's own mode


@pytest.mark.parametrize("tracing_mode", ["real", "symbolic"])
def test_a_view_that_raises_under_tracing_leaves_no_node(tracing_mode: str) -> None:
    # make_fx records an op before it runs; a view op that raises inside the program's
    # try/except (setitem expands the (2,) source to (1,)) is checked on meta first, so the
    # graph holds no node that raises (seed 2741).
    def f(x):
        t = x.amax(-2)
        try:
            t[:1] = t[-2:]
        except RuntimeError:
            pass
        return t + 1

    gm = make_fx(fxinplace.functionalize(f), tracing_mode=tracing_mode)(torch.randn(2, 3))
    assert torch.ops.aten.expand.default not in _targets(gm)
    x = torch.randn(2, 3)
    assert torch.equal(gm(x), f(x))


def test_outputs_are_plain_tensors() -> None:
    out = fxinplace.functionalize(lambda x: x.view(-1).add(1))(torch.ones(2, 2))
    assert not fxinplace._C.functionalize.is_functional(out)
    assert type(out) is torch.Tensor


def test_functionalize_fails_clearly_when_the_key_is_taken() -> None:
    # A fresh interpreter where another library owns the key first: importing fxinplace (to
    # compile or re-inplace) still works; functionalize says why it cannot run.
    script = (
        "import torch\n"
        "lib = torch.library.Library('_', 'IMPL')\n"
        "lib.fallback(lambda *a, **k: None, 'DeferredInit')\n"
        "import fxinplace\n"
        "print('IMPORTED')\n"
        "try:\n"
        "    fxinplace.functionalize(lambda x: x + 1)(torch.ones(2))\n"
        "except RuntimeError as e:\n"
        "    print('ERROR:', e)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "IMPORTED" in result.stdout, result.stderr
    assert "ERROR: fxinplace.functionalize needs the dispatch key DeferredInit" in result.stdout, (
        result.stderr
    )


@pytest.mark.parametrize("tracing_mode", ["real", "fake"])
def test_functionalize_then_reinplace_leaves_exactly_the_users_clone(tracing_mode: str) -> None:
    # The end-to-end program: clone, a mutating custom op on a slice of
    # the clone. Functionalized, the op runs on a fresh copy (auto_functionalized_v2);
    # re-inplaced, that copy is gone and the op writes the user's clone directly.
    f = _add_one_to_a_slice_of_a_clone

    x = torch.arange(4.0)
    gm = make_fx(fxinplace.functionalize(f), tracing_mode=tracing_mode)(x.clone())
    fxinplace.reinplace(gm, x.clone(), check=True)
    targets = _targets(gm)
    assert targets.count(torch.ops.aten.clone.default) == 1
    assert torch.ops.higher_order.auto_functionalized_v2 not in targets
    op_node = next(n for n in gm.graph.nodes if n.target is torch.ops.fxinplace_api_test.add_one_.default)
    assert op_node.args[0].target is torch.ops.aten.slice.Tensor
    assert op_node.args[0].args[0].target is torch.ops.aten.clone.default
    assert torch.equal(gm(x.clone()), f(x.clone()))


def test_custom_mutable_op_under_symbolic_shapes_is_a_clear_error() -> None:
    f = _add_one_to_a_slice_of_a_clone

    with pytest.raises(RuntimeError, match="add_one_ mutates a tensor with symbolic shapes"):
        make_fx(fxinplace.functionalize(f), tracing_mode="symbolic")(torch.zeros(4))


@pytest.mark.parametrize("model", ["gpt2", "llama"])
def test_model_graph_recorded_by_fxinplace_matches_stock(model: str) -> None:
    # The whole native pipeline on a real model: our functionalization records
    # the graph, our pass re-inplaces it; outputs equal the stock-recorded graph's.
    from fxinplace.testing import graphs

    make_ours, args = graphs.build(model, functionalize="fxinplace")
    make_stock, _ = graphs.build(model)
    ours, stock = make_ours(), make_stock()
    assert not any(getattr(t, "_schema", None) is not None and t._schema.is_mutable for t in _targets(ours))
    expected = stock(*args)
    assert torch.allclose(ours(*args), expected, atol=1e-5)
    fxinplace.reinplace(ours, *args, check=True)
    assert torch.allclose(ours(*args), expected, atol=1e-5)


def test_fxinplace_functionalize_is_only_offered_for_inference_model_graphs() -> None:
    from fxinplace.testing import graphs

    with pytest.raises(ValueError, match="gpt2/llama inference graphs"):
        graphs.build("gpt2", with_training_step=True, functionalize="fxinplace")


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_write_through_as_strided_of_a_view(remove: str) -> None:
    # as_strided addresses the storage: after another view it becomes one
    # as_strided of the base (it used to be a clear error).
    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x.clone()
        v = y[1:].as_strided((2,), (2,), 1)
        v.add_(1)
        return y, v * 1

    expected = f(torch.arange(6.0))
    got = fxinplace.functionalize(f, remove=remove)(torch.arange(6.0))
    traced = make_fx(fxinplace.functionalize(f, remove=remove))(torch.arange(6.0))(torch.arange(6.0))
    for result in (got, traced):
        assert all(torch.equal(g, e) for g, e in zip(result, expected, strict=True))


def test_resizing_a_view_past_its_base_grows_the_storage() -> None:
    # Eager grows the storage; the base keeps its elements and the view sees them.
    def f(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x.clone()
        z = y[1:]
        z.resize_(10)
        z[:5].mul_(2)
        return y, z[:5] + 0

    got = fxinplace.functionalize(f)(torch.arange(6.0))
    expected = f(torch.arange(6.0))
    assert all(torch.equal(g, e) for g, e in zip(got, expected, strict=True))


def test_resizing_an_input_over_storage_beyond_its_elements_is_a_clear_error() -> None:
    # Eager would read the storage's elements past the input, which a graph input does not carry.
    def f(x: torch.Tensor) -> torch.Tensor:
        x.resize_(4)
        return x * 1

    with pytest.raises(RuntimeError, match=r"aten::resize_ grows a tensor over storage beyond its elements"):
        fxinplace.functionalize(f)(torch.arange(6.0)[:2])


def test_resizing_an_input_without_writing_it_resizes_the_input() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        x.resize_(2)
        return x * 1

    x, y = torch.arange(4.0), torch.arange(4.0)
    assert torch.equal(fxinplace.functionalize(f)(x), f(y))
    assert x.shape == y.shape == (2,) and torch.equal(x, y)


# ---- what users do inside functions (issue 16)


@pytest.mark.parametrize("remove", ["mutations", "mutations_and_views"])
def test_host_reads_see_the_current_value(remove: str) -> None:
    # numpy() read uninitialized memory and tolist()/print raised before: they read the
    # tensor's storage, which a functional tensor does not have; now its synced value.
    def f(x):
        y = x * 2
        y[1:].add_(1)
        return y, y.numpy().tolist(), y.tolist(), repr(y), float(y[1]), y.__array__().tolist()

    x = torch.arange(3.0)
    want = f(x.clone())
    got = fxinplace.functionalize(f, remove=remove)(x.clone())
    assert torch.equal(want[0], got[0])
    assert want[1:] == got[1:]


def test_host_reads_under_symbolic_tracing_are_a_clear_error() -> None:
    def f(x):
        return torch.tensor(x.tolist()) + x

    with pytest.raises(RuntimeError, match=r"fxinplace.functionalize: Tensor.tolist\(\)"):
        make_fx(fxinplace.functionalize(f), tracing_mode="symbolic")(torch.ones(3))


def test_an_optimizer_style_update_under_no_grad() -> None:
    # A leaf that requires grad, written under torch.no_grad() (how optimizers update
    # parameters): eager allows it, and the input keeps requiring grad.
    def f(w, g):
        seen = w.requires_grad
        with torch.no_grad():
            w.sub_(0.1 * g)
        return seen

    w, g = torch.nn.Parameter(torch.ones(3)), torch.arange(3.0)
    want_w = torch.nn.Parameter(torch.ones(3))
    want = f(want_w, g)
    got = fxinplace.functionalize(f)(w, g)
    assert got is True and want is True
    assert torch.equal(w.detach(), want_w.detach()) and w.requires_grad and w.grad_fn is None


def test_a_leaf_written_with_grad_on_raises_eagers_error() -> None:
    def f(w):
        w.mul_(2)
        return w

    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        f(torch.nn.Parameter(torch.ones(2)))
    with pytest.raises(RuntimeError, match="fxinplace.functionalize: .*a leaf Variable that requires grad"):
        fxinplace.functionalize(f)(torch.nn.Parameter(torch.ones(2)))


def test_reading_with_grad_after_a_no_grad_write_is_a_clear_error() -> None:
    # Eager keeps w the same autograd leaf; its functional value is a new tensor that
    # gradients would not reach, so the read is refused rather than silently detached.
    def f(w, x):
        with torch.no_grad():
            w.mul_(2)
        return x * w

    with pytest.raises(RuntimeError, match="fxinplace.functionalize: .*written under torch.no_grad"):
        fxinplace.functionalize(f)(torch.nn.Parameter(torch.ones(2)), torch.ones(2))


def test_requires_grad_reads_as_in_eager() -> None:
    def f(a, b):
        c = a * b
        return a.requires_grad, b.requires_grad, c.requires_grad, c[0].requires_grad

    args = (torch.ones(2, requires_grad=True), torch.ones(2))
    assert fxinplace.functionalize(f)(*args) == f(*args) == (True, False, True, True)
