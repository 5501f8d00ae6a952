"""Attribution for the compile paths: is a difference fxinplace's, or torch's own?

A compile path with fxinplace (``ours``) is compared with its oracle, the same compiler
without fxinplace's pass, and the oracle with eager (``judge``):

* ours == oracle == eager: nothing to report;
* ours != oracle, oracle == eager: fxinplace's rewrite changed the program (**wrong**);
* ours == oracle != eager, or the oracle raising where eager does not: the compiler is wrong
  without us (a **torch finding**, listed as a ``LIMITATION`` of half ``torch``, not failed);
* ours != oracle != eager: the oracle is no reference; listed as a torch finding whose
  signature says fxinplace differs too, so that it is seen.

Errors from ours (``error_findings``): ``ReinplaceInputError`` is a clear, documented refusal;
``ReinplaceCheckError`` is the checker catching a wrong rewrite (**wrong**), except where it
could not check (``cannot_check``: clear; the caller runs again without the checker) or where
the graph raised under the checker while the oracle did not (internal); any other exception
where the oracle ran is an **internal** error, wherever it was raised (fxinplace's code, the
rewritten graph at run time, or the compiler on a graph we rewrote). The same error from
both: a torch finding, or a skip where Dynamo itself cannot compile the program.
"""

from __future__ import annotations

import pathlib
import traceback

import torch

import fxinplace
from fxinplace.testing.harness.errors import normalize_message
from fxinplace.testing.harness.oracle import Observed, default_tolerance, differences, format_exc
from fxinplace.testing.harness.pipelines import CLEAR, INTERNAL, LIMITATION, SKIPPED, WRONG, Finding

__all__ = [
    "compiler_tolerance",
    "error_findings",
    "exception_chain",
    "judge",
    "needs_unchecked_run",
    "raised_in_fxinplace",
    "root_cause",
]

_PACKAGE = pathlib.Path(fxinplace.__file__).resolve().parent
_TESTING = _PACKAGE / "testing"


def compiler_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """``(rtol, atol)`` between a compiled run and eager: Inductor reassociates float math
    (sums, fused multiply-adds) and computes float16 in float32; gradients of a training step
    near zero are sums of many such terms."""
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype in (torch.float32, torch.complex64):
        return 1e-4, 1e-4
    return default_tolerance(dtype)


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception it wraps (``inner_exception`` of Dynamo's and Inductor's
    wrappers, ``__cause__``, ``__context__``), outermost first."""
    out: list[BaseException] = []
    seen: set[int] = set()
    queue: list[BaseException | None] = [exc]
    while queue:
        e = queue.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        queue += [getattr(e, "inner_exception", None), e.__cause__, e.__context__]
    return out


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception that ``exc`` wraps (what both compilers' errors are compared by:
    the wrappers name the backend)."""
    seen = {id(exc)}
    while True:
        inner = getattr(exc, "inner_exception", None) or exc.__cause__
        if inner is None or id(inner) in seen:
            return exc
        seen.add(id(inner))
        exc = inner


def raised_in_fxinplace(exc: BaseException) -> bool:
    """A frame of fxinplace's own code (not its testing library) is on the traceback."""
    for e in exception_chain(exc):
        for frame in traceback.extract_tb(e.__traceback__):
            path = pathlib.Path(frame.filename)
            if path.is_relative_to(_PACKAGE) and not path.is_relative_to(_TESTING):
                return True
    return False


def _fxinplace_error(exc: BaseException) -> BaseException | None:
    for e in exception_chain(exc):
        if isinstance(e, (fxinplace.ReinplaceInputError, fxinplace.ReinplaceCheckError)):
            return e
    return None


def needs_unchecked_run(exc: BaseException | None) -> bool:
    """The checker could not model a graph: run again without it to compare values."""
    e = _fxinplace_error(exc) if exc is not None else None
    return (
        isinstance(e, fxinplace.ReinplaceCheckError)
        and e.cannot_check
        and not isinstance(e, fxinplace.FunctionalGraphRaisedError)
    )


