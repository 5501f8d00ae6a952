"""Tests that kill two planner mutants that once passed the whole suite (issue 15).

The planner was broken on purpose, one rule at a time; these two broken rules went
unnoticed (and (c), a rule the planner lacked, found by the random pipelines):

(a) a scatter whose view arguments (start, end, step, dim, index, offset) differ from
    those of the view its source was computed in place into, treated as removable;
(b) under policy="compile" (dead operands as destinations: `foo(a, b)` ->
    `foo.out(a, b, out=b)` or `b.foo_(a)`), a graph input taken as the destination;
(c) a scatter into an expanded base (indices sharing elements) removed as a no-op.

Each program runs through the real pass with check=True under every policy and is
compared with eager (values, and the inputs after the call). Since the planner cannot
be rebuilt with the mutation here, each test also builds the mutant's graph by hand
(the scatter removed; `mul.out(..., out=y)`) and shows that the checker rejects it:
the test fails on the mutant's plan.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace._checker import copy_functional

aten = torch.ops.aten
POLICIES = ("stock", "compile", "inductor")
SCATTERS = (
    aten.slice_scatter.default,
    aten.select_scatter.default,
    aten.diagonal_scatter.default,
    aten.as_strided_scatter.default,
)


def _trace(fn, *args):
    return make_fx(torch.func.functionalize(fn))(*args)


def _clones(args):
    return [a.clone() for a in args]


def _assert_pass_matches_eager(fn, args, policy):
    want_args = _clones(args)
    want = fn(*want_args)
    gm = _trace(fn, *_clones(args))
    fxinplace.reinplace(gm, *_clones(args), check=True, policy=policy)
    got_args = _clones(args)
    got = gm(*got_args)
    assert torch.equal(got, want), f"{fn.__name__} ({policy}): {got} vs eager {want}"
    for k, (w, g) in enumerate(zip(want_args, got_args, strict=True)):
        assert torch.equal(w, g), f"{fn.__name__} ({policy}): input {k} after the call differs from eager's"


def _rejected(functional, gm, args) -> fxinplace.ReinplaceCheckError:
    gm.graph.lint()
    gm.recompile()
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        fxinplace.check_reinplaced(functional, gm, *_clones(args), inputs_written_back_may_be_written=True)
    assert not info.value.cannot_check, info.value
    return info.value


def _in_place_and_scatter_removed(fn, args, functional_op, inplace_op):
    """The mutant's plan for `fn`: its one `functional_op` node made `inplace_op` (into the
    view it reads) and its one scatter removed as a no-op; and the functional graph."""
    gm = _trace(fn, *args)
    functional = copy_functional(gm)
    [op] = [n for n in gm.graph.nodes if n.target is functional_op]
    [scatter] = [n for n in gm.graph.nodes if n.target in SCATTERS]
    op.target = inplace_op
    scatter.replace_all_uses_with(scatter.args[0])
    gm.graph.erase_node(scatter)
    return gm, functional


# ----------------------------------------------------------------------------
# (a) a scatter into another view than the one its source was computed in


def slice_other_start(x):
    y = x + 1
    a = y[0:2] * 2
    return torch.slice_scatter(y, a, 0, 2, 4)


def slice_other_step(x):
    y = x + 1
    a = y[0:2] * 2
    return torch.slice_scatter(y, a, 0, 0, 4, 2)  # rows 0 and 2, not 0 and 1


def slice_overlapping_range(x):
    y = x + 1
    a = y[0:2] * 2
    return torch.slice_scatter(y, a, 0, 1, 3)  # rows 1:3, overlapping 0:2


def select_other_index(x):
    y = x + 1
    a = y[0] * 2
    return torch.select_scatter(y, a, 0, 1)


def select_other_dim(x):
    y = x + 1
    a = y[:, 0] * 2  # (2, 2) of a (2, 2, 2)
    return torch.select_scatter(y, a, 0, 0)


def diagonal_other_offset(x):
    y = x + 1
    a = y.diagonal() * 2  # 4 elements of a (4, 5)
    return torch.diagonal_scatter(y, a, 1)


def written_view_then_other_scatter(x):
    y = x + 1
    v = y[0:2]
    v.mul_(2)  # functional: mul, then a removable slice_scatter(y, mul, 0, 0, 2)
    return torch.slice_scatter(y, v, 0, 2, 4)  # v written into rows 2:4: not removable


VIEW_PROGRAMS = {
    slice_other_start: (4, 3),
    slice_other_step: (4, 3),
    slice_overlapping_range: (4, 3),
    select_other_index: (3, 4),
    select_other_dim: (2, 2, 2),
    diagonal_other_offset: (4, 5),
    written_view_then_other_scatter: (4, 3),
}


def _view_args(fn):
    g = torch.Generator().manual_seed(1)
    return [torch.randn(VIEW_PROGRAMS[fn], generator=g)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fn", list(VIEW_PROGRAMS), ids=lambda f: f.__name__)
def test_a_scatter_into_another_view_is_kept(fn, policy: str):
    _assert_pass_matches_eager(fn, _view_args(fn), policy)


@pytest.mark.parametrize(
    "fn", [f for f in VIEW_PROGRAMS if f is not written_view_then_other_scatter], ids=lambda f: f.__name__
)
def test_the_mutants_plan_is_caught(fn):
    # The mutant: mul made in place into the view it reads (y[0:2] *= 2) and the
    # scatter, taken for a no-op, removed: the result has a's values in the wrong place.
    args = _view_args(fn)
    gm, functional = _in_place_and_scatter_removed(fn, args, aten.mul.Tensor, aten.mul_.Tensor)
    error = _rejected(functional, gm, args)
    assert error.reason == "wrong_value" and error.node == "output", error
    gm.recompile()
    assert not torch.equal(gm(*_clones(args)), fn(*_clones(args)))


def test_the_mutants_plan_is_caught_after_a_real_removal():
    # The pass's own plan, with the second scatter (into rows 2:4) removed too.
    fn = written_view_then_other_scatter
    args = _view_args(fn)
    gm = _trace(fn, *args)
    functional = copy_functional(gm)
    fxinplace.reinplace(gm, *_clones(args), check=True)
    scatters = [n for n in gm.graph.nodes if n.target in SCATTERS]
    assert scatters, gm.code  # the pass keeps the scatter into rows 2:4 (or a copy_ for it)
    [last] = scatters[-1:]
    last.replace_all_uses_with(last.args[0])
    gm.graph.erase_node(last)
    error = _rejected(functional, gm, args)
    assert error.reason == "wrong_value", error


# ----------------------------------------------------------------------------
# (b) a graph input as a dead operand's destination (policy="compile")


def mul_of_transposed(x, y):
    return x.t() * y  # self x.t() is a view of an input; y is dead afterwards


def add_of_inputs(x, y):
    return x + y.relu() * y  # y read again after the first op that could reuse it


def _input_args():
    g = torch.Generator().manual_seed(2)
    return [torch.randn(3, 3, generator=g), torch.randn(3, 3, generator=g)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fn", [mul_of_transposed, add_of_inputs], ids=lambda f: f.__name__)
def test_a_dead_input_operand_is_never_a_destination(fn, policy: str):
    _assert_pass_matches_eager(fn, _input_args(), policy)


def _dead_operand_destination_graphs(args):
    """The mutant's plans for mul_of_transposed: `mul.out(t, y, out=y)` and `y.mul_(t)`."""
    for form in ("out", "inplace"):
        gm = _trace(mul_of_transposed, *args)
        functional = copy_functional(gm)
        [mul] = [n for n in gm.graph.nodes if n.target is aten.mul.Tensor]
        t, y = mul.args
        if form == "out":
            mul.target = aten.mul.out
            mul.kwargs = {"out": y}
        else:
            mul.target = aten.mul_.Tensor
            mul.args = (y, t)
        yield form, functional, gm


