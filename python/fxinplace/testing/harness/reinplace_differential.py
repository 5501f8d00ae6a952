"""Differential harness for re-inplacing: stock ``reinplace`` vs a native pass vs eager.

``check_program(fn, make_args)`` runs ``fn`` eagerly, traces it three times with
``make_fx(torch.func.functionalize(fn))``, runs the stock pass on one trace and the
native pass on another, keeps the third un-reinplaced as the aliasing oracle, runs
every graph on fresh inputs and compares (``fxinplace.testing.harness.oracle``):

* outputs (values, shapes, dtypes) with eager;
* the post-state of every input (inputs may be mutated by ``fn``) with eager;
* aliasing: for every output tensor, the set of inputs whose storage it shares,
  and which outputs share storage with each other, must equal the oracle's.

The stock pass is *sound* on a program iff it raised nothing (in the pass and at
run time) and all checks pass.  Where it is sound (and ``require_stock_match``),
the native pass must generate byte-identical ``gm.code``.  The native pass must
always pass every check against eager.

The corpus (``test/python/corpus/reinplace/``) registers each program with
``@reinplace_case(make_args, ...)`` right above it; ``check_case`` checks one
``Program`` and what the corpus expects of it.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.reinplace import reinplace as stock_reinplace

import fxinplace
from fxinplace.testing.harness import cases
from fxinplace.testing.harness.oracle import Observed, differences, format_exc, observe, problem_lines

__all__ = [
    "Outcome",
    "Program",
    "assert_ok",
    "check_case",
    "check_program",
    "expectation_problems",
    "reinplace_case",
    "self_check",
    "stock_reinplace",
    "structure",
]

ReinplaceFn = Callable[..., Any]
F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class Program:
    """A case of the re-inplacing corpus.

    ``make_args`` returns a *fresh*, deterministically seeded tuple of inputs each call.
    ``require_stock_match=False`` is reserved for programs on which the stock pass is
    genuinely unsound (it raises, or the re-inplaced graph computes something else); the
    program says why. ``expect`` pins exact counts of ``call_function`` targets in the
    re-inplaced graph (see ``structure``); a count of 0 means "absent".
    """

    name: str
    fn: Callable[..., Any]
    make_args: Callable[[], Sequence[Any]]
    require_stock_match: bool = True
    # Extra knobs forwarded to check_program (defaults match its defaults).
    tracing_mode: str = "real"
    make_trace_args: Callable[[], Sequence[Any]] | None = None
    # Exact counts of call_function targets expected in the re-inplaced graph.
    expect: Mapping[str, int] | None = None


def reinplace_case(
    make_args: Callable[[], Sequence[Any]],
    *,
    name: str | None = None,
    require_stock_match: bool = True,
    tracing_mode: str = "real",
    make_trace_args: Callable[[], Sequence[Any]] | None = None,
    expect: Mapping[str, int] | None = None,
) -> Callable[[F], F]:
    """Register the decorated function as a ``Program`` named after it (or ``name``)."""
    return cases.case_decorator(
        Program,
        make_args,
        name,
        require_stock_match=require_stock_match,
        tracing_mode=tracing_mode,
        make_trace_args=make_trace_args,
        expect=expect,
    )


@dataclasses.dataclass
class Outcome:
    """What ``check_program`` found.

    ``code_match`` is ``None`` when no code comparison was made (stock unsound,
    ``require_stock_match=False``, or a pass raised before producing code).
    """

    name: str
    stock_sound: bool
    native_ok: bool
    code_match: bool | None
    problems: list[str]
    stock_code: str | None
    native_code: str | None
    stock_problems: list[str] = dataclasses.field(default_factory=list)
    # Why the code differs from stock's although stock ran soundly, when that is
    # a known, deliberate difference (see explain_divergence); None otherwise.
    divergence: str | None = None
    # The re-inplaced graph modules (for structural assertions); None if a pass raised.
    gm_stock: torch.fx.GraphModule | None = dataclasses.field(default=None, repr=False)
    gm_native: torch.fx.GraphModule | None = dataclasses.field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.native_ok and (self.code_match is not False or self.divergence is not None)


def structure(gm: torch.fx.GraphModule) -> collections.Counter[str]:
    """Counter of ``call_function`` targets, e.g. ``{'aten.add_.Tensor': 1}``."""
    counts: collections.Counter[str] = collections.Counter()
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            counts[str(target)] += 1  # e.g. "aten.add_.Tensor"
        else:
            mod = getattr(target, "__module__", None) or ""
            qual = getattr(target, "__qualname__", None) or repr(target)
            counts[f"{mod}.{qual}" if mod else qual] += 1  # e.g. "_operator.getitem"
    return counts


# --------------------------------------------------------------------------- helpers


def _default_native() -> ReinplaceFn:
    from fxinplace.testing.harness import checked  # lazily: the harness works without it

    return checked.reinplace


def _is_fxinplace(native: ReinplaceFn) -> bool:
    from fxinplace.testing.harness import checked

    return native is fxinplace.reinplace or native is checked.reinplace


def _compare(label: str, run: Observed, eager: Observed, oracle: Observed | None) -> list[str]:
    """Values against eager; aliasing against the un-reinplaced graph (``oracle``)."""
    if run.error is not None:
        return [format_exc(run.error, f"{label} raised at run time", limit=-3)]
    problems = problem_lines(label, "eager", differences(run, eager, strides=False, aliasing="ignore"))
    if oracle is not None and run.spec == eager.spec == oracle.spec:
        found = differences(run, oracle, values=False, strides=False, aliasing="equal")
        problems.extend(problem_lines(label, "the un-reinplaced graph", found))
    return problems


def _trace(
    fn: Callable[..., Any], make_args: Callable[[], Sequence[Any]], tracing_mode: str
) -> torch.fx.GraphModule:
    return make_fx(torch.func.functionalize(fn), tracing_mode=tracing_mode)(*make_args())


# --------------------------------------------------------------------------- entry points


def check_program(
    fn: Callable[..., Any],
    make_args: Callable[[], Sequence[Any]],
    *,
    name: str = "",
    require_stock_match: bool = True,
    native: ReinplaceFn | None = None,
    tracing_mode: str = "real",
    make_trace_args: Callable[[], Sequence[Any]] | None = None,
) -> Outcome:
    """Differentially test ``native`` against the stock pass and eager on ``fn``.

    ``make_args`` must return a *fresh* tuple of inputs on every call.
    ``make_trace_args`` (default: ``make_args``) supplies the inputs used for tracing
    and as the passes' ``sample_args`` (e.g. SymInts in place of ints).
    """
    if native is None or native is fxinplace.reinplace:
        # fxinplace's rewrites are always proved by its independent checker too.
        native = _default_native()
    trace_args = make_trace_args if make_trace_args is not None else make_args

    eager = observe(fn, make_args())
    if eager.error is not None:
        raise eager.error

    gm_orig = _trace(fn, trace_args, tracing_mode)
    gm_stock = _trace(fn, trace_args, tracing_mode)
    gm_native = _trace(fn, trace_args, tracing_mode)

    problems: list[str] = []
    stock_problems: list[str] = []

    # Sanity: the oracle must itself agree with eager, otherwise the program is
    # outside what functionalize + make_fx can express and the test is meaningless.
    oracle: Observed | None = observe(gm_orig, make_args())
    problems.extend(_compare("un-reinplaced graph", oracle, eager, None))
    if oracle.error is not None:
        oracle = None

    # ---- stock
    stock_code: str | None = None
    try:
        res = stock_reinplace(gm_stock, *trace_args())
        gm_stock = res if isinstance(res, torch.fx.GraphModule) else gm_stock
        stock_code = gm_stock.code
        stock_problems.extend(_compare("stock", observe(gm_stock, make_args()), eager, oracle))
    except Exception as exc:
        stock_problems.append(format_exc(exc, "stock raised", limit=-3))
    stock_sound = not stock_problems and not problems

    # ---- native
    native_code: str | None = None
    native_problems: list[str] = []
    try:
        res = native(gm_native, *trace_args())
        gm_native = res if isinstance(res, torch.fx.GraphModule) else gm_native
        native_code = gm_native.code
    except Exception as exc:
        native_problems.append(format_exc(exc, "native pass raised", limit=-3))
    else:
        native_problems.extend(_compare("native graph", observe(gm_native, make_args()), eager, oracle))
        try:
            gm_native.graph.lint()
        except Exception as exc:
            native_problems.append(format_exc(exc, "native graph fails graph.lint()", limit=-3))
    native_ok = not native_problems and not problems
    problems.extend(native_problems)

    code_match: bool | None = None
    divergence: str | None = None
    if stock_sound and require_stock_match and native_code is not None and stock_code is not None:
        code_match = native_code == stock_code
        if not code_match and _is_fxinplace(native):
            divergence = explain_divergence(fn, trace_args, tracing_mode, gm_stock)
        if not code_match and divergence is None:
            problems.append("native gm.code differs from stock gm.code (stock is sound here)")

    return Outcome(
        name=name,
        stock_sound=stock_sound,
        native_ok=native_ok,
        code_match=code_match,
        problems=problems,
        stock_code=stock_code,
        native_code=native_code,
        stock_problems=stock_problems,
        divergence=divergence,
        gm_stock=gm_stock if stock_code is not None else None,
        gm_native=gm_native if native_code is not None else None,
    )


# Refusals that exist because the stock pass's rewrite is not valid in general
# (it may have happened to give the right numbers on this input).
SOUNDNESS_REFUSALS = {
    "shape_mismatch": "stock compares numel, not shape",
    "operand_aliases_self": "stock checks operand aliasing by node identity only",
    "layout_sensitive_use": "stock moves a result under a layout-dependent view (as_strided/view)",
    "scatter_unproven": "stock removes a scatter whose source never lands in place",
    "self_overlaps": "stock refuses self-overlap only when ATen's check says yes (stride 0)",
}


def _rewritten_by_stock(gm_stock: torch.fx.GraphModule) -> set[str]:
    names = set()
    for node in gm_stock.graph.nodes:
        target = getattr(node, "target", None)
        schema = getattr(target, "_schema", None)
        if schema is not None and schema.name.endswith("_") and node.op == "call_function":
            names.add(node.name)
    return names


def explain_divergence(fn, trace_args, tracing_mode, gm_stock) -> str | None:
    """Why fxinplace's code differs from a sound stock run, if the reason is a known one.

    1. fxinplace refused, for a soundness reason the stock pass does not check, a node
       the stock pass rewrote (stock's rewrite gave the right numbers here by luck).
    2. With the metadata computed as the stock pass computes it (FakeTensor replay),
       fxinplace produces exactly stock's code: the difference is in the metadata
       (real kernels and fake kernels disagree on e.g. strides of size-1 dims).
    3. fxinplace wrote `_foreach_*` ops in place, which the stock pass has no rule for
       (their first argument is a list); with those ops left to it as plain readers,
       fxinplace produces exactly stock's code.
    Anything else is a real mismatch.
    """
    from fxinplace.testing.harness import checked

    gm = _trace(fn, trace_args, tracing_mode)
    report = checked.reinplace_report(gm, *trace_args())
    stock_names = _rewritten_by_stock(gm_stock)
    stock_nodes = {n.name for n in gm_stock.graph.nodes}
    for d in report.decisions:
        why = SOUNDNESS_REFUSALS.get(d.reason_code)
        if why is None:
            continue
        culprit_removed = d.culprit is not None and d.culprit not in stock_nodes
        # A node stock rewrote keeps its name (foo -> foo_); a scatter stock rewrote as
        # view + copy_ or removed is gone from its graph.
        if d.node in stock_names or d.node not in stock_nodes or culprit_removed:
            return f"{d.node}: fxinplace refused ({d.reason}); {why}"
    gm_fake = _trace(fn, trace_args, tracing_mode)
    checked.reinplace_report(gm_fake, *trace_args(), metadata="fake")
    if gm_fake.code == gm_stock.code:
        return "metadata: with FakeTensor metadata fxinplace matches stock exactly"
    if any(_is_foreach(n) for n in gm_stock.graph.nodes):
        gm_plain = _trace(fn, trace_args, tracing_mode)
        with _foreach_ops_as_readers():
            checked.reinplace_report(gm_plain, *trace_args())
        if gm_plain.code == gm_stock.code:
            return "_foreach_*: fxinplace wrote them in place (stock has no rule for them), else it matches"
    return None


def _is_foreach(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and str(node.target).startswith("aten._foreach_")


@contextlib.contextmanager
def _foreach_ops_as_readers() -> Iterator[None]:
    """fxinplace's frontend reading `_foreach_*` ops as ops with no write slot (as the stock
    pass sees them): a test-only view, by patching the frontend's operator table."""
    from fxinplace._reinplace import records

    real = records.op_info

    def op_info(target: Any) -> Any:
        info = real(target)
        return dataclasses.replace(info, is_foreach=False) if info.is_foreach else info

    records.op_info = op_info
    try:
        yield
    finally:
        records.op_info = real


