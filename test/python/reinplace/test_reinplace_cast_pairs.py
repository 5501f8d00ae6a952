"""reinplace(policy="compile"): `a.ge_(b)`, which functionalization records as
`_to_copy(ge(a, b), dtype=a.dtype)`, written back in place (seed 000's pattern; issue 18).

The comparison becomes `ge_(a, b)`, which stores its booleans converted to a's dtype, and the
cast goes. Each case: the structure (the in-place op, no cast), bitwise eager values and
inputs, the checker proving it (`check=True`), and the conditions that must refuse.
"""

from __future__ import annotations

import pytest
import torch
from same_results import assert_same_results, targets
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace import ReinplaceCheckError

aten = torch.ops.aten

COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]


def _compiled(fn, args, *, functionalize=True, **trace):
    # A program without mutations is traced as it is: with remove="mutations_and_views" its
    # views would become `*_copy` ops of other strides than eager's.
    traced = torch.func.functionalize(fn, remove="mutations_and_views") if functionalize else fn
    gm = make_fx(traced, **trace)(*args)
    report = fxinplace.reinplace_report(gm, *args, policy="compile", check=True)
    return gm, {d.node: d.action for d in report.decisions}


def _with_nans(t):
    t = t.clone()
    if t.is_floating_point():
        t.view(-1)[::5] = float("nan")
    return t


# The logical ops take a tensor only.
CASES = [(n, o) for n in COMPARISONS for o in ("tensor", "scalar") if o == "tensor" or "logical" not in n]


