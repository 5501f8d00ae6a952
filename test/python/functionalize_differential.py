"""Differential harness for ``functionalize`` implementations.

``check_functionalize(case, impl, remove)`` tests ``impl`` (any callable with the
signature of ``torch.func.functionalize``: ``impl(func, *, remove=...) -> Callable``)
on one ``FunctionalizeCase`` (see ``functionalize_corpus``) and returns a list of
problems (empty: the case passed). It checks:

* **eager**: ``impl(fn, remove=remove)(*args)`` returns what ``fn(*args)`` returns
  (pytree structure, dtype, shape, values) and leaves the inputs in the same state
  (input mutations are reproduced); no output is a functional wrapper; an output
  that did not share storage with an input in eager does not share one here.
* **graph** (``make_fx(impl(fn, remove=remove), tracing_mode=...)`` for "real" and
  "fake"): no mutating op except trailing input write-backs: ``aten.copy_.default``
  into a placeholder (after all other compute, at most one per input), possibly
  preceded by ``aten.resize_``/``aten.as_strided_`` on that placeholder where the
  program changed an input's metadata (``x.resize_(n)``, ``x.t_()``); with
  ``remove="mutations_and_views"`` no view op either; ``graph.lint()`` passes; and
  running the graph module on fresh inputs reproduces eager (outputs, input
  post-state, no spurious aliasing of inputs).
* **re-inplaced**: the graph then goes through ``fxinplace.reinplace`` with its
  independent checker on (``fxinplace.testing.checked``), and the result must
  still reproduce eager. A graph the pass refuses (``ReinplaceInputError``) is
  not a problem of the graph.
* **oracle**: ``torch.func.functionalize(fn, remove=remove)`` agrees with eager,
  unless the case is marked ``stock_fails`` for that mode (then the oracle is not
  run). A case whose stock check is skipped by its mark is still fully checked
  against ``impl``.

Cases with ``inference_mode=True`` run every step (input creation included) inside
``torch.inference_mode()``.
"""

from __future__ import annotations

import contextlib
import operator
import os
import re
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from differential import values_equal
from functionalize_corpus import FunctionalizeCase
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

import fxinplace
from fxinplace.testing import checked

__all__ = [
    "eager_parity_problems",
    "REMOVE_MODES",
    "TRACING_MODES",
    "IMPL_ENV",
    "FunctionalizeImpl",
    "check_functionalize",
    "format_problems",
    "graph_problems",
    "IMPL",
    "IMPL_NAME",
    "stock_fails",
]

FunctionalizeImpl = Callable[..., Callable[..., Any]]

REMOVE_MODES = ("mutations", "mutations_and_views")
TRACING_MODES = ("real", "fake")

_COPY_ = torch.ops.aten.copy_.default
_METADATA_WRITEBACK_OPS = (torch.ops.aten.resize_.default, torch.ops.aten.as_strided_.default)
_WRITEBACK_OPS = (_COPY_, *_METADATA_WRITEBACK_OPS)


# --------------------------------------------------------------------------- helpers


def _ctx(case: FunctionalizeCase) -> contextlib.AbstractContextManager:
    return torch.inference_mode() if case.inference_mode else contextlib.nullcontext()


def _fresh_args(case: FunctionalizeCase) -> tuple[Any, ...]:
    return tuple(case.make_args())


def _snapshot(x: Any) -> Any:
    return x.detach().clone() if isinstance(x, torch.Tensor) else x


def _values_equal(got: Any, want: Any) -> str | None:
    """``differential.values_equal``, and non-tensor leaves must also have the same type
    (an ``int`` where eager returns a ``bool`` is a difference)."""
    both_plain = not isinstance(got, torch.Tensor) and not isinstance(want, torch.Tensor)
    if both_plain and type(got) is not type(want):
        return f"type {type(got).__name__} != {type(want).__name__}"
    return values_equal(got, want)


def _storage_ptr(t: torch.Tensor) -> int | None:
    storage = t.untyped_storage()
    if storage.nbytes() == 0:
        return None  # empty storages have no meaningful address
    return storage.data_ptr()


def _aliased_inputs(out: Any, args: Sequence[Any]) -> frozenset[int]:
    if not isinstance(out, torch.Tensor):
        return frozenset()
    ptr = _storage_ptr(out)
    if ptr is None:
        return frozenset()
    return frozenset(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and _storage_ptr(a) == ptr)