def _dynamo_error(exc: BaseException) -> bool:
    return type(root_cause(exc)).__module__.startswith("torch._dynamo")


def error_findings(
    ours: Observed, oracle: Observed, eager: Observed, *, at: str, oracle_name: str
) -> list[Finding]:
    """Findings where ``ours`` raised (``ours.error`` is set)."""
    exc = ours.error
    assert exc is not None
    detail = format_exc(exc, limit=-8)
    fx = _fxinplace_error(exc)
    if isinstance(fx, fxinplace.FunctionalGraphRaisedError):
        kind = CLEAR if oracle.error is not None else INTERNAL
        return [Finding(kind, "reinplace", f"check{at}: {normalize_message(fx)}", detail)]
    if isinstance(fx, fxinplace.ReinplaceCheckError):
        kind = CLEAR if fx.cannot_check else WRONG
        return [Finding(kind, "reinplace", f"check{at}: {normalize_message(fx)}", detail)]
    if isinstance(fx, fxinplace.ReinplaceInputError):
        return [Finding(CLEAR, "reinplace", f"refused{at}: {normalize_message(fx)}", detail)]
    if oracle.error is not None:
        same = normalize_message(root_cause(exc)) == normalize_message(root_cause(oracle.error))
        if same or not raised_in_fxinplace(exc):
            return _both_raise(exc, oracle, eager, at=at, oracle_name=oracle_name, same=same)
    where = "in fxinplace" if raised_in_fxinplace(exc) else "where the oracle ran"
    return [
        Finding(INTERNAL, "reinplace", f"raised {where}{at}: {normalize_message(root_cause(exc))}", detail)
    ]


def _both_raise(
    exc: BaseException, oracle: Observed, eager: Observed, *, at: str, oracle_name: str, same: bool
) -> list[Finding]:
    message = normalize_message(root_cause(oracle.error))
    if eager.error is not None:
        return []  # eager raises too (the caller skips such programs)
    if same and _dynamo_error(exc):
        return [Finding(SKIPPED, "torch", f"Dynamo cannot compile it{at}: {message}", format_exc(exc))]
    if same:
        return [Finding(LIMITATION, "torch", f"{oracle_name} raises{at} where eager does not: {message}")]
    return [
        Finding(
            LIMITATION,
            "torch",
            f"{oracle_name} raises{at} where eager does not: {message}; fxinplace raises otherwise",
            format_exc(exc),
        )
    ]


def judge(
    ours: Observed,
    oracle: Observed,
    eager: Observed,
    *,
    exact: bool,
    at: str = "",
    oracle_name: str,
) -> list[Finding]:
    """Findings of one run of ours against the oracle and eager (on identical fresh inputs).

    ``exact``: ours must equal the oracle bitwise (NaNs in the same places); otherwise within
    ``default_tolerance`` (two compiled runs of the same kernels)."""
    if ours.error is not None:
        return error_findings(ours, oracle, eager, at=at, oracle_name=oracle_name)
    if oracle.error is not None:
        message = normalize_message(root_cause(oracle.error))
        return [Finding(LIMITATION, "torch", f"{oracle_name} raises{at} where eager does not: {message}")]
    tolerance = (0.0, 0.0) if exact else default_tolerance
    ours_diffs = differences(ours, oracle, tolerance=tolerance, input_layout=True)
    oracle_diffs = differences(oracle, eager, tolerance=compiler_tolerance, strides="fresh")
    if ours_diffs and not oracle_diffs:
        return [Finding(WRONG, "reinplace", f"differs from {oracle_name}{at}: {c}", d) for c, d in ours_diffs]
    if oracle_diffs:
        check, detail = oracle_diffs[0]
        also = f"; fxinplace differs from it too ({ours_diffs[0][0]})" if ours_diffs else ""
        return [Finding(LIMITATION, "torch", f"{oracle_name} differs from eager{at}: {check}{also}", detail)]
    return []
