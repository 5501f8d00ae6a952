"""Known failures of the random pipeline run, in one place, each with its issue text.

``test_random_pipelines.py`` xfails a program whose every failure is known here, and fails
it on any other; ``benchmarks/run_random_pipelines.py`` marks known groups. A failure is
known when its half and signature match an entry (``signatures`` are regular expressions,
matched in full against the normalised signature) and, where ``source`` is given, the
program's source matches that regular expression (to keep a generic symptom such as
"output value" from hiding a different bug).

Remove an entry when its fix lands: the programs it covered must then pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KNOWN_ISSUES", "KnownIssue", "known_issue"]


@dataclass(frozen=True)
class KnownIssue:
    issue: str
    half: str  # "reinplace" or "functionalize"
    signatures: tuple[str, ...]
    source: str | None = None


# Signature fragments (as pipelines writes them: digits normalised to N).
_RAISES = r"(trace|functionalized f) raised .*|functional graph raises.*"
_VALUES = r".*(output|input post-state) value"
_BOOL_ERRORS = r".*(Bool|bool tensor|view_as_real is only|view_as_complex is only).*"
_ALIASED_INPUTS = r"(?m)^    x\d+ = x\d+"  # an input made from another one in make_args


def _not_raised(eager_error: str) -> str:
    """Eager raises ``eager_error`` (a regex over "Type: message"), the pipeline does not."""
    return rf"eager raises {eager_error}; (functionalized f|the traced program) does not"


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        "fxinplace.functionalize: an in-place op whose out-of-place result has another dtype "
        "(x.lt_(y), eq_, ge_, logical_not_, ... on a non-bool x) makes x bool instead of casting "
        "back to x's dtype; later ops then see a bool tensor",
        "functionalize",
        (_BOOL_ERRORS, r".*output dtype", _VALUES, _RAISES),
        source=r"\.(lt|le|gt|ge|eq|ne|logical_not|logical_and|logical_or|logical_xor)_\(",
    ),
    KnownIssue(
        "fxinplace.functionalize: out= ignores the out tensor's dtype: the result is not cast to it "
        "(torch.eq(a, b, out=int64_tensor) returns bool)",
        "functionalize",
        (_BOOL_ERRORS, r".*output dtype", _VALUES, r".*isComplexType.*", _RAISES),
        source=r"out=",
    ),
    KnownIssue(
        "fxinplace.functionalize: an in-place or out= op whose result dtype cannot be cast to the "
        "written tensor's runs and changes its dtype (int x.sqrt_() makes x float, complex z.abs_() "
        "makes z float, float x.sub_(1j), torch.add(complex, 1, out=float)); eager raises 'result "
        "type ... can't be cast to the desired output type ...' / 'In-place abs is not supported for "
        "complex tensors'",
        "functionalize",
        (
            _not_raised(r"RuntimeError: result type \w+ can't be cast to the desired output type \w+"),
            _not_raised(r"RuntimeError: In-place abs is not supported for complex tensors\."),
        ),
    ),
    KnownIssue(
        "fxinplace.functionalize: a write through torch._neg_view(x) or x.conj() lands in x without "
        "the negation/conjugation (torch._neg_view(x).add_(1) leaves x + 1, eager x - 1)",
        "functionalize",
        (_VALUES, r".*setStorage.*", _BOOL_ERRORS),
        source=r"_neg_view|conj\(",
    ),
    KnownIssue(
        "fxinplace.functionalize under make_fx(tracing_mode='symbolic'): a write through a view "
        "without a dedicated inverse (torch._neg_view, conj, unfold) raises 'Cannot call "
        "storage_offset() on tensor with symbolic sizes/strides' (or an as_strided_scatter bounds error)",
        "functionalize",
        (
            r"trace raised RuntimeError: Cannot call storage_offset.*",
            r"trace raised RuntimeError: as_strided_scatter.*",
        ),
        source=r"_neg_view|conj\(|unfold",
    ),
    KnownIssue(
        "fxinplace.functionalize under make_fx(tracing_mode='symbolic') with inputs that alias each "
        "other (f(x, x[:-1])): 'mul expected 2 arguments, got 1' / 'sN is not tracked with proxy'",
        "functionalize",
        (
            r"trace raised TypeError: mul expected N arguments.*",
            r"trace raised RuntimeError: .*is not tracked with proxy.*",
        ),
        source=_ALIASED_INPUTS,
    ),
    KnownIssue(
        "fxinplace.functionalize: inputs that alias each other through a dtype view "
        "(f(x, x.view(torch.int32))) do not see each other's writes",
        "functionalize",
        (_VALUES,),
        source=r"(?m)^    x\d+ = (x\d+\.view\(torch\.|torch\.view_as_real\(x)",
    ),
    KnownIssue(
        "fxinplace.functionalize: as_strided of a tensor that is itself a view (at its "
        "storage_offset()) is replayed at the wrong offset with remove='mutations_and_views' "
        "(setStorage out of bounds, or other elements)",
        "functionalize",
        (r".*setStorage.*", _VALUES),
        source=r"as_strided\(",
    ),
    KnownIssue(
        "fxinplace.functionalize: writes into expanded (stride-0) memory: an in-place op eager rejects "
        "(x.expand(2, 3).add_(1)) runs; a write through an injective view of an expand is written "
        "back by summing the expanded copies; a write into (even a zero-element part of) an expanded "
        "input raises 'more than one element ... refers to a single memory location'; fill_ into "
        "overlapping memory fails",
        "functionalize",
        (
            _not_raised(r"RuntimeError: unsupported operation: more than one element of the written-to.*"),
            _VALUES,
            r".*output dtype",  # the sum that writes back an expand is int64 for int32
            r".*more than one element of the written-to tensor.*",
            r".*expected src to have a size equal to the slice.*",
            r".*view Long as Half.*",
            _RAISES,
        ),
        source=r"expand",
    ),
    KnownIssue(
        "fxinplace.functionalize(remove='mutations_and_views'): after a write through x.view(dtype), "
        "a later .contiguous(memory_format=...) of a result computed from x aliases it where eager "
        "copies, so a later in-place op on that result shows through",
        "functionalize",
        (_VALUES,),
        source=r"(?s)\.view\(torch\.\w+\).*\.contiguous\(memory_format",
    ),
    KnownIssue(
        "fxinplace.functionalize: an in-place op whose other operand broadcasts past self "
        "(x.add_(y) with y bigger) runs and resizes x; eager raises 'output with shape ... doesn't "
        "match the broadcast shape'",
        "functionalize",
        (_not_raised(r"RuntimeError: output with shape .* doesn't match the broadcast shape.*"),),
    ),
    KnownIssue(
        "fxinplace.functionalize: a write whose source partially overlaps its destination "
        "(x[1:].copy_(x[:-1])) runs; eager raises 'some elements of the input tensor and the "
        "written-to tensor refer to a single memory location'",
        "functionalize",
        (_not_raised(r"RuntimeError: unsupported operation: some elements of the input tensor.*"),),
    ),
    KnownIssue(
        "fxinplace.functionalize under make_fx: a line that raises inside f and is caught "
        "(try/except) leaves the op it recorded in the graph, so the graph raises when run",
        "functionalize",
        (r"functional graph raises.*",),
        source=r"(?m)^    try:",
    ),
    KnownIssue(
        "fxinplace.functionalize: the strides of a tensor written in place follow the out-of-place "
        "op's result (t = x.t().logical_not(); t.scatter_add_(...); t.clone() is contiguous, eager "
        "keeps x.t()'s layout)",
        "functionalize",
        (r".*output strides",),
    ),
    KnownIssue(
        "fxinplace.reinplace: a scatter into an expanded (stride-0) base is removed and its source "
        "computed in place, so the write lands in every expanded copy "
        "(diagonal_scatter(x.clone().expand(3, 3), d.sign()) -> sign_ on the diagonal)",
        "reinplace",
        (r"re-inplaced graph differs from the functional graph.*",),
        source=r"expand",
    ),
)


def known_issue(half: str, signature: str, source: str | None) -> str | None:
    """The issue text of the known failure this is, or None.

    ``source=None`` (a group, not one program) matches entries regardless of their
    ``source`` pattern.
    """
    for known in KNOWN_ISSUES:
        if known.half != half or not any(re.fullmatch(p, signature) for p in known.signatures):
            continue
        if source is not None and known.source is not None and not re.search(known.source, source):
            continue
        return known.issue
    return None