def _is_functional(t: torch.Tensor) -> bool:
    from torch._subclasses.functional_tensor import FunctionalTensor

    return isinstance(t, FunctionalTensor) or torch._is_functional_tensor(t)


class _Run:
    """Outputs (flattened, snapshotted), input post-state and input aliasing of one call."""

    def __init__(self, call: Callable[..., Any], call_args: tuple[Any, ...]) -> None:
        out = call(*call_args)
        leaves, self.spec = pytree.tree_flatten(out)
        args = pytree.tree_leaves(call_args)  # inputs may be containers of tensors
        # Aliasing and wrapper checks on the live objects, then snapshot values.
        self.aliases = [_aliased_inputs(x, args) for x in leaves]
        self.functional = [
            i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and _is_functional(x)
        ]
        self.functional_args = [
            i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and _is_functional(a)
        ]
        self.outs = [_snapshot(x) for x in leaves]
        self.args_after = [_snapshot(a) for a in args]


def _compare(label: str, run: _Run, eager: _Run) -> list[str]:
    problems: list[str] = []
    if run.spec != eager.spec:
        return [f"{label}: output structure {run.spec} != eager's {eager.spec}"]
    for i, (got, want) in enumerate(zip(run.outs, eager.outs, strict=True)):
        why = _values_equal(got, want)
        if why is not None:
            problems.append(f"{label}: output[{i}] differs from eager: {why}")
    for i, (got, want) in enumerate(zip(run.args_after, eager.args_after, strict=True)):
        why = _values_equal(got, want)
        if why is not None:
            problems.append(f"{label}: input[{i}] after the call differs from eager: {why}")
    for i in run.functional:
        problems.append(f"{label}: output[{i}] is a functional tensor wrapper")
    for i in run.functional_args:
        problems.append(f"{label}: input[{i}] is a functional tensor wrapper after the call")
    for i, (got, want) in enumerate(zip(run.aliases, eager.aliases, strict=True)):
        if not want and got:
            problems.append(
                f"{label}: output[{i}] shares storage with input(s) {sorted(got)}, "
                f"but eager's output[{i}] aliases no input"
            )
    return problems


def _format_exc(prefix: str, exc: BaseException) -> str:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-4))
    return f"{prefix}: {type(exc).__name__}: {exc}\n{tb}"


# --------------------------------------------------------------------------- graph checks


def _is_mutating(target: torch._ops.OpOverload) -> bool:
    schema = target._schema
    if schema.is_mutable:
        return True
    if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
        return True
    tags = getattr(target, "tags", ())
    return torch.Tag.inplace in tags or torch.Tag.inplace_view in tags


def _is_view(target: torch._ops.OpOverload) -> bool:
    schema = target._schema
    # View ops return an alias of an input (``Tensor(a)``); there is no "view" tag.
    return any(r.alias_info is not None for r in schema.returns)


def _writeback_root(node: torch.fx.Node) -> torch.fx.Node | None:
    """The placeholder an input write-back node writes to, or ``None`` if ``node`` is none.

    A write-back is ``aten.copy_.default(dst, value)`` where ``dst`` is a placeholder,
    or the result of ``aten.resize_``/``aten.as_strided_`` applied to one (how the
    stock implementation replays metadata mutations of inputs: ``x.resize_(n)``,
    ``x.t_()``, ...), and those metadata replays themselves.
    """
    if node.op != "call_function" or node.target not in _WRITEBACK_OPS or not node.args:
        return None
    dst = node.args[0]
    if not isinstance(dst, torch.fx.Node):
        return None
    if dst.op == "placeholder":
        return dst
    if dst.target in _METADATA_WRITEBACK_OPS:
        return _writeback_root(dst)
    return None


def _is_writeback(node: torch.fx.Node) -> bool:
    return _writeback_root(node) is not None


_MATMUL_VIEWS = (torch.ops.aten.view.default, torch.ops.aten.expand.default)
_MATMUL_KERNELS = (torch.ops.aten.bmm.default, torch.ops.aten.mm.default)


def _feeds_only_matmul(node: torch.fx.Node) -> bool:
    """``node`` is a view/expand whose uses are (through more views/expands) only bmm/mm."""
    if node.target not in _MATMUL_VIEWS or not node.users:
        return False
    return all(u.target in _MATMUL_KERNELS or _feeds_only_matmul(u) for u in node.users)


