"""`check_reinplaced(compiler="inductor")`: Inductor's contract, what FX semantics cannot show.

Issue 15's programs, on the graphs Inductor hands its re-inplacing slot (captured with
stock Inductor), with the wrong plans the pass once made built by hand (FX edits), so
that the tests do not depend on what the planner does today:

- f2: a scatter rewritten as `diagonal(view_2).copy_(src)` through an int32 view of a
  float32 buffer, which Inductor lowers as a value conversion (write_through_dtype_view);
- f3: `index_put` -> `index_put_` into the input x while the epilogue `copy_(x, add)`
  reads `rev(index_put)`, now x flipped, in the kernel that writes x (fused_read_hazard);
- f4: `_foreach_add` -> `_foreach_add_([x], [rev(x)])`, the epilogue removed.

Each wrong plan is right as FX runs it (the checker without `compiler` passes it); the
real pass on the same graphs passes the checker under the contract; and Inductor's own
write-back reading the input under its old name (`x.add_(x.flip(0))`) is not flagged.
The rules, with before/after programs, are in csrc/checker/inductor_contract.h.
"""

from __future__ import annotations

import pytest
import torch
from issue15_programs import ISSUE15_PROGRAMS
from torch._inductor.virtualized import V
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace
from fxinplace._checker import copy_functional
from fxinplace.testing.harness.inductor_parity import capture_slot_graphs

# Torch's own deprecations, raised inside Inductor's import and lowering.
pytestmark = [
    pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:`torch._prims_common.check` is deprecated:FutureWarning"),
]
aten = torch.ops.aten
prims = torch.ops.prims


def f3_values_elsewhere(x, v):
    # f3 with values that do not read x: only the epilogue's read of rev(index_put) is left.
    x.index_put_((torch.arange(4),), v * 2.0)
    x.add_(x.flip(0))
    return x


def add_flip(x):
    x.add_(x.flip(0))
    return x


PROGRAMS = {
    "f2": ISSUE15_PROGRAMS["f2"],
    "f3": ISSUE15_PROGRAMS["f3"],
    "f3_values_elsewhere": (
        f3_values_elsewhere,
        lambda: (torch.arange(32.0).reshape(4, 8) / 7, torch.ones(4, 8)),
    ),
    "f4": ISSUE15_PROGRAMS["f4"],
    "add_flip": (add_flip, lambda: (torch.arange(16.0).reshape(4, 4),)),
}


@pytest.fixture(scope="module")
def slot_graphs():
    """Each program's graph as it reaches Inductor's re-inplacing slot (one compile each)."""
    graphs = {}
    for name, (fn, make) in PROGRAMS.items():
        args = make()
        (graphs[name],) = capture_slot_graphs(fn, lambda c, args=args: c(*[a.clone() for a in args]))
    return graphs


def _sample(gm):
    return [p.meta["val"] for p in gm.graph.find_nodes(op="placeholder")]


def _check(slot, gm, **options):
    gm.recompile()
    with V.set_fake_mode(slot.fake_mode):
        fxinplace.check_reinplaced(
            slot.copy(), gm, *_sample(gm), inputs_written_back_may_be_written=True, **options
        )


def _rejected(slot, gm) -> fxinplace.ReinplaceCheckError:
    _check(slot, gm)  # right as FX runs it: only Inductor's contract rejects it
    with pytest.raises(fxinplace.ReinplaceCheckError) as info:
        _check(slot, gm, compiler="inductor")
    error = info.value
    assert str(error).startswith("fxinplace: rewritten graph: ") and not error.cannot_check, error
    return error


def _only(gm, target):
    [node] = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is target]
    return node


def test_the_slot_graphs_are_issue_15s(slot_graphs):
    targets = {
        name: {n.target for n in g.gm.graph.nodes if n.op == "call_function"}
        for name, g in slot_graphs.items()
    }
    assert aten.diagonal_scatter.default in targets["f2"]
    assert torch.ops.higher_order.auto_functionalized_v2 in targets["f2"]
    assert {aten.index_put.default, prims.rev.default, aten.copy_.default} <= targets["f3"]
    assert {aten._foreach_add.List, prims.rev.default, aten.copy_.default} <= targets["f4"]
    assert {aten.add.Tensor, prims.rev.default, aten.copy_.default} <= targets["add_flip"]


