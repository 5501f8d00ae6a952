"""Exceptions as short, stable text: what failure signatures and eager-rejected lines record."""

from __future__ import annotations

import re

__all__ = ["message", "normalize_message"]


def message(exc: BaseException) -> str:
    """The exception's message without the C++ backtrace c10 appends to it."""
    return str(exc).split("\nException raised from", 1)[0]


def normalize_message(exc: BaseException) -> str:
    """``Type: first line`` with numbers, addresses and symbols generalised (a signature)."""
    text = message(exc).strip()
    text = text.splitlines()[0] if text else ""
    text = re.sub(r"0x[0-9a-fA-F]+", "0x?", text)
    text = re.sub(r"\d+", "N", text)
    return f"{type(exc).__name__}: {text}"[:120]