def graph_problems(
    gm: torch.fx.GraphModule, remove: str, *, tolerate_matmul_views: bool = False
) -> list[str]:
    """Structural problems of a functionalized graph (see module docstring).

    ``tolerate_matmul_views`` accepts, with ``remove="mutations_and_views"``, the
    ``aten.view``/``aten.expand`` nodes that ``aten::matmul``'s decomposition feeds
    into ``bmm``/``mm`` (``torch.func.functionalize`` leaves them: matmul of a
    >2-d operand; see the corpus case ``matmul_batched_views``).
    """
    problems: list[str] = []
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    # Index of the last call that is not an input write-back.
    last_compute = max((i for i, n in enumerate(calls) if not _is_writeback(n)), default=-1)
    written: dict[str, str] = {}
    for i, node in enumerate(calls):
        target = node.target
        if _is_writeback(node):
            if i < last_compute:
                problems.append(
                    f"graph: input write-back {node.format_node()} is followed by other compute "
                    f"({calls[last_compute].format_node()})"
                )
            if target is _COPY_:
                ph = _writeback_root(node).name
                if ph in written:
                    problems.append(f"graph: input {ph} is written back twice ({written[ph]}, {node.name})")
                written[ph] = node.name
                if node.users:
                    problems.append(f"graph: input write-back {node.name} is used by {list(node.users)}")
            elif any(u.target not in _WRITEBACK_OPS for u in node.users) or not node.users:
                # resize_ (the storage grows) may be followed by as_strided_ (eager's strides)
                problems.append(f"graph: input metadata write-back {node.name} does not feed a copy_")
            continue
        if isinstance(target, torch._ops.OpOverload):
            if _is_mutating(target):
                problems.append(f"graph: mutating op left in the graph: {node.format_node()}")
            elif remove == "mutations_and_views" and _is_view(target):
                if tolerate_matmul_views and _feeds_only_matmul(node):
                    continue
                problems.append(
                    f"graph: view op left with remove='mutations_and_views': {node.format_node()}"
                )
        elif isinstance(target, torch._ops.HigherOrderOperator):
            problems.append(f"graph: unexpected higher-order operator: {node.format_node()}")
        elif target is not operator.getitem and not isinstance(target, torch._ops.OpOverloadPacket):
            mod = getattr(target, "__module__", "") or ""
            # torch.sym_min/sym_max/...: SymInt arithmetic of symbolic traces
            symbolic = getattr(target, "__name__", "").startswith("sym_") and mod == "torch"
            if not symbolic and not mod.startswith(("_operator", "math", "torch.fx.experimental.sym_node")):
                problems.append(f"graph: unexpected call_function target: {node.format_node()}")
        if isinstance(target, torch._ops.OpOverloadPacket):
            problems.append(f"graph: call to an overload packet (not an OpOverload): {node.format_node()}")
    try:
        gm.graph.lint()
    except Exception as exc:
        problems.append(_format_exc("graph: graph.lint() failed", exc))
    return problems


# --------------------------------------------------------------------------- entry point


def _stock_fails(case: FunctionalizeCase, remove: str) -> bool:
    marked = case.stock_fails
    if isinstance(marked, bool):
        return marked
    return remove in marked


def check_functionalize(
    case: FunctionalizeCase,
    impl: FunctionalizeImpl,
    remove: str,
    *,
    tracing_modes: Sequence[str] = TRACING_MODES,
    check_stock: bool = True,
    tolerate_matmul_views: bool = False,
) -> list[str]:
    """Differentially test ``impl`` on ``case`` with ``remove``; return the problems found.

    ``check_stock=False`` skips the ``torch.func.functionalize`` oracle;
    ``tolerate_matmul_views`` is passed to ``graph_problems`` (only meant for
    validating the harness with the stock implementation).
    """
    assert remove in REMOVE_MODES, remove
    label0 = f"[{case.name} remove={remove}]"
    problems: list[str] = []

    with _ctx(case):
        try:
            eager = _Run(case.fn, _fresh_args(case))
        except Exception as exc:
            return [_format_exc(f"{label0} eager run of the case itself raised (bad case)", exc)]

        # ---- impl, eagerly
        label = f"{label0} impl eager"
        try:
            wrapped = impl(case.fn, remove=remove)
            problems.extend(_compare(label, _Run(wrapped, _fresh_args(case)), eager))
        except Exception as exc:
            problems.append(_format_exc(f"{label} raised", exc))

        # ---- impl, traced
        for mode in tracing_modes:
            label = f"{label0} make_fx(tracing_mode={mode!r})"
            try:
                gm = make_fx(impl(case.fn, remove=remove), tracing_mode=mode)(*_fresh_args(case))
            except Exception as exc:
                problems.append(_format_exc(f"{label} tracing raised", exc))
                continue
            found = [
                f"{label} {p}"
                for p in graph_problems(gm, remove, tolerate_matmul_views=tolerate_matmul_views)
            ]
            try:
                found.extend(_compare(f"{label} graph run", _Run(gm, _fresh_args(case)), eager))
            except Exception as exc:
                found.append(_format_exc(f"{label} running the graph raised", exc))
            if not found:
                found.extend(_reinplaced_problems(label, gm, case, eager))
            if found:
                found.append(f"{label} graph code:\n{gm.code.strip()}")
            problems.extend(found)

        # ---- oracle: the stock implementation must agree with eager
        if check_stock and not _stock_fails(case, remove):
            label = f"{label0} oracle torch.func.functionalize"
            try:
                stock = _Run(torch.func.functionalize(case.fn, remove=remove), _fresh_args(case))
                stock_problems = _compare(label, stock, eager)
            except Exception as exc:
                stock_problems = [_format_exc(f"{label} raised", exc)]
            if stock_problems:
                stock_problems.append(
                    f"{label0} the stock implementation disagrees with eager: mark the case "
                    "stock_fails (with a reason) if this is a stock bug, otherwise fix the case"
                )
            problems.extend(stock_problems)
    return problems