def test_f2_a_scatter_as_copy_through_a_dtype_view_is_caught(slot_graphs):
    slot = slot_graphs["f2"]
    gm = slot.copy()
    ds = _only(gm, aten.diagonal_scatter.default)
    view_2, src = ds.args
    assert view_2.target is aten.view.dtype  # the int32 view of the float32 buffer af[1]
    with gm.graph.inserting_before(ds):
        diagonal = gm.graph.call_function(aten.diagonal.default, (view_2,))
        gm.graph.call_function(aten.copy_.default, (diagonal, src))
    ds.replace_all_uses_with(view_2)
    gm.graph.erase_node(ds)
    error = _rejected(slot, gm)
    assert error.reason == "write_through_dtype_view" and error.operand == "self", error
    assert error.node.startswith("copy_"), error
    assert "lowers such a write as a value conversion" in str(error)
    assert error.reason_text.startswith("an in-place write through a view whose dtype differs")


def test_f3_index_put_made_in_place_into_the_input_is_caught(slot_graphs):
    slot = slot_graphs["f3"]
    gm = slot.copy()
    _only(gm, aten.index_put.default).target = aten.index_put_.default
    error = _rejected(slot, gm)
    # The scatter's values (x * 2.0) read x itself, at elements the scatter may
    # already have written: the first hazard. (Inductor happens to realize values that
    # read the buffer an index_put_ writes; the checker counts every fused read.)
    assert error.reason == "fused_read_hazard" and error.node == "index_put", error
    assert error.operand == "values" and "through mul" in str(error), error


def test_f3_the_epilogue_reading_a_moved_value_at_other_elements_is_caught(slot_graphs):
    slot = slot_graphs["f3_values_elsewhere"]
    gm = slot.copy()
    _only(gm, aten.index_put.default).target = aten.index_put_.default
    error = _rejected(slot, gm)
    # The write-back copy_(x, add) is Inductor's own, but add reads rev(index_put),
    # index_put's value now in x, flipped: in the functional graph a buffer of its own.
    assert error.reason == "fused_read_hazard" and error.node == "copy_" and error.operand == "src", error
    assert "through add <- rev" in str(error), error
    assert "holds the value index_put wrote into that memory" in str(error), error


def test_f4_a_foreach_made_in_place_over_a_flip_of_itself_is_caught(slot_graphs):
    slot = slot_graphs["f4"]
    gm = slot.copy()
    fa = _only(gm, aten._foreach_add.List)
    fa.target = aten._foreach_add_.List
    x = fa.args[0][0]
    for getitem in list(fa.users):
        getitem.replace_all_uses_with(x)
        gm.graph.erase_node(getitem)
    epilogue = _only(gm, aten.copy_.default)
    epilogue.replace_all_uses_with(x)
    gm.graph.erase_node(epilogue)
    error = _rejected(slot, gm)
    assert error.reason == "fused_read_hazard" and error.node == "_foreach_add", error
    assert error.operand == "other[0]" and "through rev" in str(error), error


def test_inductors_own_write_back_reading_the_input_flipped_is_not_flagged(slot_graphs):
    # functional: add(x, rev(x)) + copy_(x, add); Inductor realizes the reads of x's
    # old name before it mutates x.
    slot = slot_graphs["add_flip"]
    _check(slot, slot.copy(), compiler="inductor")


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_pass_on_the_slot_graphs_passes_the_contract(slot_graphs, name: str):
    slot = slot_graphs[name]
    gm = slot.copy()
    with V.set_fake_mode(slot.fake_mode):
        fxinplace.reinplace_report(gm, *_sample(gm), policy="inductor", check=True)


def test_unknown_compilers_are_refused():
    x = torch.randn(3)
    gm = make_fx(lambda x: x + 1)(x)
    with pytest.raises(ValueError, match="unknown compiler"):
        fxinplace.check_reinplaced(gm, gm, x, compiler="triton")


# ----------------------------------------------------------------------------
# The same rules on make_fx graphs, with real sample args.


