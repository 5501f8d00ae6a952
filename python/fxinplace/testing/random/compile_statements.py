"""Statements compiled programs are made of (a mixin of the random program builder).

``torch.compile`` meets mutation in forms the make_fx pipelines rarely produced, and which
are where compilers go wrong (issue 15): the same buffer written and read at other
elements in one statement (``x.add_(x.flip(0))``: a compiler that fuses the write with the
read reads elements it has already written), caches written at positions held in tensor
inputs (``cache.index_copy_(0, pos, new)``), ``_foreach_*`` lists (optimizer steps),
custom ops that write their arguments, called on views and dtype views, and writes through
dtype views (``x.view(torch.int32)[idx] = 7``). Kinds:

* ``kv_cache``: ``index_copy_``/``index_put_``/``index_fill_``/``index_add_``/setitem at a
  position tensor that is an input of ``f`` (``pos0 = torch.tensor([2])`` in ``make_args``);
* ``input_index``: setitem and augmented setitem into an input (``x[:, 1:] += ...``);
* ``foreach``: ``torch._foreach_*_`` on lists of disjoint tensors (add, sub, mul, lerp,
  copy, maximum, addcmul, neg, zero) and ``_foreach_*`` results used by later statements,
  including RAdam's ``where`` over a ``_foreach_sqrt`` list written back with
  ``_foreach_mul_``;
* ``custom_op``: ``torch.ops.fxrandom.*`` (``random_custom_ops``) on views and dtype views;
* ``dtype_view``: setitem through ``view(dtype)`` with int, slice, tensor or position indices;
* ``reads_near_write``: a write into a tensor whose operand is a flip, roll or transpose of
  the same tensor (or of its base): ``out=``, in-place binary ops, ``index_put_``,
  ``_foreach_*_`` and ``_foreach_copy_`` of a ``_foreach_add`` result.

As everywhere in the generator, a statement is kept only where eager gives it one meaning at
both sizes: written tensors have no two elements at one address, the tensors of one
``_foreach_*_`` list share no byte, and every operand is either disjoint from what is
written or exactly it (flips and rolls are fresh tensors in eager).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from fxinplace.testing.random.builder import Target, Var, Write, broadcasts_to
from fxinplace.testing.random.inputs import DTYPE_VIEWS, dtype_family, dtype_name
from fxinplace.testing.random.tensor_facts import byte_addresses, injective, read_ok, storage_id

__all__ = ["COMPILE_KINDS", "CompileStatements"]

COMPILE_KINDS: tuple[tuple[str, float], ...] = (
    ("kv_cache", 2.0),
    ("input_index", 1.0),
    ("foreach", 2.0),
    ("foreach_result", 1.0),
    ("custom_op", 1.5),
    ("dtype_view", 1.0),
    ("reads_near_write", 3.0),
)

_MAX_POSITION_INPUTS = 2

# Writes of a read `r` into the target `te` next to it, by form (the forms with choices of
# their own are in _near_line).
_NEAR_WRITES = {
    "copy": "{te}.copy_({r})",
    "out_neg": "torch.neg({r}, out={te})",
    "out_not": "torch.logical_not({r}, out={te})",
    "out_add": "torch.add({te}, {r}, out={te})",
    "mul": "{te}.mul_({r})",
    "lerp": "{te}.lerp_({r}, 0.5)",
    "addcmul": "{te}.addcmul_({r}, {r}, value=0.5)",
    "foreach_add": "torch._foreach_add_([{te}], [{r}])",
    "foreach_lerp": "torch._foreach_lerp_([{te}], [{r}], 0.5)",
    "foreach_copy_add": "torch._foreach_copy_([{te}], torch._foreach_add([{te}], [{r}]))",
}


def disjoint(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` share no byte."""
    if storage_id(a) != storage_id(b) or a.numel() == 0 or b.numel() == 0:
        return True
    return byte_addresses(a).isdisjoint(byte_addresses(b))


