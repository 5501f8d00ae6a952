"""Seeded random programs for differential testing of functionalization and re-inplacing.

    p = generate(seed)
    print(p.source)                  # standalone: defines make_args(n) and f(...)
    f, make_args = p.fn, p.make_args
    f(*make_args(p.sizes[0]))

Unlike ``program_gen`` (whose programs only include what ``torch.func.functionalize``
already gets right), nothing here is filtered through the implementations under test:
a program is kept because *eager* PyTorch gives it one meaning, at both sizes.

* **Shape-polymorphic**: every input size is ``n``-based or a small constant, and every
  statement is executed at both ``sizes`` while the program is built and kept only if it
  behaves the same at both (runs, or raises the same exception type): a symbolic trace at
  ``sizes[0]`` can be checked at ``sizes[1]``.
* **Dtypes**: float16/32/64, int32/64, bool and complex64 programs (one main dtype, some
  inputs of others), with ops chosen per dtype family; dtype views add int16/uint8.
* **Inputs**: 0-dim, zero-size and size-1 dims; transposed, sliced, channels_last and
  expanded layouts; inputs aliasing each other (the same tensor twice, a slice, a dtype
  view, a transpose, a diagonal).
* **Views**: chains of up to 5 view ops (select, slice, transpose, permute, diagonal,
  view, reshape, squeeze/unsqueeze, as_strided, expand, unfold, conj, ``_neg_view``,
  ``view(dtype)``, real/imag, split/unbind/chunk), written through and read.
* **Writes**: in-place ops (dtype-changing ones like ``logical_not_`` included),
  ``index_put_``, ``masked_fill_``, ``scatter_``, ``scatter_add_``, ``index_add_``,
  ``copy_`` (casting, broadcasting), ``fill_``/``zero_`` (also into expanded tensors,
  where they are well defined), setitem with int/slice/tensor/mask indices, augmented
  assignment, ``out=`` forms that cast or resize.
* **Eager-rejected lines**: a line eager raises on (broadcast or promotion past self,
  writes into expanded tensors, shape mismatches, bad ``out=`` casts, indices out of
  range, partial self-overlap), either last (the program raises) or guarded by
  ``try``/``except``/``else: raise AssertionError`` (the program continues; not raising
  is itself an error).
* **Reads after writes**: after a write through a view or into an input, the next
  statements and the returns prefer the written base; returns alias inputs and
  intermediates, repeat a tensor, or are computed from one that is also used.

A write is emitted only where eager is defined (see ``tensor_facts``). Determinism: all
choices come from ``random.Random`` seeded with the seed and depend on tensor metadata
only, so a seed always gives the same source.
"""

from __future__ import annotations

import functools
import hashlib
import linecache
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import torch

from fxinplace.testing import random_ops as ops
from fxinplace.testing.errors import normalize_message
from fxinplace.testing.program_env import DualEnv
from fxinplace.testing.random_inputs import DTYPES, dtype_family, dtype_name, random_inputs
from fxinplace.testing.random_views import view_step
from fxinplace.testing.tensor_facts import injective, read_ok, storage_id

__all__ = ["SIZES", "RandomProgram", "generate"]

#: (trace size, second size) for ``make_args(n)``. Odd, so ``n`` and ``n + 1`` keep their
#: parity (divisibility by 2 is the same at both), and unlike the constants 0..3.
SIZES: tuple[int, int] = (7, 11)
_MAX_NUMEL = 400
_MAX_DIM = 5