def _trace(fn, *args):
    return make_fx(torch.func.functionalize(fn))(*args)


_VIEW_OF = {aten.slice_scatter.default: aten.slice.Tensor, aten.select_scatter.default: aten.select.int}


def _scatter_as_copy(gm):
    """Every slice_scatter / select_scatter(base, src, ...) rewritten as
    view(base, ...).copy_(src), as the pass rewrites scatters."""
    for node in list(gm.graph.nodes):
        if node.target in _VIEW_OF:
            base, src, *rest = node.args
            with gm.graph.inserting_before(node):
                view = gm.graph.call_function(_VIEW_OF[node.target], (base, *rest))
                gm.graph.call_function(aten.copy_.default, (view, src))
            node.replace_all_uses_with(base)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


def _contract(fn, *args):
    """fn's functional graph with its scatters written in place by hand, checked under
    the contract; returns the error or None."""
    gm = _trace(fn, *args)
    functional = copy_functional(gm)
    _scatter_as_copy(gm)
    fxinplace.check_reinplaced(functional, gm, *args)  # right as FX runs it
    try:
        fxinplace.check_reinplaced(functional, gm, *args, compiler="inductor")
    except fxinplace.ReinplaceCheckError as e:
        return e
    return None


def _same_rows(x):
    y = x + 1
    y[0:2] = y[0:2] * 2  # reads what it writes, element for element
    return y


def _other_rows(x):
    y = x + 1
    y[0:2] = y[2:4] * 2  # reads rows 2:4 ... while writing 0:2: disjoint, no hazard
    return y


def _flipped_rows(x):
    y = x + 1
    y[0:3] = y[0:3].flip(0) * 2  # row 0 gets row 2, which row 2's write overwrites
    return y


def _shifted_rows(x):
    y = x + 1
    y[0:3] = y[1:4] * 2  # row 0 gets row 1, which the write of row 1 overwrites
    return y


def _flip_before_an_earlier_write(x):
    y = x + 1
    r = y.flip(0)
    y[3] = 5.0  # y written after r read it: Inductor realizes r first
    y[0:3] = r[0:3]
    return y


def test_a_copy_reading_the_elements_it_writes_is_fine():
    assert _contract(_same_rows, torch.randn(4, 3)) is None


def test_a_copy_reading_other_elements_it_does_not_write_is_fine():
    assert _contract(_other_rows, torch.randn(4, 3)) is None


@pytest.mark.parametrize("fn", [_flipped_rows, _shifted_rows])
def test_a_copy_reading_elements_it_writes_at_other_indices_is_caught(fn):
    error = _contract(fn, torch.randn(4, 3))
    assert error is not None and error.reason == "fused_read_hazard" and error.operand == "src", error
    assert error.node.startswith("copy_"), error


def test_a_producer_realized_by_a_write_in_between_is_fine():
    assert _contract(_flip_before_an_earlier_write, torch.randn(4, 3)) is None


def test_the_contract_is_off_without_the_compiler():
    gm = _trace(_flipped_rows, torch.randn(4, 3))
    functional = copy_functional(gm)
    fxinplace.check_reinplaced(functional, _scatter_as_copy(gm), torch.randn(4, 3))


def _write_backs_through_shared_memory(x0, x1):
    # x1 = x0[::2]: x0's write-back writes memory x1's write-back then reads at other
    # indices (as_strided over every other element), both the functional graph's own
    # epilogue (seed 102146 of the random pipelines).
    x0.unsqueeze_(-1)
    x1.as_strided_((3,), (2,), x1.storage_offset())
    return (x1 + 1,)


def test_the_functional_graphs_own_write_backs_through_shared_memory_are_not_the_pass_s():
    x0 = torch.randint(-4, 5, (3, 3, 7), dtype=torch.int32)
    gm = _trace(_write_backs_through_shared_memory, x0, x0[::2])
    write_backs = [n for n in gm.graph.nodes if n.target is aten.copy_.default]
    assert len(write_backs) == 2, gm.code
    x0 = torch.randint(-4, 5, (3, 3, 7), dtype=torch.int32)
    fxinplace.check_reinplaced(copy_functional(gm), gm, x0, x0[::2], compiler="inductor")