def _writable(ts: Sequence[torch.Tensor]) -> bool:
    return all(t.numel() and injective(t) for t in ts)


class CompileStatements:
    """Mixin of ``programs._Builder`` (uses ``BuilderBase``'s and ``WriteStatements``' helpers)."""

    def _stmt_compile(self) -> bool:
        kind = self.rng.choices(*zip(*COMPILE_KINDS, strict=True))[0]
        return getattr(self, f"_compile_{kind}")()

    # ---- helpers -------------------------------------------------------------

    def _position_input(self, positions: list[int]) -> str | None:
        """A new int64 input ``posK = torch.tensor(positions)`` of ``make_args`` (None past the limit)."""
        existing = [n for n in self.inputs.names if n.startswith("pos")]
        if len(existing) >= _MAX_POSITION_INPUTS:
            return None
        name = f"pos{len(existing)}"
        lines = self.inputs.source.rstrip("\n").splitlines()
        names = [*self.inputs.names, name]
        lines.insert(-1, f"    {name} = torch.tensor({positions})")
        lines[-1] = "    return (" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
        self._set_inputs("\n".join(lines) + "\n", names)
        self.vars[name] = Var(0, name)
        self.order.append(name)
        return name

    def _drop_position_input(self, name: str) -> None:
        """Undo ``_position_input`` when the statement using it was not kept."""
        lines = [line for line in self.inputs.source.splitlines() if not line.startswith(f"    {name} = ")]
        names = [n for n in self.inputs.names if n != name]
        lines[-1] = "    return (" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
        self._set_inputs("\n".join(lines) + "\n", names)
        del self.vars[name]
        self.order.remove(name)

    def _set_inputs(self, source: str, names: list[str]) -> None:
        ns: dict = {"torch": torch}
        exec(source, ns)
        self.inputs.source = source
        self.inputs.names[:] = names
        self.env.make_args = ns["make_args"]
        self.env.inputs = list(names)
        self.env.reset()

    def _writable_target(self, inputs_first: float, min_dim: int = 0) -> Target | None:
        for _ in range(4):
            target = self._target(inputs_first=inputs_first)
            if target is not None and target.ts[0].dim() >= min_dim and _writable(target.ts):
                return target
        return None

    # ---- KV caches and indexed input writes ---------------------------------

    def _compile_kv_cache(self) -> bool:
        rng = self.rng
        target = self._writable_target(inputs_first=0.8, min_dim=1)
        if target is None:
            return False
        te, ts = target.expr, target.ts
        t = ts[0]
        d = rng.randrange(t.dim())
        smallest = min(x.shape[d] for x in ts)
        if smallest == 0:
            return False
        k = 1 if smallest == 1 or rng.random() < 0.7 else 2
        positions = sorted(rng.sample(range(min(smallest, 4)), k))
        family = dtype_family(t.dtype)
        pos = self._position_input(positions)
        if pos is None:
            return False
        # Adding the input re-ran the program from fresh inputs: the target's tensors from
        # before are other storages now, and every overlap check against them would pass.
        ts = self.env.values(te)
        if ts is None:
            self._drop_position_input(pos)
            return False
        target.ts = ts
        rows = f"{te}.narrow({d}, 0, {k})"
        source = self._cache_rows(te, ts, d, k, family)
        form = rng.choice(("index_copy", "index_copy", "setitem", "index_put", "index_fill", "index_add"))
        if form == "index_copy":
            line = f"{te}.index_copy_({d}, {pos}, {source})"
        elif form == "setitem":
            line = f"{te}[{':, ' * d}{pos}] = {source if rng.random() < 0.7 else self._fill(family)}"
        elif form == "index_put" and d == 0:
            line = f"{te}.index_put_(({pos},), {source})"
        elif form == "index_fill":
            line = f"{te}.index_fill_({d}, {pos}, {self._fill(family)})"
        elif form == "index_add" and family != "bool":
            line = f"{te}.index_add_({d}, {pos}, {source})"
        else:
            line = f"{te}.index_copy_({d}, {pos}, torch.zeros_like({rows}))"
        if self._keep_write(target, Write(line, ts, [], f"kv_cache:{form}"), "compile:kv_cache"):
            self.features.add("input:position tensor")
            return True
        self._drop_position_input(pos)
        return False

    def _cache_rows(self, te: str, ts: list[torch.Tensor], d: int, k: int, family: str) -> str:
        """``k`` new rows along ``d`` for the cache ``te``: a fill, the cache's own rows
        computed anew (a read of the cache in the writing statement), or rows of a tensor of
        the cache's shape and dtype that shares no byte with it."""
        rng = self.rng
        rows = f"{te}.narrow({d}, 0, {k})"
        roll = rng.random()
        if roll < 0.3:
            return f"torch.full_like({rows}, {self._fill(family)})"
        if roll < 0.6:
            start = rng.randrange(max(1, min(x.shape[d] for x in ts) - k + 1))
            own = f"{te}.narrow({d}, {start}, {k})"
            return f"~{own}" if family == "bool" else f"{own} * 2"
        other = self._operand(
            lambda xs: all(
                x.shape == t.shape and x.dtype == t.dtype and disjoint(x, t)
                for x, t in zip(xs, ts, strict=True)
            ),
            view_prob=0.2,
        )
        if other is None:
            return f"torch.ones_like({rows})"
        return f"{other[0]}.narrow({d}, 0, {k})"

    def _compile_input_index(self) -> bool:
        target = self._writable_target(inputs_first=1.0, min_dim=1)
        if target is None:
            return False
        write = self._setitem(target, dtype_family(target.ts[0].dtype))
        if write is None or not self._write_ok(write):
            self.pending = set()
            return False
        return self._keep_write(target, write, "compile:input index write")

    # ---- _foreach_* lists ----------------------------------------------------

    def _write_list(self, count: int) -> list[Target]:
        """Up to ``count`` writable targets of one dtype sharing no byte with each other."""
        chosen: list[Target] = []
        for _ in range(count * 3):
            if len(chosen) == count:
                break
            target = self._writable_target(inputs_first=0.5)
            if target is None or (chosen and target.ts[0].dtype != chosen[0].ts[0].dtype):
                continue
            if all(disjoint(a, b) for c in chosen for a, b in zip(c.ts, target.ts, strict=True)):
                chosen.append(target)
        return chosen

    def _list_operand(
        self, targets: list[Target], k: int, any_dtype: bool = False
    ) -> tuple[str, list] | None:
        """An operand for element ``k``: broadcasts to it (mostly its shape), reads it only as
        exactly its elements, and shares no byte with the other elements."""
        mine = targets[k].ts
        same_shape = self.rng.random() < 0.8

        def ok(xs: list[torch.Tensor]) -> bool:
            for i, x in enumerate(xs):
                if not any_dtype and x.dtype != mine[i].dtype:
                    return False
                if (same_shape and x.shape != mine[i].shape) or not broadcasts_to(x, mine[i]):
                    return False
                if not read_ok(mine[i], x):
                    return False
                if any(not disjoint(o.ts[i], x) for j, o in enumerate(targets) if j != k):
                    return False
            return True

        return self._operand(ok)

    def _compile_foreach(self) -> bool:
        rng = self.rng
        targets = self._write_list(rng.choice((1, 2, 2, 3)))
        if not targets:
            return False
        family = dtype_family(targets[0].ts[0].dtype)
        selves = "[" + ", ".join(t.expr for t in targets) + "]"
        ops = ["add", "sub", "mul", "copy", "scalar", "scalarlist", "unary", "zero"]
        if family == "float":
            ops += ["lerp", "lerp", "maximum", "addcmul"]
        if family == "int":
            ops += ["maximum"]
        if family == "bool":
            ops = ["copy", "zero"]
        op = rng.choice(ops)
        if op in ("zero", "unary"):
            line = f"torch._foreach_{'zero' if op == 'zero' else rng.choice(('neg', 'abs'))}_({selves})"
        elif op == "scalar":
            line = f"torch._foreach_{rng.choice(('add', 'mul', 'sub'))}_({selves}, {self._scalar(family)})"
        elif op == "scalarlist":
            scalars = ", ".join(self._scalar(family) for _ in targets)
            line = f"torch._foreach_mul_({selves}, [{scalars}])"
        else:
            operands = [self._list_operand(targets, k, any_dtype=op == "copy") for k in range(len(targets))]
            if any(o is None for o in operands):
                self.pending = set()
                return False
            others = "[" + ", ".join(o[0] for o in operands) + "]"
            if op == "lerp":
                line = f"torch._foreach_lerp_({selves}, {others}, {rng.choice(('0.5', '0.25'))})"
            elif op == "addcmul":
                line = f"torch._foreach_addcmul_({selves}, {others}, {others}, value=0.5)"
            elif op == "add" and rng.random() < 0.3:
                line = f"torch._foreach_add_({selves}, {others}, alpha=2)"
            else:
                line = f"torch._foreach_{op}_({selves}, {others})"
        for target in targets:
            self._note_write(target, Write(line, target.ts, [], f"foreach_{op}"))
        self.pending |= {"compile:foreach", f"compile:foreach list of {len(targets)}"}
        if not self._commit(line):
            return False
        self.hot.extend(t.root for t in targets)
        return True

    def _compile_foreach_result(self) -> bool:
        """``_foreach_*`` results bound to names and read later; for floats sometimes RAdam's
        pattern: ``where`` over a ``_foreach_sqrt`` list, then ``_foreach_mul_`` into the list."""
        rng = self.rng
        count = rng.choice((1, 2, 2, 3))
        picked = [self._operand(lambda xs: True, view_prob=0.3) for _ in range(count)]
        picked = [p for p in picked if p is not None]
        if not picked:
            return False
        family = dtype_family(picked[0][1][0].dtype)
        picked = [p for p in picked if p[1][0].dtype == picked[0][1][0].dtype]
        sources = "[" + ", ".join(p[0] for p in picked) + "]"
        names = [self._new_name() for _ in picked]
        bound = "[" + ", ".join(names) + "]"
        if family == "float" and rng.random() < 0.5:
            call = f"torch._foreach_sqrt(torch._foreach_sub({sources}, {rng.choice(('4.0', '0.5'))}))"
        elif family == "bool":
            call = f"torch._foreach_mul({sources}, True)"
        else:
            call = f"torch._foreach_{rng.choice(('mul', 'add'))}({sources}, {self._scalar(family)})"
        self.pending.add("compile:foreach result used")
        if not self._define_many(names, f"{bound} = {call}"):
            return False
        if family != "float" or rng.random() < 0.5:
            return True
        return self._radam_tail(picked, names) or True

    def _define_many(self, names: list[str], line: str) -> bool:
        if not self._commit(line):
            return False
        for name in names:
            self.vars[name] = Var(0, name)
            self.order.append(name)
        return True

    def _radam_tail(self, picked: list[tuple[str, list]], roots: list[str]) -> bool:
        """``w_k = torch.where(a_k > 0, r_k, 0.0)`` and ``torch._foreach_mul_([a...], [w...])``
        where the ``a_k`` are plain names that can be written (RAdam's rectification)."""
        writable = [
            (expr, name)
            for (expr, ts), name in zip(picked, roots, strict=True)
            if expr in self.vars and _writable(ts)
        ]
        if not writable or any(
            not disjoint(a, b)
            for i, (x, _) in enumerate(writable)
            for y, _ in writable[i + 1 :]
            for a, b in zip(self.env.tensors(x), self.env.tensors(y), strict=True)
        ):
            return False
        weights = []
        for expr, name in writable:
            w = self._new_name()
            if not self._define(w, f"{w} = torch.where({expr} > 0, {name}, 0.0)"):
                return False
            weights.append(w)
        selves = ", ".join(expr for expr, _ in writable)
        self.pending.add("compile:foreach RAdam pattern")
        if not self._commit(f"torch._foreach_mul_([{selves}], [{', '.join(weights)}])"):
            return False
        self.hot.extend(self.vars[expr].root for expr, _ in writable)
        return True

    # ---- custom ops and dtype views ----------------------------------------

    def _dtype_view(self, te: str, ts: list[torch.Tensor]) -> tuple[str, list[torch.Tensor]] | None:
        t = ts[0]
        if t.dtype not in DTYPE_VIEWS or t.is_neg() or t.is_conj():
            return None
        view = f"{te}.view(torch.{dtype_name(self.rng.choice(DTYPE_VIEWS[t.dtype]))})"
        values = self.env.values(view)
        if values is None or not _writable(values):
            return None
        return view, values

    def _compile_custom_op(self) -> bool:
        from fxinplace.testing.random.custom_ops import CUSTOM_OPS

        rng = self.rng
        target = self._writable_target(inputs_first=0.5)
        if target is None:
            return False
        te, ts = target.expr, target.ts
        if rng.random() < 0.35:
            viewed = self._dtype_view(te, ts)
            if viewed is not None:
                te, ts = viewed
                self.pending.add("compile:custom op on a dtype view")
        name, mutated, reads, returns = rng.choice(CUSTOM_OPS)
        args = [te]
        if mutated == 2:
            second = self._write_list(1)
            if not second or not all(disjoint(a, b) for a, b in zip(second[0].ts, ts, strict=True)):
                return False
            args.append(second[0].expr)
            self._note_write(second[0], Write("", second[0].ts, [], "custom_op"))
        if reads:
            other = self._operand(
                lambda xs: all(
                    x.dtype == t.dtype and broadcasts_to(x, t) and read_ok(t, x)
                    for x, t in zip(xs, ts, strict=True)
                )
            )
            if other is None:
                self.pending = set()
                return False
            args.append(other[0])
        call = f"torch.ops.fxrandom.{name}({', '.join(args)})"
        self._note_write(target, Write(call, ts, [], "custom_op"))
        self.pending |= {"compile:custom op", f"compile:custom op {name}"}
        if returns:
            result = self._new_name()
            if not self._define(result, f"{result} = {call}"):
                return False
        elif not self._commit(call):
            return False
        self.hot.append(target.root)
        return True

    def _compile_dtype_view(self) -> bool:
        rng = self.rng
        target = self._writable_target(inputs_first=0.5)
        if target is None:
            return False
        viewed = self._dtype_view(target.expr, target.ts)
        if viewed is None:
            return False
        view, ts = viewed
        family = dtype_family(ts[0].dtype)
        if ts[0].dim() == 0:
            index = "..."
        else:
            form = rng.choice(("int", "slice", "tensor", "tensor", "position", "ellipsis"))
            idx = self._distinct_indices([x.shape[0] for x in ts], rng.randint(1, 2))
            if form == "int" and idx:
                index = str(idx[0])
            elif form == "tensor" and idx:
                index = f"torch.tensor({idx})"
            elif form == "position" and any(n.startswith("pos") for n in self.inputs.names):
                index = rng.choice([n for n in self.inputs.names if n.startswith("pos")])
            elif form == "ellipsis":
                index = "..."
            else:
                index = rng.choice(("1:", ":1", "::2", ":, 1:" if ts[0].dim() >= 2 else "-1:"))
        line = f"{view}[{index}] = {self._fill(family)}"
        return self._keep_write(
            target, Write(line, target.ts, [], "dtype_view setitem"), "compile:dtype view write"
        )

    # ---- reads of the written tensor at other elements ----------------------

    def _near_read(self, target: Target) -> tuple[str, Target, str] | None:
        """``(kind, target, expression)``: a flip, roll or transpose of the target (or of its
        base, viewed the same way) with the target's shape, as a fresh tensor. A transpose of
        a target that is not square reads and writes its leading square block instead."""
        rng = self.rng
        te, ts = target.expr, target.ts
        t = ts[0]
        kind = rng.choice(("flip", "flip", "roll", "transpose"))
        if kind == "transpose" and t.dim() >= 2:
            side = min(min(x.shape[-1], x.shape[-2]) for x in ts)
            if not all(x.shape[-1] == x.shape[-2] for x in ts) and side >= 2:
                te = f"{te}[..., :{side}, :{side}]"
                ts = self.env.values(te)
                if ts is None:
                    return None
                target = Target(
                    target.base, te, ts, None, target.depth + 1, target.root, [*target.kinds, "slice"]
                )
            if all(x.shape[-1] == x.shape[-2] for x in ts):
                expr = rng.choice((f"{te}.mT * 1", f"{te}.mT.clone()", f"{te}.mT.contiguous()"))
                if t.dtype == torch.bool and expr.endswith("* 1"):
                    expr = f"{te}.mT.clone()"
                return kind, target, expr
            kind = "flip"
        if kind == "transpose":
            kind = "flip"
        d = rng.randrange(t.dim())
        step = f".flip({d})" if kind == "flip" else f".roll({rng.choice((1, -1, 2))}, {d})"
        base = self.env.tensors(target.base)[0]
        if target.kinds and te.startswith(target.base) and base.dim() and rng.random() < 0.3:
            # The base's flip, viewed as the target is: other elements of the same buffer.
            step_base = f".flip({rng.randrange(base.dim())})" if kind == "flip" else ".roll(1, 0)"
            expr = target.base + step_base + te[len(target.base) :]
            values = self.env.values(expr)
            if values is not None and all(v.shape == x.shape for v, x in zip(values, ts, strict=True)):
                return kind, target, expr
        return kind, target, te + step

    def _compile_reads_near_write(self) -> bool:
        rng = self.rng
        target = self._writable_target(inputs_first=0.6, min_dim=1)
        if target is None:
            return False
        read = self._near_read(target)
        if read is None:
            return False
        kind, target, r = read
        te, ts = target.expr, target.ts
        if not _writable(ts):
            return False
        family = dtype_family(ts[0].dtype)
        values = self.env.values(r)
        if values is None or any(v.shape != x.shape for v, x in zip(values, ts, strict=True)):
            return False
        forms = ["copy", "out_neg", "index_put", "foreach_add", "foreach_copy_add", "add", "setitem"]
        if family == "float":
            forms += ["lerp", "foreach_lerp", "addcmul", "out_add"]
        if family in ("int", "complex"):
            forms += ["out_add", "mul"]
        if family == "bool":
            forms = ["copy", "out_not", "index_put_bool", "setitem"]
        form = rng.choice(forms)
        line = self._near_line(form, te, ts, r, target)
        if line is None:
            return False
        self.pending |= {"compile:reads near a write", f"compile:{kind} read next to a write"}
        return self._keep_write(target, Write(line, ts, [], f"near_{form}"), f"compile:near write {form}")

    def _near_line(self, form: str, te: str, ts: list[torch.Tensor], r: str, target: Target) -> str | None:
        rng = self.rng
        if form in _NEAR_WRITES:
            return _NEAR_WRITES[form].format(te=te, r=r)
        if form == "add":
            if target.name is not None and rng.random() < 0.4:
                return f"{te} += {r}"
            return f"{te}.{rng.choice(('add_', 'sub_'))}({r})"
        if form == "setitem":
            return f"{te}[1:] = {r}[1:]" if ts[0].dim() else None
        if form in ("index_put", "index_put_bool"):
            idx = self._distinct_indices([x.shape[0] for x in ts], rng.randint(1, 3))
            if not idx:
                return None
            idx = sorted({i % min(x.shape[0] for x in ts) for i in idx})
            rows = f"{r}.narrow(0, 0, {len(idx)})"
            value = f"~{rows}" if form == "index_put_bool" else f"{rows} * 2"
            return f"{te}.index_put_((torch.tensor({idx}),), {value})"
        raise AssertionError(form)
