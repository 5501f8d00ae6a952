"""Differential harness for ``functionalize`` implementations.

``check_functionalize(case, impl, remove)`` tests ``impl`` (any callable with the
signature of ``torch.func.functionalize``: ``impl(func, *, remove=...) -> Callable``)
on one ``FunctionalizeCase`` (the corpus, ``test/python/corpus/functionalize/``,
registers each program with ``@functionalize_case(make_args, ...)`` right above it)
and returns a list of problems (empty: the case passed). Runs are compared by
``fxinplace.testing.harness.oracle``. It checks:

* **eager**: ``impl(fn, remove=remove)(*args)`` returns what ``fn(*args)`` returns
  (pytree structure, dtype, shape, values) and leaves the inputs in the same state
  (input mutations are reproduced); no output is a functional wrapper; no output
  shares storage with an input its eager counterpart does not share storage with.
* **graph** (``make_fx(impl(fn, remove=remove), tracing_mode=...)`` for "real" and
  "fake"): no mutating op except trailing input write-backs: ``aten.copy_.default``
  into a placeholder (after all other compute, at most one per input), possibly
  preceded by ``aten.resize_``/``aten.as_strided_`` on that placeholder where the
  program changed an input's metadata (``x.resize_(n)``, ``x.t_()``); with
  ``remove="mutations_and_views"`` no view op either; ``graph.lint()`` passes; and
  running the graph module on fresh inputs reproduces eager (outputs, input
  post-state, no spurious aliasing of inputs).
* **re-inplaced**: the graph then goes through ``fxinplace.reinplace`` with its
  independent checker on (``fxinplace.testing.harness.checked``), and the result must
  still reproduce eager. A graph the pass refuses (``ReinplaceInputError``) is
  not a problem of the graph.
* **oracle**: ``torch.func.functionalize(fn, remove=remove)`` agrees with eager,
  unless the case is marked ``stock_fails`` for that mode (then the oracle is not
  run). A case whose stock check is skipped by its mark is still fully checked
  against ``impl``.

Cases with ``inference_mode=True`` run every step (input creation included) inside
``torch.inference_mode()``.

``eager_parity_problems(fn, make_args)`` is the same comparison for one program
outside the corpus, stricter on layouts (strides and storage offsets of the inputs
after the call, and of the outputs with ``remove="mutations"``) and checking that the
implementation raises where eager raises.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

import fxinplace
from fxinplace.testing.harness import cases, checked
from fxinplace.testing.harness.oracle import Observed, differences, format_exc, observe, problem_lines

__all__ = [
    "eager_parity_problems",
    "REMOVE_MODES",
    "TRACING_MODES",
    "IMPL_ENV",
    "FunctionalizeCase",
    "FunctionalizeImpl",
    "check_functionalize",
    "format_problems",
    "functionalize_case",
    "graph_problems",
    "IMPL",
    "IMPL_NAME",
    "stock_fails",
]

FunctionalizeImpl = Callable[..., Callable[..., Any]]
F = TypeVar("F", bound=Callable[..., Any])

REMOVE_MODES = ("mutations", "mutations_and_views")
TRACING_MODES = ("real", "fake")

_COPY_ = torch.ops.aten.copy_.default
_METADATA_WRITEBACK_OPS = (torch.ops.aten.resize_.default, torch.ops.aten.as_strided_.default)
_WRITEBACK_OPS = (_COPY_, *_METADATA_WRITEBACK_OPS)


# --------------------------------------------------------------------------- cases


@dataclasses.dataclass(frozen=True)
class FunctionalizeCase:
    """A program and a factory of fresh, deterministic inputs (``make_args()`` returns a new
    tuple on every call: inputs may be mutated).

    ``inference_mode``: the harness creates the inputs and runs every call inside
    ``torch.inference_mode()``. ``stock_fails``: ``torch.func.functionalize`` itself does not
    reproduce eager on this case (``True`` for both ``remove`` modes, or a tuple of the
    failing modes); ``stock_fails_reason`` says why. The oracle comparison is then skipped,
    the implementation under test is still checked against eager.
    """

    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], Sequence[Any]]
    inference_mode: bool = False
    stock_fails: bool | tuple[str, ...] = False
    stock_fails_reason: str = ""
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.stock_fails and not self.stock_fails_reason:
            raise ValueError(f"case {self.name}: stock_fails needs a stock_fails_reason")


def functionalize_case(
    make_args: Callable[[], Sequence[Any]],
    *tags: str,
    name: str | None = None,
    inference_mode: bool = False,
    stock_fails: bool | tuple[str, ...] = False,
    stock_fails_reason: str = "",
) -> Callable[[F], F]:
    """Register the decorated function as a ``FunctionalizeCase`` named after it (or ``name``)."""
    return cases.case_decorator(
        FunctionalizeCase,
        make_args,
        name,
        inference_mode=inference_mode,
        stock_fails=stock_fails,
        stock_fails_reason=stock_fails_reason,
        tags=tags,
    )


def stock_fails(case: FunctionalizeCase, remove: str) -> bool:
    """Whether ``case`` is marked as one the stock implementation gets wrong for ``remove``."""
    marked = case.stock_fails
    return marked if isinstance(marked, bool) else remove in marked


# --------------------------------------------------------------------------- runs


def _ctx(case: FunctionalizeCase) -> contextlib.AbstractContextManager:
    return torch.inference_mode() if case.inference_mode else contextlib.nullcontext()


def _fresh_args(case: FunctionalizeCase) -> tuple[Any, ...]:
    return tuple(case.make_args())


def _compare(label: str, run: Observed, eager: Observed) -> list[str]:
    """Values, input post-state and no new aliasing of inputs, against eager; no functional
    tensor wrapper among the outputs, or left in the inputs."""
    if run.error is not None:
        return [format_exc(run.error, f"{label} raised")]
    problems = problem_lines(label, "eager", differences(run, eager, strides=False, aliasing="no_new"))
    problems.extend(f"{label}: output[{i}] is a functional tensor wrapper" for i in run.functional_outs)
    problems.extend(
        f"{label}: input[{i}] is a functional tensor wrapper after the call" for i in run.functional_args
    )
    return problems


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
    if dst.target is _COPY_ and node.target in _METADATA_WRITEBACK_OPS:
        # The memory an input leaves (a shrinking resize) written before its
        # metadata changes: copy_(x, before); as_strided_(copy_, ...); copy_(...).
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
                changes_metadata = node.users and all(u.target in _METADATA_WRITEBACK_OPS for u in node.users)
                if not changes_metadata:
                    written[ph] = node.name
                if node.users and not changes_metadata:
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
        problems.append(format_exc(exc, "graph: graph.lint() failed"))
    return problems


# --------------------------------------------------------------------------- entry point


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
        eager = observe(case.fn, _fresh_args(case))
        if eager.error is not None:
            return [format_exc(eager.error, f"{label0} eager run of the case itself raised (bad case)")]

        # ---- impl, eagerly
        label = f"{label0} impl eager"
        try:
            wrapped = impl(case.fn, remove=remove)
        except Exception as exc:
            problems.append(format_exc(exc, f"{label} raised"))
        else:
            problems.extend(_compare(label, observe(wrapped, _fresh_args(case)), eager))

        # ---- impl, traced
        for mode in tracing_modes:
            label = f"{label0} make_fx(tracing_mode={mode!r})"
            try:
                gm = make_fx(impl(case.fn, remove=remove), tracing_mode=mode)(*_fresh_args(case))
            except Exception as exc:
                problems.append(format_exc(exc, f"{label} tracing raised"))
                continue
            found = [
                f"{label} {p}"
                for p in graph_problems(gm, remove, tolerate_matmul_views=tolerate_matmul_views)
            ]
            found.extend(_compare(f"{label} graph run", observe(gm, _fresh_args(case)), eager))
            if not found:
                found.extend(_reinplaced_problems(label, gm, case, eager))
            if found:
                found.append(f"{label} graph code:\n{gm.code.strip()}")
            problems.extend(found)

        # ---- oracle: the stock implementation must agree with eager
        if check_stock and not stock_fails(case, remove):
            label = f"{label0} oracle torch.func.functionalize"
            stock = observe(torch.func.functionalize(case.fn, remove=remove), _fresh_args(case))
            stock_problems = _compare(label, stock, eager)
            if stock_problems:
                stock_problems.append(
                    f"{label0} the stock implementation disagrees with eager: mark the case "
                    "stock_fails (with a reason) if this is a stock bug, otherwise fix the case"
                )
            problems.extend(stock_problems)
    return problems


def _reinplaced_problems(
    label: str, gm: torch.fx.GraphModule, case: FunctionalizeCase, eager: Observed
) -> list[str]:
    """Re-inplace `gm` (checked) and compare the result with eager; `gm` is rewritten."""
    try:
        checked.reinplace(gm, *pytree.tree_leaves(_fresh_args(case)))  # placeholders are the leaves
    except fxinplace.ReinplaceInputError:
        return []  # refused as a whole, clearly: nothing was rewritten
    except Exception as exc:
        return [format_exc(exc, f"{label} fxinplace.reinplace(check=True) raised")]
    return _compare(f"{label} re-inplaced graph run", observe(gm, _fresh_args(case)), eager)


def format_problems(case: FunctionalizeCase, remove: str, problems: Sequence[str], extra: str = "") -> str:
    lines = [f"functionalize differential check failed: case {case.name!r}, remove={remove!r}"]
    lines.extend(f"- {p}" for p in problems)
    if extra:
        lines.append(extra)
    return "\n".join(lines)


# --------------------------------------------------------------------------- eager parity


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
    eager = observe(fn, tuple(make_args()))
    problems: list[str] = []

    def judge(label: str, run: Observed, remove: str, eager: Observed = eager) -> None:
        if eager.error is not None:
            if run.error is None:
                problems.append(
                    f"{label}: returned, but eager raises {type(eager.error).__name__}: {eager.error}"
                )
            elif not isinstance(run.error, RuntimeError):
                problems.append(f"{label}: raised {type(run.error).__name__}, not RuntimeError: {run.error}")
            elif error is not None and not re.search(error, str(run.error)):
                problems.append(f"{label}: error {str(run.error)!r} does not match {error!r}")
            return
        if run.error is not None:
            problems.append(format_exc(run.error, f"{label}: raised where eager returns"))
            return
        found = differences(
            run, eager, strides=remove == "mutations", input_layout=True, offsets=True, aliasing="ignore"
        )
        problems.extend(problem_lines(label, "eager", found))

    for remove in removes:
        judge(f"[remove={remove}] eager", observe(impl(fn, remove=remove), tuple(make_args())), remove)
        for mode in tracing_modes:
            label = f"[remove={remove}] make_fx(tracing_mode={mode!r})"
            try:
                gm = make_fx(impl(fn, remove=remove), tracing_mode=mode)(*make_args())
            except Exception as exc:
                judge(f"{label} tracing", Observed(error=exc), remove)
                continue
            if eager.error is not None:
                judge(f"{label} tracing", Observed(), remove)
                continue
            if check_graph:
                problems.extend(f"{label} {p}" for p in graph_problems(gm, remove))
            judge(f"{label} graph run", observe(gm, tuple(make_args())), remove)
            if mode == "symbolic" and resized_args is not None:
                other, got = observe(fn, tuple(resized_args())), observe(gm, tuple(resized_args()))
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
