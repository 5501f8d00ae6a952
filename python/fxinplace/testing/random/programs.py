"""Seeded random programs for differential testing of functionalization and re-inplacing.

    p = generate(seed)
    print(p.source)                  # standalone: defines make_args(n) and f(...)
    f, make_args = p.fn, p.make_args
    f(*make_args(p.sizes[0]))

Nothing here is filtered through the implementations under test: a program is kept
because *eager* PyTorch gives it one meaning, at both sizes (``stock_programs`` draws from
these the ones the stock implementations get right, for comparing with their exact output).

* **Shape-polymorphic**: every input size is ``n``-based or a small constant, and every
  statement is executed at both ``sizes`` while the program is built and kept only if it
  behaves the same at both (runs, or raises the same exception type): a symbolic trace at
  ``sizes[0]`` can be checked at ``sizes[1]``.
* **Dtypes**: float16/32/64, int32/64, bool and complex64 programs (one main dtype, some
  inputs of others), with ops chosen per dtype family; dtype views add int16/uint8.
* **Inputs**: 0-dim, zero-size and size-1 dims; transposed, sliced, channels_last and
  expanded layouts; inputs aliasing each other (the same tensor twice, a slice, a dtype
  view, a transpose, a diagonal).
* **In-place views** (seeds from ``RESHAPING_FROM_SEED`` on): ``t_``, ``transpose_``,
  ``swapdims_``, ``squeeze_``, ``unsqueeze_``, ``as_strided_`` of views and of inputs.
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
* **What compiled programs do** (``random_compile_statements``): KV-cache writes at
  positions held in tensor inputs, ``_foreach_*`` lists, custom mutable ops
  (``random_custom_ops``) on views and dtype views, writes through dtype views, and flips,
  rolls and transposes of a tensor read in the statement that writes it.
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
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from fxinplace.testing.random import ops as ops
from fxinplace.testing.random.builder import SIZES, BuilderBase
from fxinplace.testing.random.compile_statements import CompileStatements
from fxinplace.testing.random.custom_ops import IMPORT_LINE, NAMESPACE
from fxinplace.testing.random.inputs import dtype_family, dtype_name
from fxinplace.testing.random.rejections import RejectedLines
from fxinplace.testing.random.tensor_facts import storage_id
from fxinplace.testing.random.writes import WriteStatements

__all__ = ["SIZES", "RandomProgram", "generate"]


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
    reject_lines: bool = True  # generate(seed, reject_lines=...)

    @property
    def source(self) -> str:
        lines = [f"def f({', '.join(self.inputs)}):"]
        for statement in self.body:
            lines.extend("    " + line for line in statement.splitlines())
        lines.append(f"    return {', '.join(self.returns)}" + ("," if len(self.returns) == 1 else ""))
        imports = "import torch\n"
        if any(f"torch.ops.{NAMESPACE}." in line for line in self.body):
            imports += IMPORT_LINE + "\n"
        header = (
            f"# fxinplace.testing.random.programs seed={self.seed}"
            f"{'' if self.reject_lines else ' reject_lines=False'}: "
            f"trace at n={self.sizes[0]}, run again at n={self.sizes[1]}\n{imports}\n\n"
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


# Statement kinds and their weights. From seed RESHAPING_FROM_SEED on, programs also
# change tensors' sizes and strides in place (`t_`, `squeeze_`, `as_strided_`, ... of views
# and of inputs); below it they are drawn as before, so a seed keeps naming the program
# that earlier runs, notes and regression lists name.
STATEMENT_KINDS = (("view", "compute", "write", "out", "motif", "compile"), (2.5, 3, 4.5, 0.6, 0.7, 2.5))
RESHAPING_KINDS = ((*STATEMENT_KINDS[0], "inplace_view"), (*STATEMENT_KINDS[1], 0.8))
RESHAPING_FROM_SEED = 100_000


class _Builder(CompileStatements, WriteStatements, RejectedLines, BuilderBase):
    reject_lines = True

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
        if not self.reject_lines:
            reject_mode = None
        reject_at = rng.randrange(n_stmts) if reject_mode else -1
        for i in range(n_stmts):
            if (
                i == reject_at
                and self._stmt_rejected(reject_mode == "terminal")
                and reject_mode == "terminal"
            ):
                break
            for _attempt in range(20):
                kinds, weights = STATEMENT_KINDS if self.seed < RESHAPING_FROM_SEED else RESHAPING_KINDS
                kind = rng.choices(kinds, weights)[0]
                ok = {
                    "inplace_view": self._stmt_inplace_view,
                    "view": self._stmt_view,
                    "compute": self._stmt_compute,
                    "write": self._stmt_write,
                    "out": self._stmt_out,
                    "motif": self._stmt_write_then_reads,
                    "compile": self._stmt_compile,
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
            reject_lines=self.reject_lines,
        )


def generate(seed: int, *, max_stmts: int = 10, reject_lines: bool = True) -> RandomProgram:
    """The program for ``seed`` (deterministic); ``max_stmts`` bounds the statements of ``f``.

    ``reject_lines=False``: no line eager rejects (the compile paths skip a program that
    raises, and Dynamo cannot trace an op that raises inside ``try``); the programs are
    otherwise the same as with them."""
    builder = _Builder(seed, max_stmts)
    builder.reject_lines = reject_lines
    return builder.build()
