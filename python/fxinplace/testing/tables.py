"""Formatting benchmark results: times, ratios, counts and Markdown tables."""

from __future__ import annotations

from collections.abc import Sequence

from fxinplace.testing.harness.compare import PassRun


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1:
        return f"{s * 1000:.1f} ms"
    return f"{s:.2f} s"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.1f}x"


def fmt_count(run: PassRun, attr: str) -> str:
    value = getattr(run, attr)
    return "-" if value is None else str(value)


def fmt_match(run: PassRun) -> str:
    if run.status == "skipped":
        return "-"
    if run.status == "timeout":
        return "timed out"
    if run.status == "error":
        return "error"
    if run.mismatch is not None:
        return f"NO ({run.mismatch})"
    return "yes" if run.eager_mismatch is None else f"NO ({run.eager_mismatch})"


def fmt_pass_time(run: PassRun, cap_note: str = "") -> str:
    if run.status == "skipped":
        return f"skipped{cap_note}"
    if run.status == "timeout":
        return f"timed out ({run.error})"
    if run.status == "error":
        return "error"
    return fmt_seconds(run.seconds)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    return "\n".join([line, rule, *body])
