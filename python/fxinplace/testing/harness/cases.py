"""Corpus cases registered next to their programs.

A corpus module writes each program as a function and registers it with its harness's
decorator, ``reinplace_differential.reinplace_case`` or
``functionalize_differential.functionalize_case``, which names the inputs and expectations
of the case right above the program. ``collect`` gathers a corpus from its modules, in the
order the cases are written. A function may carry several cases (decorators stacked, each
with its own ``name``): one program checked with different inputs or tracing modes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any, TypeVar

__all__ = ["case_decorator", "cases_of", "collect", "register"]

_ATTR = "__fxinplace_cases__"
C = TypeVar("C")
F = TypeVar("F", bound=Callable[..., Any])


def register(fn: F, case: Any) -> F:
    """Attach ``case`` to ``fn`` (decorators apply bottom-up: the top one stays first)."""
    fn.__dict__.setdefault(_ATTR, []).insert(0, case)
    return fn


def case_decorator(
    kind: Callable[..., Any], make_args: Any, name: str | None, **fields: Any
) -> Callable[[F], F]:
    """A decorator registering ``kind(name or fn.__name__, fn, make_args, **fields)`` on ``fn``."""

    def decorate(fn: F) -> F:
        return register(fn, kind(name or fn.__name__, fn, make_args, **fields))

    return decorate


def cases_of(fn: Callable[..., Any]) -> list[Any]:
    return list(getattr(fn, _ATTR, ()))


def collect(kind: type[C], modules: Iterable[ModuleType]) -> list[C]:
    """The cases of type ``kind`` defined in ``modules``, in order; names must be unique."""
    found: list[C] = []
    for module in modules:
        for value in vars(module).values():
            if getattr(value, "__module__", None) == module.__name__:
                found.extend(c for c in cases_of(value) if isinstance(c, kind))
    seen: set[str] = set()
    for case in found:
        name = case.name  # type: ignore[attr-defined]
        if name in seen:
            raise ValueError(f"two {kind.__name__} cases are named {name!r}")
        seen.add(name)
    return found