def _reinplaced_problems(
    label: str, gm: torch.fx.GraphModule, case: FunctionalizeCase, eager: _Run
) -> list[str]:
    """Re-inplace `gm` (checked) and compare the result with eager; `gm` is rewritten."""
    try:
        checked.reinplace(gm, *pytree.tree_leaves(_fresh_args(case)))  # placeholders are the leaves
    except fxinplace.ReinplaceInputError:
        return []  # refused as a whole, clearly: nothing was rewritten
    except Exception as exc:
        return [_format_exc(f"{label} fxinplace.reinplace(check=True) raised", exc)]
    try:
        return _compare(f"{label} re-inplaced graph run", _Run(gm, _fresh_args(case)), eager)
    except Exception as exc:
        return [_format_exc(f"{label} running the re-inplaced graph raised", exc)]


def format_problems(case: FunctionalizeCase, remove: str, problems: Sequence[str], extra: str = "") -> str:
    lines = [f"functionalize differential check failed: case {case.name!r}, remove={remove!r}"]
    lines.extend(f"- {p}" for p in problems)
    if extra:
        lines.append(extra)
    return "\n".join(lines)


# --------------------------------------------------------------------------- eager parity


def _layout(t: torch.Tensor) -> tuple[Any, ...]:
    # The stride of a dim of size 1 is never used to address an element.
    strides = tuple(st if s != 1 else None for s, st in zip(t.shape, t.stride(), strict=True))
    return tuple(t.shape), strides, t.storage_offset()


def _state(x: Any) -> Any:
    """A snapshot of ``x`` that keeps a tensor's layout (strides, storage offset) as well."""
    if isinstance(x, torch.Tensor):
        return (x.detach().clone(), _layout(x))
    return x


def _state_problems(what: str, got: Any, want: Any, *, check_layout: bool) -> list[str]:
    if isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], torch.Tensor):
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], torch.Tensor)):
            return [f"{what}: {type(got).__name__} where eager has a tensor"]
        why = _values_equal(got[0], want[0])
        if why is not None:
            return [f"{what}: {why}"]
        # Layouts only matter where there is more than one element to lay out.
        if check_layout and got[1] != want[1] and want[0].numel() > 1:
            return [f"{what}: layout (size, stride, offset) {got[1]} != eager's {want[1]}"]
        return []
    why = _values_equal(got, want)
    return [] if why is None else [f"{what}: {why}"]


def _outcome(call: Callable[..., Any], args: tuple[Any, ...]) -> tuple[str, Any, Any]:
    """("raised", exception, None) or ("returned", output leaves, input leaves), as snapshots."""
    try:
        out = call(*args)
    except Exception as exc:
        return "raised", exc, None
    return (
        "returned",
        [_state(x) for x in pytree.tree_leaves(out)],
        [_state(a) for a in pytree.tree_leaves(args)],
    )