@pytest.mark.parametrize("form", ["out", "inplace"])
def test_the_mutants_destination_is_caught(form: str):
    args = _input_args()
    graphs = dict((f, (functional, gm)) for f, functional, gm in _dead_operand_destination_graphs(args))
    functional, gm = graphs[form]
    error = _rejected(functional, gm, args)
    assert error.reason == "input_written" and error.node == "mul", error
    assert "writes graph input y_1" in str(error), error
    # ...and it would be wrong: the caller's y changes.
    got_args = _clones(args)
    gm.recompile()
    gm(*got_args)
    assert not torch.equal(got_args[1], args[1])


# ----------------------------------------------------------------------------
# (c) a scatter into a base whose indices share elements (random pipelines'
#     known failure: the planner removed it, so the write landed in every copy)


def select_into_expanded(x):
    b = x.clone().expand(3, 3)
    return torch.select_scatter(b, b[0].sign(), 0, 0)


def diagonal_into_expanded(x):
    b = x.clone().expand(3, 3)
    return torch.diagonal_scatter(b, b.diagonal().sign())


def slice_into_expanded(x):
    b = x.clone().expand(4, 3)
    return torch.slice_scatter(b, b[1:3].neg(), 0, 1, 3)


EXPANDED_PROGRAMS = (select_into_expanded, diagonal_into_expanded, slice_into_expanded)


def _expanded_args():
    g = torch.Generator().manual_seed(3)
    return [torch.randn(3, generator=g)]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("fn", EXPANDED_PROGRAMS, ids=lambda f: f.__name__)
def test_a_scatter_into_an_expanded_base_is_kept(fn, policy: str):
    args = _expanded_args()
    gm = _trace(fn, *args)
    fxinplace.reinplace(gm, *_clones(args), check=True, policy=policy)
    assert [n for n in gm.graph.nodes if n.target in SCATTERS], gm.code
    _assert_pass_matches_eager(fn, args, policy)


@pytest.mark.parametrize("fn", [select_into_expanded, diagonal_into_expanded], ids=lambda f: f.__name__)
def test_the_expanded_base_mutants_plan_is_caught(fn):
    # The mutant: the unary op made in place into the view and the scatter removed (a
    # slice of the expand overlaps itself, so ATen itself rejects its mutant).
    args = _expanded_args()
    gm, functional = _in_place_and_scatter_removed(fn, args, aten.sign.default, aten.sign_.default)
    _rejected(functional, gm, args)
    gm.recompile()
    assert not torch.equal(gm(*_clones(args)), fn(*_clones(args)))