def assert_ok(outcome: Outcome) -> None:
    """Raise ``AssertionError`` with a readable report unless ``outcome`` passed."""
    if outcome.ok:
        return
    lines = [f"differential check failed for {outcome.name or '<unnamed>'}"]
    lines.append(
        f"  stock_sound={outcome.stock_sound} native_ok={outcome.native_ok} code_match={outcome.code_match}"
    )
    lines.append("problems:")
    lines.extend(f"  - {p}" for p in outcome.problems)
    if outcome.stock_problems:
        lines.append("stock problems (stock treated as unsound):")
        lines.extend(f"  - {p}" for p in outcome.stock_problems)
    lines.append("---- stock code ----")
    lines.append(outcome.stock_code if outcome.stock_code is not None else "<none>")
    lines.append("---- native code ----")
    lines.append(outcome.native_code if outcome.native_code is not None else "<none>")
    if outcome.stock_code is not None and outcome.native_code is not None and outcome.code_match is False:
        import difflib

        lines.append("---- diff (stock -> native) ----")
        lines.extend(
            difflib.unified_diff(
                outcome.stock_code.splitlines(),
                outcome.native_code.splitlines(),
                "stock",
                "native",
                lineterm="",
            )
        )
    raise AssertionError("\n".join(lines))


# --------------------------------------------------------------------------- corpus programs


