"""Differential harness: stock ``reinplace`` vs a native re-inplacing pass vs eager.

``check_program(fn, make_args)`` runs ``fn`` eagerly, traces it three times with
``make_fx(torch.func.functionalize(fn))``, runs the stock pass on one trace and the
native pass on another, keeps the third un-reinplaced as the aliasing oracle, runs
every graph on fresh inputs and compares:

* outputs (values, shapes, dtypes) with eager;
* the post-state of every input (inputs may be mutated by ``fn``) with eager;
* aliasing: for every output tensor, the set of inputs whose storage it shares,
  and which outputs share storage with each other, must equal the oracle's.

The stock pass is *sound* on a program iff it raised nothing (in the pass and at
run time) and all checks pass.  Where it is sound (and ``require_stock_match``),
the native pass must generate byte-identical ``gm.code``.  The native pass must
always pass every check against eager.
"""

from __future__ import annotations

import collections
import dataclasses
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.reinplace import reinplace as stock_reinplace
from torch.utils import _pytree as pytree

import fxinplace

__all__ = [
    "Outcome",
    "assert_ok",
    "check_program",
    "stock_reinplace",
    "structure",
]

ReinplaceFn = Callable[..., Any]


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
    from fxinplace.testing import checked  # lazily: the harness works without it

    return checked.reinplace


def _is_fxinplace(native: ReinplaceFn) -> bool:
    from fxinplace.testing import checked

    return native is fxinplace.reinplace or native is checked.reinplace


def _snapshot(x: Any) -> Any:
    """Deep copy of tensors (values + metadata), leaving other leaves alone."""
    return pytree.tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, x)


def _shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    # Storage identity (the StorageImpl pointer), like StorageWeakRef in the stock pass.
    return a.untyped_storage()._cdata == b.untyped_storage()._cdata


def describe(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return f"tensor(shape={tuple(x.shape)}, dtype={x.dtype}, values={x.detach().flatten()[:16].tolist()})"
    return repr(x)


def values_equal(a: Any, b: Any) -> str | None:
    """``None`` when ``a`` and ``b`` agree; otherwise a short reason."""
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        return f"type mismatch: {type(a).__name__} vs {type(b).__name__}"
    if not isinstance(a, torch.Tensor):
        return None if a == b else f"{a!r} != {b!r}"
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} != {tuple(b.shape)}"
    if a.dtype != b.dtype:
        return f"dtype {a.dtype} != {b.dtype}"
    if a.device != b.device:
        return f"device {a.device} != {b.device}"
    if torch.equal(a, b):
        return None
    if a.is_floating_point() or a.is_complex():
        if torch.allclose(a, b, rtol=1.3e-6, atol=1e-5, equal_nan=True):
            return None
    return f"values differ: {describe(a)} vs {describe(b)}"


def _input_alias_sets(out_leaves: Sequence[Any], args: Sequence[Any]) -> list[frozenset[int] | None]:
    result: list[frozenset[int] | None] = []
    for o in out_leaves:
        if not isinstance(o, torch.Tensor):
            result.append(None)
            continue
        result.append(
            frozenset(i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and _shares_storage(o, a))
        )
    return result


def _output_sharing(out_leaves: Sequence[Any]) -> frozenset[tuple[int, int]]:
    pairs = set()
    for i, a in enumerate(out_leaves):
        if not isinstance(a, torch.Tensor):
            continue
        for j in range(i + 1, len(out_leaves)):
            b = out_leaves[j]
            if isinstance(b, torch.Tensor) and _shares_storage(a, b):
                pairs.add((i, j))
    return frozenset(pairs)


@dataclasses.dataclass
class _Run:
    out_leaves: list[Any]
    out_spec: Any
    args_after: list[Any]
    input_aliases: list[frozenset[int] | None]
    output_sharing: frozenset[tuple[int, int]]


def _execute(callable_: Callable[..., Any], make_args: Callable[[], Sequence[Any]]) -> _Run:
    args = tuple(make_args())
    out = callable_(*args)
    leaves, spec = pytree.tree_flatten(out)
    # Aliasing first (on the live objects), then snapshot values.
    input_aliases = _input_alias_sets(leaves, args)
    sharing = _output_sharing(leaves)
    return _Run(
        out_leaves=[_snapshot(x) for x in leaves],
        out_spec=spec,
        args_after=[_snapshot(a) for a in args],
        input_aliases=input_aliases,
        output_sharing=sharing,
    )


