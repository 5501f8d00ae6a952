"""Lines eager rejects (a mixin of the random program builder).

Broadcasting or promoting past ``self``, writes into expanded memory, shape mismatches,
``out=`` casts that are not allowed, indices out of range, partial self-overlap, or any write
candidate eager happens to reject. A line is used only if eager raises the same exception
type at both sizes without changing anything. It is either the program's last statement
(the program raises) or guarded::

    try:
        <line>
    except RuntimeError:
        pass
    else:
        raise AssertionError('eager rejects: RuntimeError: <eager's message>')

so a functionalized program that does not raise fails, and one that does continues from
the same state as eager.
"""

from __future__ import annotations

from fxinplace.testing.harness.errors import normalize_message
from fxinplace.testing.random.builder import broadcasts_to, grows
from fxinplace.testing.random.inputs import dtype_family
from fxinplace.testing.random.tensor_facts import injective

__all__ = ["RejectedLines"]


class RejectedLines:
    """Mixin of ``programs._Builder`` (uses ``BuilderBase``'s state and helpers)."""

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
            b = self._operand(lambda xs: all(grows(x, t) for x, t in zip(xs, ts, strict=True)))
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
                    not broadcasts_to(x, t) and not grows(x, t) for x, t in zip(xs, ts, strict=True)
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
            square = ts[0].dim() >= 2 and all(t.shape[-1] == t.shape[-2] for t in ts)
            if square and rng.random() < 0.5:  # the transpose of the tensor written
                return category, f"{te}.{rng.choice(('copy_', 'add_'))}({te}.mT)"
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
