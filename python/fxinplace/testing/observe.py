"""One run of a program (eager, functionalized or a graph) and how two runs differ.

``observe(call, args)`` records everything the pipelines are compared on: the error
raised, or the outputs (values, dtypes, shapes, strides), the inputs' state afterwards
(mutations, including resizes), which inputs each output shares storage with, and which
outputs share storage with each other. ``differences(got, want, ...)`` lists what
differs, each as ``(check, detail)``; ``check`` is a short stable name used in failure
signatures.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils import _pytree as pytree

from fxinplace.testing.tensor_facts import storage_id

__all__ = ["Observed", "differences", "observe"]


@dataclasses.dataclass
class Observed:
    error: BaseException | None = None
    spec: Any = None
    outs: list[Any] = dataclasses.field(default_factory=list)  # snapshots
    out_strides: list[tuple[int, ...] | None] = dataclasses.field(default_factory=list)
    args_after: list[Any] = dataclasses.field(default_factory=list)
    input_aliases: list[frozenset[int]] = dataclasses.field(default_factory=list)
    output_sharing: frozenset[tuple[int, int]] = frozenset()


def _snapshot(x: Any) -> Any:
    return x.detach().resolve_conj().resolve_neg().clone() if isinstance(x, torch.Tensor) else x


def _storage(t: torch.Tensor) -> int | None:
    # An empty tensor shows no element of its storage: sharing one means nothing.
    return storage_id(t) if t.numel() and t.untyped_storage().nbytes() else None


def observe(call: Callable[..., Any], args: Sequence[Any]) -> Observed:
    """Run ``call(*args)`` (``args`` fresh: they may be mutated) and record what happened."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call(*args)
    except Exception as exc:  # noqa: BLE001 - recorded and compared
        return Observed(error=exc)
    try:
        return _record(out, args)
    except Exception as exc:  # noqa: BLE001 - outputs eager itself cannot read count as an error
        return Observed(error=exc)


def _record(out: Any, args: Sequence[Any]) -> Observed:
    leaves, spec = pytree.tree_flatten(out)
    arg_storages = [_storage(a) if isinstance(a, torch.Tensor) else None for a in args]
    aliases, storages = [], []
    for leaf in leaves:
        s = _storage(leaf) if isinstance(leaf, torch.Tensor) else None
        storages.append(s)
        aliases.append(frozenset(i for i, a in enumerate(arg_storages) if s is not None and a == s))
    sharing = frozenset(
        (i, j)
        for i in range(len(storages))
        for j in range(i + 1, len(storages))
        if storages[i] is not None and storages[i] == storages[j]
    )
    return Observed(
        spec=spec,
        outs=[_snapshot(x) for x in leaves],
        out_strides=[tuple(x.stride()) if isinstance(x, torch.Tensor) else None for x in leaves],
        args_after=[_snapshot(a) for a in args],
        input_aliases=aliases,
        output_sharing=sharing,
    )


def _tolerance(dtype: torch.dtype) -> tuple[float, float]:
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype in (torch.float32, torch.complex64):
        return 1.3e-6, 1e-5
    return 1e-7, 1e-7


def _value_difference(got: Any, want: Any) -> tuple[str, str] | None:
    if isinstance(got, torch.Tensor) != isinstance(want, torch.Tensor):
        return "type", f"{type(got).__name__} vs {type(want).__name__}"
    if not isinstance(want, torch.Tensor):
        return None if got == want and type(got) is type(want) else ("value", f"{got!r} vs {want!r}")
    if got.dtype != want.dtype:
        return "dtype", f"{got.dtype} vs {want.dtype}"
    if got.shape != want.shape:
        return "shape", f"{tuple(got.shape)} vs {tuple(want.shape)}"
    if torch.equal(got, want):
        return None
    if got.is_floating_point() or got.is_complex():
        rtol, atol = _tolerance(got.dtype)
        if torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            return None
    return "value", f"{got.flatten()[:12].tolist()} vs {want.flatten()[:12].tolist()}"


def _defined_strides(t: torch.Tensor, strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """Strides of the dims where they mean something (size > 1, tensor not empty)."""
    if t.numel() == 0:
        return None
    return tuple(s for s, n in zip(strides, t.shape, strict=True) if n > 1)


def differences(
    got: Observed,
    want: Observed,
    *,
    strides: bool | str = True,
    aliasing: str = "equal",
) -> list[tuple[str, str]]:
    """What differs between two successful runs on equal inputs.

    ``strides``: compare the defined strides of every output (True), of the outputs that
    share no storage with an input in ``want`` (``"fresh"``: a functionalized program
    returns a new tensor where eager returns an input or a view of one), or none (False).

    ``aliasing``: ``"equal"`` (the same input/output and output/output sharing),
    ``"no_new"`` (``got`` shares no storage with an input where ``want`` does not), or
    ``"ignore"``.
    """
    if got.spec != want.spec:
        return [("output structure", f"{got.spec} vs {want.spec}")]
    found: list[tuple[str, str]] = []
    for i, (g, w) in enumerate(zip(got.outs, want.outs, strict=True)):
        diff = _value_difference(g, w)
        if diff is not None:
            found.append((f"output {diff[0]}", f"output[{i}]: {diff[1]}"))
        elif strides and isinstance(w, torch.Tensor) and not (strides == "fresh" and want.input_aliases[i]):
            gs = _defined_strides(g, got.out_strides[i])
            ws = _defined_strides(w, want.out_strides[i])
            if gs != ws:
                found.append(
                    ("output strides", f"output[{i}]: {got.out_strides[i]} vs {want.out_strides[i]}")
                )
    for i, (g, w) in enumerate(zip(got.args_after, want.args_after, strict=True)):
        diff = _value_difference(g, w)
        if diff is not None:
            found.append((f"input post-state {diff[0]}", f"input[{i}]: {diff[1]}"))
    if aliasing == "equal":
        for i, (g, w) in enumerate(zip(got.input_aliases, want.input_aliases, strict=True)):
            if g != w:
                found.append(
                    ("output/input aliasing", f"output[{i}] aliases inputs {sorted(g)} vs {sorted(w)}")
                )
        if got.output_sharing != want.output_sharing:
            found.append(
                ("output/output aliasing", f"{sorted(got.output_sharing)} vs {sorted(want.output_sharing)}")
            )
    elif aliasing == "no_new":
        for i, (g, w) in enumerate(zip(got.input_aliases, want.input_aliases, strict=True)):
            if g - w:
                found.append(("output/input aliasing", f"output[{i}] aliases inputs {sorted(g - w)}"))
    return found
