"""The state of a random program while it is built, and its view and compute statements.

The builder runs the program as it grows (``program_env.DualEnv``: at both sizes), picks
operands (recent tensors, and the bases of recent writes: reads after writes), chains views
and records the features each kept statement uses. ``random_writes`` and
``random_rejections`` add the statements that write and the lines eager rejects;
``programs`` assembles whole programs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fxinplace.testing.random import ops as ops
from fxinplace.testing.random.env import DualEnv
from fxinplace.testing.random.inputs import DTYPES, dtype_family, dtype_name, random_inputs
from fxinplace.testing.random.tensor_facts import storage_id
from fxinplace.testing.random.views import inplace_view_step, view_step

__all__ = ["MAX_NUMEL", "SIZES", "BuilderBase", "Target", "Var", "Write", "broadcasts_to", "grows"]

#: (trace size, second size) for ``make_args(n)``. Odd, so ``n`` and ``n + 1`` keep their
#: parity (divisibility by 2 is the same at both), and unlike the constants 0..3.
SIZES: tuple[int, int] = (7, 11)
MAX_NUMEL = 400
MAX_DIM = 5


@dataclass
class Var:
    depth: int  # view ops between this tensor and one the program computed or got
    root: str  # the variable whose storage it is a view of (itself if none)


@dataclass
class Target:
    base: str  # the variable the view chain starts from
    expr: str
    ts: list[torch.Tensor]
    name: str | None  # a plain variable (assignable with +=) or None for a view expression
    depth: int
    root: str
    kinds: list[str]


@dataclass
class Write:
    line: str
    region: list[torch.Tensor]  # what the write may touch, at each size
    reads: list[list[torch.Tensor]]  # tensors it reads, at each size
    kind: str
    fill: bool = False  # the same value into every element: defined even where elements overlap


def broadcasts_to(src: torch.Tensor, dst: torch.Tensor) -> bool:
    try:
        return tuple(torch.broadcast_shapes(src.shape, dst.shape)) == tuple(dst.shape)
    except RuntimeError:
        return False


def grows(src: torch.Tensor, dst: torch.Tensor) -> bool:
    """``src`` broadcasts with ``dst`` to a bigger shape (an in-place op on ``dst`` must fail)."""
    try:
        return tuple(torch.broadcast_shapes(src.shape, dst.shape)) != tuple(dst.shape)
    except RuntimeError:
        return False


class BuilderBase:
    def __init__(self, seed: int, max_stmts: int) -> None:
        self.seed = seed
        self.rng = rng = random.Random(f"fxinplace.random_programs:{seed}")
        self.dtype = rng.choices(*zip(*DTYPES, strict=True))[0]
        self.inputs = random_inputs(rng, seed, SIZES, self.dtype, rng.choice((1, 2, 2, 3, 3)))
        ns: dict = {"torch": torch}
        exec(self.inputs.source, ns)
        self.env = DualEnv(ns["make_args"], SIZES, self.inputs.names)
        self.vars: dict[str, Var] = {name: Var(0, name) for name in self.inputs.names}
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
        return all(t.numel() <= MAX_NUMEL and t.dim() <= MAX_DIM for t in ts)

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
        var = Var(0, name)
        if base is not None:
            var = Var(self.vars[base].depth + steps, self.vars[base].root)
        else:
            for other in self.order:
                if storage_id(self.env.tensors(other)[0]) == storage_id(new):
                    # A compute that returns an alias (contiguous() of a contiguous tensor, .to(same dtype)).
                    var = Var(self.vars[other].depth + 1, self.vars[other].root)
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

    def _stmt_inplace_view(self) -> bool:
        name = self._pick(self.order)
        ts = self.env.tensors(name)
        kind, line = inplace_view_step(self.rng, name, ts, may_add_dim=ts[0].dim() < MAX_DIM)
        self.pending.add(f"inplace view:{kind}")
        if name in self.inputs.names:
            self.pending.add("inplace view of an input")
        return self._commit(line)

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
                        torch.broadcast_shapes(x.shape, y.shape).numel() <= MAX_NUMEL
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
        m = self._operand(lambda ts: all(broadcasts_to(x, r) for x, r in zip(ts, region, strict=True)))
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
