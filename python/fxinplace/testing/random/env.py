"""Running a program while it is generated, at every size at once.

A statement is kept only if it behaves the same at both sizes (runs at both, or
raises the same exception type at both): the program then means the same thing at
the size it is traced at and at the size the traced graph is run at.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import torch

__all__ = ["DualEnv"]


def _state(ns: dict) -> list[tuple]:
    """Everything a statement could change: each named tensor's metadata and its storage bytes."""
    state = []
    for name, value in sorted(ns.items()):
        if isinstance(value, torch.Tensor):
            raw = value.untyped_storage()
            state.append(
                (name, value.dtype, tuple(value.shape), value.stride(), value.storage_offset(), bytes(raw))
            )
    return state


class DualEnv:
    """The accepted statements of a program, executed at each of ``sizes``."""

    def __init__(
        self, make_args: Callable[[int], tuple], sizes: Sequence[int], inputs: Sequence[str]
    ) -> None:
        self.make_args = make_args
        self.sizes = tuple(sizes)
        self.inputs = list(inputs)
        self.lines: list[str] = []
        self.spaces: list[dict] = []
        self.reset()

    def reset(self) -> None:
        """Re-run the accepted statements from fresh inputs (after a candidate failed mid-way)."""
        self.spaces = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for n in self.sizes:
                ns: dict = {"torch": torch}
                ns.update(zip(self.inputs, self.make_args(n), strict=True))
                for line in self.lines:
                    exec(line, ns)
                self.spaces.append(ns)

    def values(self, expr: str) -> list[torch.Tensor] | None:
        """``expr`` evaluated at each size (it must not write), or None if it fails anywhere."""
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for ns in self.spaces:
                try:
                    value = eval(expr, ns)
                except Exception:  # noqa: BLE001 - an invalid candidate is simply not used
                    return None
                if not isinstance(value, torch.Tensor):
                    return None
                out.append(value)
        return out

    def tensors(self, name: str) -> list[torch.Tensor]:
        return [ns[name] for ns in self.spaces]

    def run(self, line: str) -> bool:
        """Execute ``line`` at every size; keep it if it ran everywhere."""
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for ns in self.spaces:
                    exec(line, ns)
        except Exception:  # noqa: BLE001
            self.reset()
            return False
        self.lines.append(line)
        return True

    def rejection(self, line: str) -> BaseException | None:
        """What eager raises for ``line`` (at the first size), if it raises the same type at every
        size without changing anything.

        None if ``line`` runs anywhere, raises different types, or writes before raising
        (then "eager rejects it" would not describe the state the program continues in).
        """
        raised: list[BaseException] = []
        for ns in self.spaces:
            before = _state(ns)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    exec(line, ns)
            except Exception as exc:  # noqa: BLE001
                raised.append(exc)
                if _state(ns) != before:
                    self.reset()
                    return None
            else:
                self.reset()
                return None
        return raised[0] if len({type(e) for e in raised}) == 1 else None