def _compare(label: str, run: _Run, eager: _Run, oracle: _Run | None) -> list[str]:
    problems: list[str] = []
    if run.out_spec != eager.out_spec:
        problems.append(f"{label}: output structure {run.out_spec} differs from eager's {eager.out_spec}")
        return problems
    for i, (got, want) in enumerate(zip(run.out_leaves, eager.out_leaves, strict=True)):
        why = values_equal(got, want)
        if why is not None:
            problems.append(f"{label}: output[{i}] differs from eager: {why}")
    for i, (got, want) in enumerate(zip(run.args_after, eager.args_after, strict=True)):
        why = values_equal(got, want)
        if why is not None:
            problems.append(f"{label}: input[{i}] post-state differs from eager: {why}")
    if oracle is not None and oracle.out_spec == run.out_spec:
        for i, (got, want) in enumerate(zip(run.input_aliases, oracle.input_aliases, strict=True)):
            if got != want:
                problems.append(
                    f"{label}: output[{i}] aliases inputs {sorted(got or ())}, "
                    f"un-reinplaced graph aliases {sorted(want or ())}"
                )
        if run.output_sharing != oracle.output_sharing:
            problems.append(
                f"{label}: output/output storage sharing {sorted(run.output_sharing)} "
                f"!= un-reinplaced graph's {sorted(oracle.output_sharing)}"
            )
    return problems


def _trace(
    fn: Callable[..., Any], make_args: Callable[[], Sequence[Any]], tracing_mode: str
) -> torch.fx.GraphModule:
    return make_fx(torch.func.functionalize(fn), tracing_mode=tracing_mode)(*make_args())


def _format_exc(prefix: str, exc: BaseException) -> str:
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=-3))
    return f"{prefix}: {type(exc).__name__}: {exc}\n{tb}"


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

    eager = _execute(fn, make_args)

    gm_orig = _trace(fn, trace_args, tracing_mode)
    gm_stock = _trace(fn, trace_args, tracing_mode)
    gm_native = _trace(fn, trace_args, tracing_mode)

    problems: list[str] = []
    stock_problems: list[str] = []

    oracle: _Run | None
    try:
        oracle = _execute(gm_orig, make_args)
    except Exception as exc:  # pragma: no cover - tracing bug, not a pass bug
        problems.append(_format_exc("un-reinplaced graph failed to run", exc))
        oracle = None
    else:
        # Sanity: the oracle must itself agree with eager, otherwise the program is
        # outside what functionalize + make_fx can express and the test is meaningless.
        problems.extend(_compare("un-reinplaced graph", oracle, eager, None))

    # ---- stock
    stock_code: str | None = None
    try:
        res = stock_reinplace(gm_stock, *trace_args())
        gm_stock = res if isinstance(res, torch.fx.GraphModule) else gm_stock
        stock_code = gm_stock.code
        stock_problems.extend(_compare("stock", _execute(gm_stock, make_args), eager, oracle))
    except Exception as exc:
        stock_problems.append(_format_exc("stock raised", exc))
    stock_sound = not stock_problems and not problems

    # ---- native
    native_code: str | None = None
    native_problems: list[str] = []
    try:
        res = native(gm_native, *trace_args())
        gm_native = res if isinstance(res, torch.fx.GraphModule) else gm_native
        native_code = gm_native.code
    except Exception as exc:
        native_problems.append(_format_exc("native pass raised", exc))
    else:
        try:
            native_problems.extend(_compare("native", _execute(gm_native, make_args), eager, oracle))
        except Exception as exc:
            native_problems.append(_format_exc("native graph raised at run time", exc))
        try:
            gm_native.graph.lint()
        except Exception as exc:
            native_problems.append(_format_exc("native graph fails graph.lint()", exc))
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
    Anything else is a real mismatch.
    """
    from fxinplace.testing import checked

    gm = _trace(fn, trace_args, tracing_mode)
    report = checked.reinplace_report(gm, *trace_args())
    stock_names = _rewritten_by_stock(gm_stock)
    stock_nodes = {n.name for n in gm_stock.graph.nodes}
    for d in report.decisions:
        why = SOUNDNESS_REFUSALS.get(d.reason_code)
        if why is None:
            continue
        culprit_removed = d.culprit is not None and d.culprit not in stock_nodes
        if d.node in stock_names or culprit_removed:
            return f"{d.node}: fxinplace refused ({d.reason}); {why}"
    gm_fake = _trace(fn, trace_args, tracing_mode)
    checked.reinplace_report(gm_fake, *trace_args(), metadata="fake")
    if gm_fake.code == gm_stock.code:
        return "metadata: with FakeTensor metadata fxinplace matches stock exactly"
    return None


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