def eager_parity_problems(
    fn: Callable[..., Any],
    make_args: Callable[[], Sequence[Any]],
    *,
    removes: Sequence[str] = REMOVE_MODES,
    tracing_modes: Sequence[str] = ("real", "symbolic"),
    error: str | None = None,
    check_graph: bool = True,
    impl: FunctionalizeImpl | None = None,
    resized_args: Callable[[], Sequence[Any]] | None = None,
) -> list[str]:
    """How ``impl`` (default: the implementation under test) differs from eager on ``fn``.

    Runs ``impl(fn, remove=...)(*args)`` and, for each tracing mode, the graph
    ``make_fx(impl(fn, remove=...))`` records, on fresh ``make_args()``. Where eager
    returns, outputs and inputs after the call must equal eager's in value, dtype
    and shape, inputs also in strides and storage offset, and outputs in strides
    with ``remove="mutations"`` (``*_copy`` ops lay views out contiguously). Where
    eager raises, so must the implementation: a ``RuntimeError`` whose message
    matches ``error`` (a regex) when given. ``resized_args`` (inputs of other sizes)
    also runs the symbolic graph at a second shape, against eager on them.
    """
    impl = IMPL if impl is None else impl
    eager = _outcome(fn, tuple(make_args()))
    problems: list[str] = []

    def judge(label: str, outcome: tuple[str, Any, Any], remove: str, eager=eager) -> None:
        if eager[0] == "raised":
            if outcome[0] == "returned":
                problems.append(f"{label}: returned, but eager raises {type(eager[1]).__name__}: {eager[1]}")
            elif not isinstance(outcome[1], RuntimeError):
                problems.append(
                    f"{label}: raised {type(outcome[1]).__name__}, not RuntimeError: {outcome[1]}"
                )
            elif error is not None and not re.search(error, str(outcome[1])):
                problems.append(f"{label}: error {str(outcome[1])!r} does not match {error!r}")
            return
        if outcome[0] == "raised":
            problems.append(_format_exc(f"{label}: raised where eager returns", outcome[1]))
            return
        if len(outcome[1]) != len(eager[1]):
            problems.append(f"{label}: {len(outcome[1])} outputs, eager has {len(eager[1])}")
            return
        for i, (got, want) in enumerate(zip(outcome[1], eager[1], strict=True)):
            problems.extend(
                _state_problems(f"{label}: output[{i}]", got, want, check_layout=remove == "mutations")
            )
        for i, (got, want) in enumerate(zip(outcome[2], eager[2], strict=True)):
            problems.extend(
                _state_problems(f"{label}: input[{i}] after the call", got, want, check_layout=True)
            )

    for remove in removes:
        judge(f"[remove={remove}] eager", _outcome(impl(fn, remove=remove), tuple(make_args())), remove)
        for mode in tracing_modes:
            label = f"[remove={remove}] make_fx(tracing_mode={mode!r})"
            try:
                gm = make_fx(impl(fn, remove=remove), tracing_mode=mode)(*make_args())
            except Exception as exc:
                judge(f"{label} tracing", ("raised", exc, None), remove)
                continue
            if eager[0] == "raised":
                judge(f"{label} tracing", ("returned", None, None), remove)
                continue
            if check_graph:
                problems.extend(f"{label} {p}" for p in graph_problems(gm, remove))
            judge(f"{label} graph run", _outcome(gm, tuple(make_args())), remove)
            if mode == "symbolic" and resized_args is not None:
                other, got = _outcome(fn, tuple(resized_args())), _outcome(gm, tuple(resized_args()))
                judge(f"{label} graph run at another shape", got, remove, other)
    return problems


# --------------------------------------------------------------------------- implementation selection

IMPL_ENV = "FXINPLACE_FUNCTIONALIZE_IMPL"


def impl_name_from_env() -> str:
    """``"fxinplace"`` (default) or ``"stock"``, from ``$FXINPLACE_FUNCTIONALIZE_IMPL``."""
    name = os.environ.get(IMPL_ENV, "fxinplace").strip().lower() or "fxinplace"
    if name not in ("fxinplace", "stock"):
        raise ValueError(f"${IMPL_ENV} must be 'fxinplace' or 'stock', not {name!r}")
    return name


IMPL_NAME = impl_name_from_env()
#: The implementation under test: fxinplace.functionalize, or torch.func.functionalize
#: with $FXINPLACE_FUNCTIONALIZE_IMPL=stock (to validate the harness itself).
IMPL: FunctionalizeImpl = torch.func.functionalize if IMPL_NAME == "stock" else fxinplace.functionalize


def stock_fails(case: FunctionalizeCase, remove: str) -> bool:
    """Whether ``case`` is marked as one the stock implementation gets wrong for ``remove``."""
    return _stock_fails(case, remove)
