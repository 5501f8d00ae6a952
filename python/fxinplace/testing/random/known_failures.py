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
    pipelines: str | None = None  # the pipelines it is seen in (a regular expression, in full)


KNOWN_ISSUES: tuple[KnownIssue, ...] = (
    KnownIssue(
        "make_fx records an op before running it: a line that raises inside f while tracing and is "
        "caught there (try/except) leaves its op in the graph, so the graph raises when run "
        "(torch.func.functionalize alike; fxinplace.functionalize cannot take the node back)",
        "functionalize",
        (r"functional graph raises.*",),
        source=r"(?m)^    try:",
    ),
    KnownIssue(
        "make_fx(tracing_mode='symbolic'): fake tensors run ops eager's CPU kernel rejects (clamp_ of a "
        "complex tensor: its meta kernel does not check), so a line the program expects to raise, "
        "and catches, does not raise while tracing",
        "functionalize",
        (r"eager raises NotImplementedError: .*; the traced program does not",),
        source=r"(?m)^    try:",
    ),
    KnownIssue(
        "make_fx(tracing_mode='symbolic'): the same meta kernel lets a complex clamp (relu_, clamp_) "
        "through at trace time where nothing catches it; the graph records it and raises eager's "
        "error when run, as torch.func.functionalize's does (seed 111173: x0.relu_() of a complex "
        "input)",
        "functionalize",
        (
            r"eager raises NotImplementedError: clamp is not supported for complex types; the traced program "
            r"does not",
        ),
        source=r"\.(relu|clamp(_min|_max)?)_?\(",
    ),
    KnownIssue(
        "make_fx cannot trace a write through a boolean mask held in a tensor (t[mask] = v): index_put_ "
        "needs the mask's values (nonzero), so real tracing raises 'get value out of a tracing tensor' "
        "and symbolic tracing cannot guard on the data-dependent size (torch.func.functionalize alike, "
        "checked on seeds 2046 and 3963's programs)",
        "functionalize",
        (
            r"trace raised RuntimeError: It appears that you're trying to get value out of a tracing .*",
            r"trace raised GuardOnDataDependentSymNode: .*",
        ),
        # a tensor index in a setitem, also one indexing a tensor itself (x1[t2[2] > 0] = v: seed 100269)
        # (the target may be a view: x1.t()[torch.conj(x0[2]).real > 0] = -2j, seed 123268,
        # also one with arguments: x1.view(-1)[t1] = False, seed 144145; an augmented one,
        # which reads t[mask] first: ...[t0.real > 0] += (2-1j), seed 190086; a target with an
        # unpacked shape: x0.reshape(*x0.shape, 1)[t0.unbind(0)[0]] = False, seed 200086)
        source=r"(?m)^ +[\w.()\-, *]+\[.*(\bx\d|\bt\d|[<>=]).*\] [^\s=]{0,2}= ",
    ),
    KnownIssue(
        "make_fx(tracing_mode='symbolic'): torch's symbolic diagonal() of an empty result has another "
        "storage offset than eager's (x[None][:0].reshape(1, 0).diagonal(-1, 1, 0): 1 under fake "
        "tensors, 0 in eager; x[:1].diagonal(1, 1, 0) of an (8, 8) x: 8 vs 0), so an out= argument "
        "resized from it, or an as_strided at its storage_offset(), lands elsewhere in the storage "
        "(or, where the trace took it to grow the storage, the graph pads a negative amount and "
        "raises: seed 123035, t0[-1].unsqueeze(0).diagonal(-1): 4 vs 0)",
        "functionalize",
        (
            r"functional graph differs from eager.*: (output|input post-state) value",
            r"functional graph raises.*: RuntimeError: setStorage: .*",
        ),
        source=r"(?s)\.diagonal\(.*(out=|storage_offset\(\))",
        pipelines=r".*@sym.*",
    ),
    KnownIssue(
        "torch.fx's generated code writes a complex constant whose real part is -0.0 (Python's -2j) "
        "as `(-0-2j)`, which Python evaluates with a real part of +0.0, so a graph's fill.Scalar "
        "(torch.func.functionalize's alike) writes another sign bit than eager, which a dtype view "
        "shows as another value (seed 1336)",
        "functionalize",
        (r"functional graph differs from eager.*: (output|input post-state) value",),
        # The constant and the dtype view, in either order (the view may be an input's: seed 10780).
        # A complex view of a float input shows it too (seed 111775: x1.view(torch.complex64)
        # of a float64 x1 filled with -2j).
        source=r"(?s)(?=.*[(,=\s]-\d+(\.\d*)?j\b)(?=.*\.view\(torch\.(float|int|complex))",
    ),
    KnownIssue(
        "eager's own result depends on the layout: complex neg gives +0.0 for a zero part where its "
        "kernel is vectorized (a contiguous tensor: 0 - x) and -0.0 where it is not (a strided one), "
        "which a dtype view shows as another value (a float64 seen as complex64: its low half's sign "
        "bit); a functional graph computes from compact copies",
        "functionalize",
        (r"(functional graph )?differs from eager.*: (output|input post-state) value",),
        source=r"\.view\(torch\.complex(32|64|128)\)\.neg_?\(\)",
    ),
    KnownIssue(
        "eager's own result depends on the layout, as above, also where the output is strided and "
        "the operand is not: torch.neg(a, out=x) with x = t[::2] gives -0.0 for a zero part, "
        "torch.neg(a) +0.0 (seed 150113: x1 = x0.view(torch.int64) shows it; seed 149674: "
        "_foreach_neg_ of a float64 input seen as complex64, the float's low half a zero real "
        "part; seed 159465: the custom op fxrandom.negate_ of such a view, whose neg_ runs on "
        "eager's strided input and on a contiguous clone with remove='mutations_and_views'); a "
        "functional graph computes into fresh contiguous memory",
        "functionalize",
        (r"(functional graph )?differs from eager.*: (output|input post-state) value",),
        source=r"(?s)(?=.*\.view\(torch\.(complex|int|float)\d*\))(?=.*(torch\.complex\(|complex\d+))"
        r"(?=.*(\bneg_?\(|_foreach_neg_?\(|\.negate_\())",
    ),
    KnownIssue(
        "eager's own result depends on the layout: an integer tensor seen as floats "
        "(x.view(torch.float64)) holds NaNs, and remainder/fmod (pow/square in half precision) "
        "return another NaN bit pattern where the kernel is vectorized (a contiguous tensor: -3 "
        "becomes -24) than where it is not (a strided one: -3 stays); a functional graph computes "
        "from compact copies (seed 120031)",
        "functionalize",
        (r"(functional graph )?differs from eager.*: (output|input post-state) value",),
        source=r"(?m)^.*\.view\(torch\.(float\d*|half|bfloat16)\).*\.(remainder|fmod|pow|square)_?\(",
    ),
    KnownIssue(
        "eager's own result depends on the layout: an integer tensor seen as floats holds NaNs, and "
        "maximum/minimum (also _foreach_maximum_) keep a NaN's bits in whole vectors of 16 float32 "
        "but return the canonical NaN in the scalar tail and on strided tensors (torch.maximum(x, x) "
        "of 20 NaNs with bits -1: 16 stay -1, 4 become 2143289344); remove='mutations_and_views' "
        "computes from compact *_copy values, eager from the strided views (seed 144391)",
        "functionalize",
        (r"(functional graph )?differs from eager.*: (output|input post-state|input storage) value",),
        source=r"(?s)\.view\(torch\.(float\d*|half|bfloat16)\).*\b(_foreach_)?(maximum|minimum)_?\(",
    ),
    KnownIssue(
        "eager's own result depends on the layout: a reduction (mean, sum, prod) over NaNs of "
        "several bit patterns (an integer tensor seen as floats: -1 and -2 are NaNs) keeps one "
        "pattern where it walks a strided tensor, another where its vectorized kernel walks a "
        "contiguous one (t0.mean(0) of x[::2].view(torch.float32): bits -2 strided, -1 "
        "contiguous); remove='mutations_and_views' reduces compact copies (seed 160033)",
        "functionalize",
        (r"(functional graph )?differs from eager.*: (output|input post-state|input storage) value",),
        source=r"(?s)\.view\(torch\.(float\d*|half|bfloat16)\).*\.(mean|sum|prod|nansum|nanmean)\(",
    ),
    KnownIssue(
        "eager's own result depends on the layout: remainder of a float NaN (an integer tensor seen as "
        "floats: -2 is one) keeps its bits in the scalar loop (a strided tensor) and changes them in "
        "the vectorized kernel (a contiguous one: -2 becomes -3); remove='mutations_and_views' "
        "computes from compact copies (seed 181790: remainder_ through a strided float view of an "
        "int32 input)",
        "functionalize",
        (r"(functional graph )?differs from eager.*: (output|input post-state|input storage) value",),
        source=r"(?s)\.view\(torch\.(float\d*|half|bfloat16)\).*(\.remainder_?\(|torch\.remainder\(|%)",
        pipelines=r"fxf-(eager-)?views(@sym)?",
    ),
    KnownIssue(
        "eager's own result depends on the layout: complex addition of two NaNs takes both parts' "
        "payloads from one operand in the vectorized kernel (a contiguous tensor) and the real "
        "part's from one, the imaginary part's from the other in the scalar loop (a strided one); "
        "a complex input whose bits an integer view rewrote holds such NaNs, and "
        "remove='mutations_and_views' computes from compact copies (seed 160418)",
        "functionalize",
        (r"(functional graph )?differs from eager.*: (output|input post-state|input storage) value",),
        source=r"(?s)(?=.*torch\.complex\()(?=.*\.view\(torch\.int(16|32|64)\))(?=.*(\+=|\.add_?\(|_foreach_add_?\())",
    ),
    KnownIssue(
        "eager's own result depends on the layout: torch's vectorized complex neg turns 0.0 into "
        "+0.0 (0 - x) where its scalar loop gives -0.0, so a write through a _neg_view of another "
        "dtype's bits seen as complex (x[:, 0].view(torch.complex64)) sets a sign bit, a mantissa "
        "bit of the float64 underneath, in eager's strided memory but not in a functional graph's "
        "compact copies of eight elements or more (seed 127291)",
        "functionalize",
        (r"(functional graph )?differs from eager.*: (output|input post-state|input storage) value",),
        source=r"(?m)^.*_neg_view\(.*\.view\(torch\.complex(32|64|128)\)",
    ),
)


def known_issue(half: str, signature: str, source: str | None, pipeline: str | None = None) -> str | None:
    """The issue text of the known failure this is, or None.

    ``source=None`` (a group, not one program) matches entries regardless of their
    ``source`` pattern; ``pipeline=None`` (a group over several pipelines) regardless of
    their ``pipelines``.
    """
    for known in KNOWN_ISSUES:
        if known.half != half or not any(re.fullmatch(p, signature) for p in known.signatures):
            continue
        if source is not None and known.source is not None and not re.search(known.source, source):
            continue
        if pipeline and known.pipelines and not re.fullmatch(known.pipelines, pipeline):
            continue
        return known.issue
    return None