@pytest.mark.parametrize(("name", "other"), CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_a_comparison_written_into_its_self_stores_the_cast_value(name, dtype, other):
    def f(a, b):
        c = a.clone()
        getattr(c, name + "_")(b if other == "tensor" else 0)
        return c * 2

    a = _with_nans((torch.randn(4, 5) * 3).to(dtype))
    b = _with_nans((torch.randn(4, 5) * 3).to(dtype))
    gm, actions = _compiled(f, (a, b))
    inplace = [t for t in targets(gm) if t.overloadpacket.__name__ == name + "_"]
    assert len(inplace) == 1 and aten._to_copy.default not in targets(gm), gm.code
    assert "remove_cast" in actions.values()
    assert_same_results(f, (a, b), gm)


def test_the_stock_policy_keeps_the_cast():
    def f(a, b):
        c = a.clone()
        c.ge_(b)
        return c * 2

    args = (torch.randn(3, 3), torch.randn(3, 3))
    gm = make_fx(torch.func.functionalize(f))(*args)
    fxinplace.reinplace(gm, *args, check=True)
    assert aten._to_copy.default in targets(gm) and aten.ge.Tensor in targets(gm)


def test_an_input_written_back_takes_the_comparison_and_its_copy_goes():
    def f(a, b):
        a.lt_(b)
        return a + 1

    args = (torch.randn(6), torch.randn(6))
    gm, actions = _compiled(f, args)
    assert aten.lt_.Tensor in targets(gm), gm.code
    assert aten._to_copy.default not in targets(gm) and aten.copy_.default not in targets(gm), gm.code
    assert_same_results(f, args, gm)


def test_an_input_whose_converted_value_is_returned_keeps_the_cast():
    # The functional graph returns the cast, a fresh tensor: written into `a`, the output
    # would alias the input.
    def f(a, b):
        a.lt_(b)
        return a

    args = (torch.randn(6), torch.randn(6))
    gm, actions = _compiled(f, args)
    assert aten._to_copy.default in targets(gm), gm.code
    assert_same_results(f, args, gm)


def cast_to_another_dtype(a, b):
    c = a.sin()
    return (c >= b).to(torch.float64) * 2


def comparison_read_again(a, b):
    c = a.sin()
    m = c >= b
    return m.to(c.dtype) * 2, m


def self_read_later(a, b):
    c = a.sin()
    return (c >= b).to(c.dtype) + c


def broadcast_result(a, b):
    c = a[:1].sin()  # (1, 4) against b's (4, 4): ge's result is larger than c
    return (c >= b).to(c.dtype) * 2


@pytest.mark.parametrize(
    "fn", [cast_to_another_dtype, comparison_read_again, self_read_later, broadcast_result]
)
def test_the_cast_stays_where_the_comparison_cannot_hold_it(fn):
    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm, actions = _compiled(fn, args, functionalize=False)
    assert "remove_cast" not in actions.values(), gm.code
    assert aten._to_copy.default in targets(gm), gm.code
    assert_same_results(fn, args, gm)


def test_a_transposed_self_gives_its_users_the_cast_layout_or_keeps_it():
    # ge's result takes the layout TensorIterator picks from both operands; in place it is
    # c's. Whatever the planner does, the output must have eager's strides.
    def f(a, b):
        c = a.t().sin()
        return (c >= b).to(c.dtype)

    args = (torch.randn(4, 4), torch.randn(4, 4))
    gm, _ = _compiled(f, args, functionalize=False)
    assert_same_results(f, args, gm)


def test_symbolic_trace_runs_at_a_second_size():
    def f(a, b):
        c = a.clone()
        c.gt_(b)
        return c * 2

    gm, actions = _compiled(f, (torch.randn(4, 3), torch.randn(4, 3)), tracing_mode="symbolic")
    assert "remove_cast" in actions.values(), gm.code
    assert_same_results(f, (torch.randn(7, 3), torch.randn(7, 3)), gm)


def _ge_written_into_sin(fn, args):
    """fn traced twice: as it is, and with `ge` made `ge_` into `sin` and the cast's users
    reading `sin` (the rewrite the pass makes), whether or not that is sound."""
    functional, rewritten = make_fx(fn)(*args), make_fx(fn)(*args)
    nodes = {n.name: n for n in rewritten.graph.nodes}
    nodes["ge"].target = aten.ge_.Tensor
    nodes["_to_copy"].replace_all_uses_with(nodes["sin"])
    rewritten.graph.erase_node(nodes["_to_copy"])
    rewritten.recompile()
    return functional, rewritten


@pytest.mark.parametrize("fn", [self_read_later, cast_to_another_dtype])
def test_the_checker_refuses_a_comparison_in_place_that_changes_what_is_read(fn):
    # self_read_later: `r + c` would read the booleans where the functional graph reads c's own
    # values. cast_to_another_dtype: the cast goes to float64 while c is float32, so ge_
    # stores float32 values, not the cast's.
    args = (torch.randn(4, 4), torch.randn(4, 4))
    functional, rewritten = _ge_written_into_sin(fn, args)
    with pytest.raises(ReinplaceCheckError):
        fxinplace.check_reinplaced(functional, rewritten, *args)


def test_the_checker_accepts_the_sound_rewrite_it_is_given_by_hand():
    def f(a, b):
        c = a.sin()
        return (c >= b).to(c.dtype) * 2

    args = (torch.randn(4, 4), torch.randn(4, 4))
    functional, rewritten = _ge_written_into_sin(f, args)
    fxinplace.check_reinplaced(functional, rewritten, *args)


def test_torch_compile_with_the_backend_matches_eager(monkeypatch):
    import fxinplace.compile as fx_compile

    actions = []
    report = fx_compile.reinplace_report

    def recording(*a, **k):
        r = report(*a, **k)
        actions.extend(d.action for d in r.decisions)
        return r

    monkeypatch.setattr(fx_compile, "reinplace_report", recording)

    def f(x, y):
        z = x * 3
        z.ge_(y)
        w = y.clone()
        w.logical_or_(z)
        return z + w

    args = (torch.randn(8, 8), torch.randn(8, 8))
    torch._dynamo.reset()
    compiled = torch.compile(f, backend=fx_compile.make_backend(check=True))
    want, got = f(*args), compiled(*args)
    assert torch.equal(want, got)
    assert actions.count("remove_cast") == 2
