"""Statements that write: in-place ops, indexed writes, setitem, ``out=`` and the
write-then-reads pattern (a mixin of the random program builder).

A write is emitted only where eager gives it one meaning: the written region has no two
elements at one address (except ``fill_``/``zero_``, which write one value everywhere) and
every tensor it reads is either disjoint from that region or exactly it (``tensor_facts``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from fxinplace.testing.random import ops as ops
from fxinplace.testing.random.builder import Target, Write, broadcasts_to
from fxinplace.testing.random.inputs import DTYPES, dtype_family, dtype_name
from fxinplace.testing.random.tensor_facts import injective, read_ok

__all__ = ["WriteStatements"]


class WriteStatements:
    """Mixin of ``programs._Builder`` (uses ``BuilderBase``'s state and helpers)."""

    def _target(self, inputs_first: float = 0.35) -> Target | None:
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
            return Target(
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

    def _write_candidate(self, target: Target) -> Write | None:
        rng = self.rng
        te, ts = target.expr, target.ts
        t = ts[0]
        family = dtype_family(t.dtype)

        def fits_region(region: list[torch.Tensor], any_dtype: bool) -> Callable[[list[torch.Tensor]], bool]:
            def ok(xs: list[torch.Tensor]) -> bool:
                if not any_dtype and xs[0].dtype != t.dtype:
                    return False
                return all(broadcasts_to(x, r) for x, r in zip(xs, region, strict=True))

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
            return Write(te + op, ts, [], "fill_" if fill else kind, fill=fill)
        if kind == "scalar":
            return Write(
                te + rng.choice(ops.INPLACE_SCALAR[family]).format(s=self._scalar(family)), ts, [], kind
            )
        if kind in ("binary", "copy"):
            b = self._operand(fits_region(ts, any_dtype=kind == "copy" or rng.random() < 0.15))
            if b is None:
                return None
            op = ".copy_({b})" if kind == "copy" else rng.choice(ops.INPLACE_BINARY[family])
            return Write(te + op.format(b=b[0]), ts, [b[1]], "copy_" if "copy_" in op else kind)
        if kind == "fill":
            if rng.random() < 0.3:
                v = self._operand(lambda xs: xs[0].dim() == 0)
                if v is not None:
                    return Write(f"{te}.fill_({v[0]})", ts, [v[1]], "fill_", fill=True)
            op = ".zero_()" if rng.random() < 0.4 else f".fill_({self._fill(family)})"
            return Write(te + op, ts, [], "zero_" if "zero" in op else "fill_", fill=True)
        if kind == "masked_fill":
            return Write(f"{te}.masked_fill_({self._mask(ts)}, {self._fill(family)})", ts, [], "masked_fill_")
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
            return Write(f"{te}.index_put_((torch.tensor({idx}),), {values}{acc})", ts, [], "index_put_")
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
            return Write(line, ts, [], "scatter_")
        if kind == "index_add":
            d = rng.randrange(t.dim())
            idx = self._distinct_indices([x.shape[d] for x in ts], rng.randint(1, 2))
            if idx is None:
                return None
            if rng.random() < 0.3:
                idx = idx + idx[:1]
            src = f"torch.ones_like({te}.narrow({d}, 0, {len(idx)}))"
            alpha = f", alpha={rng.choice(('2', '-1'))}" if rng.random() < 0.3 else ""
            return Write(f"{te}.index_add_({d}, torch.tensor({idx}), {src}{alpha})", ts, [], "index_add_")
        if kind == "setitem":
            return self._setitem(target, family)
        if kind == "augassign":
            if target.name is None:
                return None
            op = rng.choice(("+=", "+=", "*=", "-=") if family != "bool" else ("|=", "&=", "^="))
            if rng.random() < 0.4:
                return Write(f"{te} {op} {self._scalar(family)}", ts, [], "augassign")
            b = self._operand(fits_region(ts, any_dtype=rng.random() < 0.15))
            if b is None:
                return None
            return Write(f"{te} {op} {b[0]}", ts, [b[1]], "augassign")
        raise AssertionError(kind)

    def _setitem(self, target: Target, family: str) -> Write | None:
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
                    all(broadcasts_to(x, r) for x, r in zip(xs, region, strict=True))
                    and (xs[0].dtype == t.dtype or rng.random() < 0.3)
                )
            )
            if b is None:
                return None
            rhs, reads = b[0], [b[1]]
        self.pending.add(f"setitem:{form}")
        return Write(f"{te}[{index}] {op} {rhs}", region, reads, "setitem")

    def _write_ok(self, write: Write) -> bool:
        for i, region in enumerate(write.region):
            if not write.fill and not injective(region):
                return False
            if any(not read_ok(region, r[i]) for r in write.reads):
                return False
        return True

    def _note_write(self, target: Target, write: Write) -> None:
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
        return self._keep_write(target, write)

    def _keep_write(self, target: Target, write: Write, *features: str) -> bool:
        """Commit a write statement (``write.region``/``reads`` already checked) with its
        features and ``features``."""
        self._note_write(target, write)
        self.pending.update(features)
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
            lambda ts: all(broadcasts_to(x, y) or broadcasts_to(y, x) for x, y in zip(ts, a[1], strict=True))
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