def check_case(program: Program, native: ReinplaceFn | None = None) -> Outcome:
    """``check_program`` on a corpus ``Program``, with its knobs."""
    return check_program(
        program.fn,
        program.make_args,
        name=program.name,
        require_stock_match=program.require_stock_match,
        native=native,
        tracing_mode=program.tracing_mode,
        make_trace_args=program.make_trace_args,
    )


def expectation_problems(program: Program, outcome: Outcome) -> list[str]:
    """What the corpus expects of ``program`` beyond ``check_program``'s checks.

    A program not marked ``require_stock_match=False`` must be one the stock pass is
    sound on (otherwise the code comparison would be skipped silently), and where the
    stock pass is sound the re-inplaced graph has the op counts of ``program.expect``.
    """
    problems: list[str] = []
    if program.require_stock_match and not outcome.stock_sound:
        problems.append(
            f"{program.name}: stock pass is unsound here but the program is not marked "
            "require_stock_match=False:\n" + "\n".join(outcome.stock_problems)
        )
    if program.expect is not None and outcome.stock_sound and outcome.gm_native is not None:
        counts = structure(outcome.gm_native)
        wrong = {
            op: (counts.get(op, 0), want) for op, want in program.expect.items() if counts.get(op, 0) != want
        }
        if wrong:
            problems.append(f"{program.name}: op counts (got, expected) {wrong}\n{outcome.native_code}")
    return problems


def self_check(programs: Sequence[Program]) -> int:
    """Run the corpus with the stock pass standing in for the native one: a check of the
    corpus and the harness. A program not marked unsound must pass and meet its
    expectations; one marked unsound must be one the stock pass gets wrong. Prints a
    line a program; returns 1 if any failed."""
    start = time.perf_counter()
    failures = 0
    for p in programs:
        t0 = time.perf_counter()
        out = check_case(p, native=stock_reinplace)
        problems = out.problems + expectation_problems(p, out)
        if not out.stock_sound:
            status = "stock-unsound" if not p.require_stock_match else "FAIL stock-unsound (NOT MARKED)"
        elif not p.require_stock_match:
            status = "FAIL (marked unsound but stock is sound)"
        else:
            status = "FAIL" if problems else "ok"
        failures += status.startswith("FAIL")
        print(f"{p.name:50s} {status:20s} {time.perf_counter() - t0:6.2f}s")
        if status != "ok" and problems:
            print("    " + problems[0].splitlines()[0][:200])
    print(f"{len(programs)} programs, {failures} failures, {time.perf_counter() - start:.1f}s")
    return 1 if failures else 0