@dataclass(frozen=True)
class RandomProgram:
    """A generated program: ``make_args(n)`` and ``f(*inputs)`` as standalone source."""

    seed: int
    make_args_source: str
    inputs: tuple[str, ...]
    body: tuple[str, ...]  # statements (a guarded line is one multi-line block)
    returns: tuple[str, ...]
    features: frozenset[str] = field(default_factory=frozenset)
    sizes: tuple[int, int] = SIZES

    @property
    def source(self) -> str:
        lines = [f"def f({', '.join(self.inputs)}):"]
        for statement in self.body:
            lines.extend("    " + line for line in statement.splitlines())
        lines.append(f"    return {', '.join(self.returns)}" + ("," if len(self.returns) == 1 else ""))
        header = (
            f"# fxinplace.testing.random_programs seed={self.seed}: "
            f"trace at n={self.sizes[0]}, run again at n={self.sizes[1]}\nimport torch\n\n\n"
        )
        return header + self.make_args_source + "\n\n" + "\n".join(lines) + "\n"

    @functools.cached_property
    def _namespace(self) -> dict:
        source = self.source
        digest = hashlib.sha1(source.encode()).hexdigest()[:10]
        filename = f"<random program seed={self.seed} {digest}>"
        # Tracebacks through f show the program's lines.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        ns: dict = {"__name__": "fxinplace_random_program"}
        exec(compile(source, filename, "exec"), ns)
        return ns

    @property
    def fn(self) -> Callable[..., object]:
        return self._namespace["f"]

    @property
    def make_args(self) -> Callable[[int], tuple]:
        return self._namespace["make_args"]

    def with_parts(self, body: Sequence[str], returns: Sequence[str]) -> RandomProgram:
        """The same program with other statements or returns (used by minimisation)."""
        return replace(self, body=tuple(body), returns=tuple(returns))

    def without_input(self, name: str) -> RandomProgram | None:
        """The program without input ``name`` (None if ``f`` uses it).

        Its line in ``make_args`` goes too unless another input is made from it; the other
        inputs' values may change (they come from one generator), so minimisation re-checks.
        """
        pattern = re.compile(rf"\b{name}\b")
        if any(pattern.search(text) for text in (*self.body, *self.returns)):
            return None
        lines = self.make_args_source.splitlines()
        made_from = [
            line for line in lines if pattern.search(line) and not line.lstrip().startswith(f"{name} =")
        ]
        keep = [
            line
            for line in lines
            if not (line.lstrip().startswith(f"{name} =") and len(made_from) == 1)  # only the return uses it
        ]
        inputs = tuple(i for i in self.inputs if i != name)
        keep[-1] = "    return (" + ", ".join(inputs) + ("," if len(inputs) == 1 else "") + ")"
        return replace(self, make_args_source="\n".join(keep) + "\n", inputs=inputs)


@dataclass
class _Var:
    depth: int  # view ops between this tensor and one the program computed or got
    root: str  # the variable whose storage it is a view of (itself if none)


@dataclass
class _Target:
    base: str  # the variable the view chain starts from
    expr: str
    ts: list[torch.Tensor]
    name: str | None  # a plain variable (assignable with +=) or None for a view expression
    depth: int
    root: str
    kinds: list[str]


@dataclass
class _Write:
    line: str
    region: list[torch.Tensor]  # what the write may touch, at each size
    reads: list[list[torch.Tensor]]  # tensors it reads, at each size
    kind: str
    fill: bool = False  # the same value into every element: defined even where elements overlap


def _fmt_tuple(items: Sequence[object]) -> str:
    return "(" + ", ".join(map(str, items)) + ("," if len(items) == 1 else "") + ")"


def _broadcasts_to(src: torch.Tensor, dst: torch.Tensor) -> bool:
    try:
        return tuple(torch.broadcast_shapes(src.shape, dst.shape)) == tuple(dst.shape)
    except RuntimeError:
        return False


def _grows(src: torch.Tensor, dst: torch.Tensor) -> bool:
    """``src`` broadcasts with ``dst`` to a bigger shape (an in-place op on ``dst`` must fail)."""
    try:
        return tuple(torch.broadcast_shapes(src.shape, dst.shape)) != tuple(dst.shape)
    except RuntimeError:
        return False


class _Builder:
    def __init__(self, seed: int, max_stmts: int) -> None:
        self.seed = seed
        self.rng = rng = random.Random(f"fxinplace.random_programs:{seed}")
        self.dtype = rng.choices(*zip(*DTYPES, strict=True))[0]
        self.inputs = random_inputs(rng, seed, SIZES, self.dtype, rng.choice((1, 2, 2, 3, 3)))
        ns: dict = {"torch": torch}
        exec(self.inputs.source, ns)
        self.env = DualEnv(ns["make_args"], SIZES, self.inputs.names)
        self.vars: dict[str, _Var] = {name: _Var(0, name) for name in self.inputs.names}
        self.order: list[str] = list(self.inputs.names)
        self.features: set[str] = set(self.inputs.features)
        self.hot: list[str] = []  # roots written to, most recent last
        self.counter = 0
        self.max_stmts = max_stmts
        self.terminal = False
        self.pending: set[str] = set()  # features of the statement being built
        self.to_return: list[str] = []  # reads the returns should prefer (write-then-reads pattern)

    # ---- picking -----------------------------------------------------------

    def _pick(self, names: Sequence[str], recency: float = 1.0) -> str:
        hot = set(self.hot[-2:])
        weights = [
            (1.0 + recency * i) * (4.0 if self.vars[n].root in hot else 1.0) for i, n in enumerate(names)
        ]
        return self.rng.choices(list(names), weights)[0]

    def _fits(self, ts: Sequence[torch.Tensor]) -> bool:
        return all(t.numel() <= _MAX_NUMEL and t.dim() <= _MAX_DIM for t in ts)

    def _chain(self, name: str, steps: int) -> tuple[str, list[torch.Tensor], list[str]]:
        """``name`` followed by up to ``steps`` view ops valid at every size."""
        expr, ts, kinds = name, self.env.tensors(name), []
        for _ in range(steps):
            for _attempt in range(6):
                proposal = view_step(self.rng, expr, ts)
                if proposal is None:
                    continue
                values = self.env.values(proposal[1])
                if values is None or not self._fits(values):
                    continue
                expr, ts = proposal[1], values
                kinds.append(proposal[0])
                break
            else:
                break
        return expr, ts, kinds

    def _note_chain(self, base: str, kinds: Sequence[str], prefix: str = "view") -> None:
        for kind in kinds:
            self.pending.add(f"{prefix}:{kind}")
        depth = self.vars[base].depth + len(kinds)
        if 3 <= depth <= 5:
            self.pending.add(f"{prefix} chain of 3-5")
        elif depth > 5:
            self.pending.add(f"{prefix} chain of 6+")

    def _operand(
        self, ok: Callable[[list[torch.Tensor]], bool], view_prob: float = 0.3
    ) -> tuple[str, list[torch.Tensor]] | None:
        for _ in range(10):
            name = self._pick(self.order)
            if self.rng.random() < view_prob:
                expr, ts, kinds = self._chain(name, self.rng.choice((1, 1, 2)))
            else:
                expr, ts, kinds = name, self.env.tensors(name), []
            if ok(ts):
                self._note_chain(name, kinds)
                if self.vars[name].root in self.hot:
                    self.pending.add("read after write")
                return expr, ts
        return None

    def _scalar(self, family: str) -> str:
        if self.rng.random() < 0.1:
            family = self.rng.choice(("float", "int", "bool", "complex"))
        return self.rng.choice(ops.SCALARS[family])

    def _fill(self, family: str) -> str:
        return self.rng.choice(ops.FILLS[family])

    # ---- bookkeeping -------------------------------------------------------

    def _new_name(self) -> str:
        self.counter += 1
        return f"t{self.counter - 1}"

    def _commit(self, line: str) -> bool:
        features, self.pending = self.pending, set()
        if not self.env.run(line):
            return False
        self.features |= features
        return True

    def _define(self, name: str, line: str, base: str | None = None, steps: int = 0) -> bool:
        if not self._commit(line):
            return False
        new = self.env.tensors(name)[0]
        var = _Var(0, name)
        if base is not None:
            var = _Var(self.vars[base].depth + steps, self.vars[base].root)
        else:
            for other in self.order:
                if storage_id(self.env.tensors(other)[0]) == storage_id(new):
                    # A compute that returns an alias (contiguous() of a contiguous tensor, .to(same dtype)).
                    var = _Var(self.vars[other].depth + 1, self.vars[other].root)
                    self.features.add("compute returning an alias")
                    break
        self.vars[name] = var
        self.order.append(name)
        return True

    # ---- statements: views and pure compute --------------------------------

    def _stmt_view(self) -> bool:
        base = self._pick(self.order)
        expr, ts, kinds = self._chain(base, self.rng.choice((1, 1, 2, 2, 3, 4)))
        if not kinds:
            return False
        self._note_chain(base, kinds)
        name = self._new_name()
        return self._define(name, f"{name} = {expr}", base, len(kinds))

    def _compute_expr(self) -> str | None:
        rng = self.rng
        a = self._operand(lambda ts: True)
        if a is None:
            return None
        ae, ats = a
        at = ats[0]
        family = dtype_family(at.dtype)
        kind = rng.choices(
            ("unary", "binary", "scalar", "reduce", "matmul", "clone", "factory", "cat", "masked_fill"),
            (3, 4, 1.5, 1.5, 0.6, 1.5, 1, 0.7, 1),
        )[0]
        if kind == "unary":
            return rng.choice(ops.UNARY[family]).format(a=ae)
        if kind == "binary":
            same = rng.random() < 0.8

            def compatible(ts: list[torch.Tensor]) -> bool:
                if same and ts[0].dtype != at.dtype:
                    return False
                try:
                    return all(
                        torch.broadcast_shapes(x.shape, y.shape).numel() <= _MAX_NUMEL
                        for x, y in zip(ats, ts, strict=True)
                    )
                except RuntimeError:
                    return False

            b = self._operand(compatible)
            if b is None:
                return None
            return rng.choice(ops.BINARY[family]).format(a=ae, b=b[0])
        if kind == "scalar":
            op = rng.choice(("+", "*", "-"))
            return f"{ae} {op} {self._scalar(family)}"
        if kind == "reduce":
            d = rng.randrange(-at.dim(), at.dim()) if at.dim() else 0
            form = rng.choice(ops.REDUCE[family])
            return form.format(a=ae, d=d) if at.dim() else f"{ae}.sum()"
        if kind == "matmul":
            if at.dim() < 2:
                return None
            return rng.choice((f"{ae} @ {ae}.mT", f"torch.matmul({ae}.mT, {ae})", f"{ae}.mT @ {ae}"))
        if kind == "clone":
            forms = [f"{ae}.clone()", f"{ae}.contiguous()", f"{ae}.to(torch.{dtype_name(at.dtype)})"]
            forms += [f"{ae}.to(torch.float64)", f"{ae}.detach().clone()"]
            if at.dim() == 4:
                forms += [
                    f"{ae}.clone(memory_format=torch.channels_last)",
                    f"{ae}.contiguous(memory_format=torch.channels_last)",
                ]
            return rng.choice(forms)
        if kind == "factory":
            return rng.choice(
                (
                    f"torch.zeros_like({ae})",
                    f"torch.ones_like({ae})",
                    f"torch.full_like({ae}, {self._fill(family)})",
                    f"{ae}.new_zeros({ae}.shape)",
                    f"torch.arange({ae}.numel()).view({ae}.shape).to({ae}.dtype)",
                    f"torch.zeros_like({ae}, dtype=torch.{dtype_name(self.dtype)})",
                )
            )
        if kind == "cat":
            if at.dim() == 0:
                return f"torch.stack([{ae}, {ae}])"
            d = rng.randrange(at.dim())

            def same_but(ts: list[torch.Tensor]) -> bool:
                return all(
                    x.dim() == y.dim()
                    and all(p == q for i, (p, q) in enumerate(zip(x.shape, y.shape, strict=True)) if i != d)
                    for x, y in zip(ats, ts, strict=True)
                )

            b = self._operand(same_but)
            if b is None:
                return None
            return f"torch.cat([{ae}, {b[0]}], {d})" if rng.random() < 0.8 else f"torch.stack([{ae}, {ae}])"
        if kind == "masked_fill":
            return f"{ae}.masked_fill({self._mask(ats)}, {self._fill(family)})"
        raise AssertionError(kind)

    def _mask(self, region: list[torch.Tensor]) -> str:
        """A bool tensor expression broadcastable to ``region`` (at each size)."""
        m = self._operand(lambda ts: all(_broadcasts_to(x, r) for x, r in zip(ts, region, strict=True)))
        if m is None:
            return "True" if self.rng.random() < 0.5 else "False"
        me, mts = m
        if mts[0].dtype == torch.bool:
            return me
        return f"{me}.real > 0" if mts[0].dtype.is_complex else f"{me} > 0"

    def _stmt_compute(self) -> bool:
        expr = self._compute_expr()
        if expr is None:
            self.pending = set()
            return False
        values = self.env.values(expr)
        if values is None or not self._fits(values):
            self.pending = set()
            return False
        name = self._new_name()
        return self._define(name, f"{name} = {expr}")

    # ---- statements: writes --------------------------------------------------

    def _target(self, inputs_first: float = 0.35) -> _Target | None:
        rng = self.rng
        for _ in range(6):
            if rng.random() < inputs_first:
                cands = [n for n in self.order if self.vars[n].root in self.inputs.names]
            else:
                cands = list(self.order)
            name = self._pick(cands)
            steps = rng.choice((0, 0, 1, 1, 2, 3, 4)) if rng.random() < 0.7 else 0
            expr, ts, kinds = self._chain(name, steps)
            if all(t.numel() == 0 for t in ts) and rng.random() < 0.8:
                continue
            var = self.vars[name]
            return _Target(
                name, expr, ts, name if not kinds else None, var.depth + len(kinds), var.root, kinds
            )
        return None

    def _distinct_indices(self, sizes: Sequence[int], count: int) -> list[int] | None:
        """``count`` indices in range at every size and naming distinct elements at each."""
        m = min(sizes)
        if m == 0:
            return None
        pool = list(range(min(m, 3))) + [-1, -2][: min(m, 2)]
        for _ in range(10):
            picked = self.rng.sample(pool, min(count, len(pool)))
            if all(len({i % s for i in picked}) == len(picked) for s in sizes):
                return picked
        return None

    def _write_candidate(self, target: _Target) -> _Write | None:
        rng = self.rng
        te, ts = target.expr, target.ts
        t = ts[0]
        family = dtype_family(t.dtype)

        def fits_region(region: list[torch.Tensor], any_dtype: bool) -> Callable[[list[torch.Tensor]], bool]:
            def ok(xs: list[torch.Tensor]) -> bool:
                if not any_dtype and xs[0].dtype != t.dtype:
                    return False
                return all(_broadcasts_to(x, r) for x, r in zip(xs, region, strict=True))

            return ok

        kind = rng.choices(
            (
                "unary",
                "scalar",
                "binary",
                "copy",
                "fill",
                "masked_fill",
                "index_put",
                "scatter",
                "index_add",
                "setitem",
                "augassign",
            ),
            (3, 2, 4, 1.5, 1.5, 1, 1, 1, 1, 3.5, 1.5),
        )[0]
        if kind == "unary":
            op = rng.choice(ops.INPLACE_UNARY[family]).format(f=self._fill(family))
            fill = op.startswith((".zero_", ".fill_"))
            return _Write(te + op, ts, [], "fill_" if fill else kind, fill=fill)
        if kind == "scalar":
            return _Write(
                te + rng.choice(ops.INPLACE_SCALAR[family]).format(s=self._scalar(family)), ts, [], kind
            )
        if kind in ("binary", "copy"):
            b = self._operand(fits_region(ts, any_dtype=kind == "copy" or rng.random() < 0.15))
            if b is None:
                return None
            op = ".copy_({b})" if kind == "copy" else rng.choice(ops.INPLACE_BINARY[family])
            return _Write(te + op.format(b=b[0]), ts, [b[1]], "copy_" if "copy_" in op else kind)
        if kind == "fill":
            if rng.random() < 0.3:
                v = self._operand(lambda xs: xs[0].dim() == 0)
                if v is not None:
                    return _Write(f"{te}.fill_({v[0]})", ts, [v[1]], "fill_", fill=True)
            op = ".zero_()" if rng.random() < 0.4 else f".fill_({self._fill(family)})"
            return _Write(te + op, ts, [], "zero_" if "zero" in op else "fill_", fill=True)
        if kind == "masked_fill":
            return _Write(
                f"{te}.masked_fill_({self._mask(ts)}, {self._fill(family)})", ts, [], "masked_fill_"
            )
        if t.dim() == 0 and kind in ("index_put", "scatter", "index_add"):
            return None
        if kind == "index_put":
            accumulate = rng.random() < 0.3
            idx = self._distinct_indices([x.shape[0] for x in ts], rng.randint(1, 3))
            if idx is None:
                return None
            if accumulate and rng.random() < 0.5:
                idx = idx + idx[:1]  # duplicates are defined with accumulate=True
            values = f"torch.tensor({self._fill(family)}, dtype=torch.{dtype_name(t.dtype)})"
            acc = ", accumulate=True" if accumulate else ""
            return _Write(f"{te}.index_put_((torch.tensor({idx}),), {values}{acc})", ts, [], "index_put_")
        if kind == "scatter":
            d = rng.randrange(t.dim())
            mins = [min(x.shape[i] for x in ts) for i in range(t.dim())]
            if min(mins) == 0:
                return None
            shape = [rng.randint(1, min(m, 2)) for m in mins]
            count = shape[d]
            rows = []
            for _ in range(int(torch.Size(shape).numel()) // count):
                picked = self._distinct_indices([x.shape[d] for x in ts], count)
                if picked is None or len(picked) < count:
                    return None
                rows.append([i % mins[d] if i < 0 else i for i in picked])
            # rows[k] are the indices along d for one position of the other dims.
            index = torch.tensor(rows).reshape([*shape[:d], *shape[d + 1 :], count]).movedim(-1, d)
            index_src = f"torch.tensor({index.tolist()})"
            if rng.random() < 0.5:
                line = f"{te}.scatter_({d}, {index_src}, {self._fill(family)})"
            elif rng.random() < 0.5:
                line = f"{te}.scatter_({d}, {index_src}, torch.ones_like({te}))"
            else:
                line = f"{te}.scatter_add_({d}, {index_src}, torch.ones_like({te}))"
            return _Write(line, ts, [], "scatter_")
        if kind == "index_add":
            d = rng.randrange(t.dim())
            idx = self._distinct_indices([x.shape[d] for x in ts], rng.randint(1, 2))
            if idx is None:
                return None
            if rng.random() < 0.3:
                idx = idx + idx[:1]
            src = f"torch.ones_like({te}.narrow({d}, 0, {len(idx)}))"
            alpha = f", alpha={rng.choice(('2', '-1'))}" if rng.random() < 0.3 else ""
            return _Write(f"{te}.index_add_({d}, torch.tensor({idx}), {src}{alpha})", ts, [], "index_add_")
        if kind == "setitem":
            return self._setitem(target, family)
        if kind == "augassign":
            if target.name is None:
                return None
            op = rng.choice(("+=", "+=", "*=", "-=") if family != "bool" else ("|=", "&=", "^="))
            if rng.random() < 0.4:
                return _Write(f"{te} {op} {self._scalar(family)}", ts, [], "augassign")
            b = self._operand(fits_region(ts, any_dtype=rng.random() < 0.15))
            if b is None:
                return None
            return _Write(f"{te} {op} {b[0]}", ts, [b[1]], "augassign")
        raise AssertionError(kind)

    def _setitem(self, target: _Target, family: str) -> _Write | None:
        rng = self.rng
        te, ts = target.expr, target.ts
        t = ts[0]
        if t.dim() == 0:
            index, region, form = "...", ts, "ellipsis"
        else:
            form = rng.choice(("int", "slice", "slice", "tuple", "ellipsis", "tensor", "mask"))
            mins = [min(x.shape[i] for x in ts) for i in range(t.dim())]
            if form == "int":
                idx = self._distinct_indices([x.shape[0] for x in ts], 1)
                index = str(idx[0]) if idx else "0"
            elif form == "slice":
                index = rng.choice(("1:", ":-1", "::2", ":2", "1::2", "-2:"))
                if t.dim() >= 2 and rng.random() < 0.4:
                    index = ":, " + index
            elif form == "tuple":
                idx = self._distinct_indices([x.shape[0] for x in ts], 1)
                index = f"{idx[0] if idx else 0}, {rng.choice(('1:', '::2', ':1'))}" if t.dim() >= 2 else "1:"
            elif form == "ellipsis":
                idx = self._distinct_indices([x.shape[-1] for x in ts], 1)
                index = f"..., {idx[0] if idx else 0}"
            elif form == "tensor":
                idx = self._distinct_indices([x.shape[0] for x in ts], rng.randint(1, 3))
                if idx is None:
                    return None
                index = f"torch.tensor({idx})"
            else:
                index = f"{te} > 0" if family in ("float", "int") else self._mask(ts)
            del mins
            if form in ("tensor", "mask"):
                region = ts  # conservatively the whole target
            else:
                values = self.env.values(f"{te}[{index}]")
                if values is None:
                    return None
                region = values
        op = rng.choice(("=", "=", "=", "+=")) if family != "bool" else "="
        reads: list[list[torch.Tensor]] = []
        if form == "mask" or rng.random() < 0.4:
            rhs = self._fill(family) if op == "=" else self._scalar(family)
        else:
            b = self._operand(
                lambda xs: (
                    all(_broadcasts_to(x, r) for x, r in zip(xs, region, strict=True))
                    and (xs[0].dtype == t.dtype or rng.random() < 0.3)
                )
            )
            if b is None:
                return None
            rhs, reads = b[0], [b[1]]
        self.pending.add(f"setitem:{form}")
        return _Write(f"{te}[{index}] {op} {rhs}", region, reads, "setitem")

    def _write_ok(self, write: _Write) -> bool:
        for i, region in enumerate(write.region):
            if not write.fill and not injective(region):
                return False
            if any(not read_ok(region, r[i]) for r in write.reads):
                return False
        return True

    def _note_write(self, target: _Target, write: _Write) -> None:
        self.pending.add(f"write:{write.kind}")
        self._note_chain(target.base, target.kinds)
        if target.depth > 0 or target.kinds:
            self.pending.add("write through a view")
        if target.depth >= 3:
            self.pending.add("write through a chain of 3+")
        if target.root in self.inputs.names:
            self.pending.add("input mutation")
        if write.fill and not all(injective(r) for r in write.region):
            self.pending.add("fill into overlapping (expanded) memory")
        if any(t.is_conj() or t.is_neg() for t in target.ts):
            self.pending.add("write through conj/neg bit")

    def _stmt_write(self) -> bool:
        target = self._target()
        if target is None:
            return False
        write = self._write_candidate(target)
        if write is None or not self._write_ok(write):
            self.pending = set()
            return False
        self._note_write(target, write)
        if not self._commit(write.line):
            return False
        self.hot.append(target.root)
        return True

    def _stmt_out(self) -> bool:
        rng = self.rng
        form = rng.choice(ops.OUT_FORMS)
        a = self._operand(lambda ts: True)
        if a is None:
            return False
        b = self._operand(
            lambda ts: all(
                _broadcasts_to(x, y) or _broadcasts_to(y, x) for x, y in zip(ts, a[1], strict=True)
            )
        )
        b_expr = b[0] if b is not None else "1"
        pure = form.replace(", out={o}", "").format(a=a[0], b=b_expr)
        result = self.env.values(pure)
        if result is None:
            self.pending = set()
            return False
        if rng.random() < 0.4:
            dtype = result[0].dtype if rng.random() < 0.5 else rng.choices(*zip(*DTYPES, strict=True))[0]
            out = self._new_name()
            # Empty (resized by the out= op) or zeros: never uninitialised values a program could read.
            size = rng.choice(("0", "1", f"{pure}.shape"))
            factory = "torch.empty" if size == "0" else "torch.zeros"
            if not self._define(out, f"{out} = {factory}({size}, dtype=torch.{dtype_name(dtype)})"):
                return False
        else:
            out = self._pick(self.order)
        outs = self.env.tensors(out)
        if any(
            not injective(o) or o.numel() and not read_ok(o, x)
            for o in outs
            for x in (*a[1], *(b[1] if b else ()))
        ):
            self.pending = set()
            return False
        if outs[0].dtype != result[0].dtype:
            self.pending.add("out=: cast")
        if outs[0].shape != result[0].shape:
            self.pending.add("out=: resize")
        if self.vars[out].root in self.inputs.names:
            self.pending.add("out=: into an input")
        self.pending.add("out=")
        if not self._commit(form.format(a=a[0], b=b_expr, o=out)):
            return False
        self.hot.append(self.vars[out].root)
        return True

    def _stmt_write_then_reads(self) -> bool:
        """The pattern re-inplacing gets wrong most easily: a fresh copy of a tensor, a write
        through a view of it, then several reads of the whole copy, some of them returned
        (``x = x.clone(); x[:1].mul_(2); return x * 2, x + 1``)."""
        rng = self.rng
        source = self._pick(self.order)
        family = dtype_family(self.env.tensors(source)[0].dtype)
        base = self._new_name()
        fresh = rng.choice((f"{source}.clone()", f"{source} + {self._scalar(family)}", f"{source} * 2"))
        if family == "bool":
            fresh = f"{source}.clone()"
        if not self._define(base, f"{base} = {fresh}"):
            return False
        expr, ts, kinds = self._chain(base, rng.choice((1, 1, 2, 3)))
        if not kinds or not all(injective(t) and t.numel() for t in ts):
            return True  # the copy alone is still a statement
        op = rng.choice(ops.INPLACE_SCALAR[family] + ops.INPLACE_UNARY[family]).format(
            s=self._scalar(family), f=self._fill(family)
        )
        self._note_chain(base, kinds)
        self.pending |= {"write through a view", "write then reads of the base"}
        if not self._commit(expr + op):
            return True
        self.hot.append(base)
        for _ in range(rng.choice((1, 2, 2, 3))):
            read = self._new_name()
            form = rng.choice(ops.SMALL_RETURN[family] + ops.UNARY[family])
            if self.env.values(form.format(a=base)) is not None:
                self._define(read, f"{read} = {form.format(a=base)}")
                self.to_return.append(read)
        if rng.random() < 0.5:
            self.to_return.append(base)
        return True

    # ---- statements: lines eager rejects -----------------------------------

    def _rejected_candidate(self) -> tuple[str, str] | None:
        rng = self.rng
        category = rng.choice(
            ("broadcast", "promote", "expanded", "shape", "out_cast", "index", "overlap", "any_write")
        )
        target = self._target(inputs_first=0.5)
        if target is None:
            return None
        te, ts = target.expr, target.ts
        family = dtype_family(ts[0].dtype)
        if category == "broadcast":
            b = self._operand(lambda xs: all(_grows(x, t) for x, t in zip(xs, ts, strict=True)))
            if b is None:
                return None
            return category, f"{te}.{rng.choice(('add_', 'mul_', 'copy_', 'sub_'))}({b[0]})"
        if category == "promote":
            wider = {"bool": ("1.5", "2"), "int": ("1.5", "0.5j"), "float": ("1j",), "complex": ("1j",)}[
                family
            ]
            if family == "complex":
                return category, f"{te}.{rng.choice(('abs_()', 'relu_()', 'sigmoid_()', 'clamp_(0, 1)'))}"
            if rng.random() < 0.5:
                return category, f"{te}.{rng.choice(('add_', 'mul_', 'sub_'))}({rng.choice(wider)})"
            return category, f"{te}.{rng.choice(('div_(2)', 'sigmoid_()', 'sqrt_()', 'tanh_()'))}"
        if category == "expanded":
            if all(injective(t) for t in ts):
                te = f"{te}.expand(2, *{te}.shape)"
            op = rng.choice(("add_(1)", "mul_(2)", "neg_()", f"copy_(torch.ones_like({te}))"))
            return category, f"{te}.{op}"
        if category == "shape":
            b = self._operand(
                lambda xs: all(
                    not _broadcasts_to(x, t) and not _grows(x, t) for x, t in zip(xs, ts, strict=True)
                )
            )
            if b is None:
                return None
            if rng.random() < 0.5 and ts[0].dim():
                return category, f"{te}[:1] = {b[0]}"
            return category, f"{te}.copy_({b[0]})"
        if category == "out_cast":
            narrow = {"float": "int64", "complex": "float32", "int": "bool", "bool": "bool"}[family]
            return category, f"torch.add({te}, 1.5, out=torch.empty(0, dtype=torch.{narrow}))"
        if category == "index":
            if ts[0].dim() == 0:
                return None
            if rng.random() < 0.5:
                return category, f"{te}[50] = {self._fill(family)}"
            return category, f"{te}.index_put_((torch.tensor([50]),), {te}.new_ones(()))"
        if category == "overlap":
            if ts[0].dim() == 0:
                return None
            return category, f"{te}[1:].copy_({te}[:-1])"
        write = self._write_candidate(target)
        return (category, write.line) if write is not None else None

    def _stmt_rejected(self, terminal: bool) -> bool:
        for _ in range(30):
            self.pending = set()
            candidate = self._rejected_candidate()
            if candidate is None:
                continue
            category, line = candidate
            raised = self.env.rejection(line)
            if raised is None or type(raised).__module__ != "builtins":
                continue
            self.features |= self.pending | {f"eager-rejected:{category}"}
            self.pending = set()
            if terminal:
                self.features.add("eager-rejected: last line (program raises)")
                self.terminal_line = line
                return True
            # Not raising is an error too; the message names eager's error (for signatures).
            rejects = f"eager rejects: {normalize_message(raised)}"
            block = (
                f"try:\n    {line}\nexcept {type(raised).__name__}:\n    pass\n"
                f"else:\n    raise AssertionError({rejects!r})"
            )
            if self.env.run(block):
                self.features.add("eager-rejected: guarded (program continues)")
                return True
        return False

    # ---- whole program -----------------------------------------------------

    def _returns(self) -> list[str]:
        rng = self.rng
        k = rng.choices((1, 2, 3), (3, 4, 3))[0]
        outs: list[str] = []
        for _ in range(k * 4):
            if len(outs) == k:
                break
            r = rng.random()
            if self.to_return and rng.random() < 0.7:
                expr = self.to_return.pop(0)
            elif r < 0.12:
                expr = rng.choice(self.inputs.names)
            elif r < 0.3:
                name = self._pick(self.order, recency=3.0)
                family = dtype_family(self.env.tensors(name)[0].dtype)
                expr = rng.choice(ops.SMALL_RETURN[family]).format(a=name)
            elif r < 0.45:
                name = self._pick(self.order, recency=2.0)
                expr, _, kinds = self._chain(name, rng.choice((1, 2)))
                self._note_chain(name, kinds)
            elif r < 0.5 and outs:
                expr = rng.choice(outs)
                self.features.add("returns one tensor twice")
            else:
                expr = self._pick(self.order, recency=3.0)
            values = self.env.values(expr)
            if values is None:
                continue
            in_storages = {storage_id(self.env.tensors(n)[0]) for n in self.inputs.names}
            if storage_id(values[0]) in in_storages:
                self.features.add("returns an input or a view of one")
            if values[0]._is_view():
                self.features.add("returns a view")
            outs.append(expr)
        self.features |= self.pending
        self.pending = set()
        if not outs:
            outs.append(self.order[-1])
        if len(outs) > 1:
            self.features.add("multiple outputs")
        return outs

    def build(self) -> RandomProgram:
        rng = self.rng
        self.terminal_line: str | None = None
        n_stmts = rng.randint(min(3, self.max_stmts), self.max_stmts)
        roll = rng.random()
        reject_mode = "terminal" if roll < 0.1 else "guarded" if roll < 0.22 else None
        reject_at = rng.randrange(n_stmts) if reject_mode else -1
        for i in range(n_stmts):
            if (
                i == reject_at
                and self._stmt_rejected(reject_mode == "terminal")
                and reject_mode == "terminal"
            ):
                break
            for _attempt in range(20):
                kind = rng.choices(("view", "compute", "write", "out", "motif"), (2.5, 3, 4.5, 0.6, 0.7))[0]
                ok = {
                    "view": self._stmt_view,
                    "compute": self._stmt_compute,
                    "write": self._stmt_write,
                    "out": self._stmt_out,
                    "motif": self._stmt_write_then_reads,
                }[kind]()
                self.pending = set()
                if ok:
                    break
        returns = self._returns()
        body = list(self.env.lines)
        if self.terminal_line is not None:
            body.append(self.terminal_line)
        for name in self.order:
            definition = next((i for i, line in enumerate(body) if line.startswith(f"{name} = ")), -1)
            used = any(re.search(rf"\b{name}\b", line) for line in body[definition + 1 :])
            if used and any(re.search(rf"\b{name}\b", r) for r in returns):
                self.features.add("returned and also used")
                break
        dtypes = {dtype_name(ns[n].dtype) for ns in self.env.spaces[:1] for n in self.order}
        self.features |= {f"dtype:{d}" for d in dtypes}
        self.features.add(f"program dtype:{dtype_name(self.dtype)}")
        return RandomProgram(
            seed=self.seed,
            make_args_source=self.inputs.source,
            inputs=tuple(self.inputs.names),
            body=tuple(body),
            returns=tuple(returns),
            features=frozenset(self.features),
        )


def generate(seed: int, *, max_stmts: int = 10) -> RandomProgram:
    """The program for ``seed`` (deterministic); ``max_stmts`` bounds the statements of ``f``."""
    return _Builder(seed, max_stmts).build()
