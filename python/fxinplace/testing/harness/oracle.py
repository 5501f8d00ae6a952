"""The oracle every differential harness compares runs with: one run observed, two runs compared.

``observe(call, args)`` runs a program (eager ``f``, a functionalized ``f``, a graph module) on
fresh inputs and records what it showed: the error it raised, or its outputs (values, dtypes,
shapes, layouts), the inputs' state afterwards (mutations, resizes, restrides), which inputs
each output shares storage with, which outputs share storage with each other, and which
outputs or inputs are functional tensor wrappers (leaked from a functionalization).

``differences(got, want, ...)`` lists how two runs on equal inputs differ, each as
``(check, detail)``: ``check`` is a short stable name ("output value", "input post-state
dtype", "output strides", "output/input aliasing", ...) used in failure signatures, ``detail``
names the output or input and what differs. ``problem_lines`` turns them into report lines.

Used by ``reinplace_differential`` (stock pass vs fxinplace vs eager),
``functionalize_differential`` (fxinplace.functionalize vs eager vs torch.func.functionalize),
``pipelines`` (random programs through every pipeline) and ``compare`` (benchmarks).
"""

from __future__ import annotations

import dataclasses
import traceback
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch.utils import _pytree as pytree

from fxinplace.testing.random.tensor_facts import storage_id

__all__ = [
    "Layout",
    "Observed",
    "differences",
    "format_exc",
    "is_functional",
    "layout_difference",
    "observe",
    "problem_lines",
    "snapshot",
    "default_tolerance",
    "value_difference",
    "visible_storage",
]

Difference = tuple[str, str]  # (check, detail)


# --------------------------------------------------------------------------- one tensor


def snapshot(x: Any) -> Any:
    """A detached copy of a tensor (conjugate and negative bits resolved); other values as they are."""
    if not isinstance(x, torch.Tensor):
        return x
    if x.dtype == torch.complex32 and x.is_conj() and x.is_neg():
        return _resolve_complex32_bits(x)
    return x.detach().resolve_conj().resolve_neg().clone()


def _resolve_complex32_bits(x: torch.Tensor) -> torch.Tensor:
    """ATen has no CPU kernel that resolves both bits of a complex32 tensor (``neg_conj_cpu``), so
    reading eager's ``_neg_view(t).conj()`` of one raises where its values are well defined
    (random pipelines seed 155775). Its stored numbers, widened exactly, then negated and
    conjugated as the bits say."""
    raw = x.detach().view(x.shape)  # a new tensor object: clearing its bits leaves x's alone
    torch._C._set_conj(raw, False)
    torch._C._set_neg(raw, False)
    return raw.to(torch.complex64).neg().conj_physical().to(torch.complex32)


def visible_storage(t: torch.Tensor) -> int | None:
    """Identity of ``t``'s storage for aliasing checks; ``None`` when ``t`` shows no byte of it
    (an empty tensor, or an empty storage): sharing such a storage means nothing."""
    return storage_id(t) if t.numel() and t.untyped_storage().nbytes() else None


def is_functional(t: torch.Tensor) -> bool:
    """``t`` is a functional tensor wrapper (``FunctionalTensor`` or a C++ functional tensor)."""
    from torch._subclasses.functional_tensor import FunctionalTensor

    return isinstance(t, FunctionalTensor) or torch._is_functional_tensor(t)


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a tensor's elements lie in its storage."""

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int

    @classmethod
    def of(cls, t: torch.Tensor) -> Layout:
        return cls(tuple(t.shape), tuple(t.stride()), t.storage_offset())

    @property
    def numel(self) -> int:
        n = 1
        for size in self.shape:
            n *= size
        return n

    def defined_strides(self) -> tuple[int, ...]:
        """The strides of the dims of size > 1: the stride of a dim of size 1 addresses nothing."""
        return tuple(st for st, n in zip(self.stride, self.shape, strict=True) if n > 1)

    @property
    def dense(self) -> bool:
        """The elements tile one block of memory, with no gaps and no repeats."""
        expected = 1
        for st, n in sorted((st, n) for st, n in zip(self.stride, self.shape, strict=True) if n > 1):
            if st != expected:
                return False
            expected *= n
        return True


def layout_difference(got: Layout, want: Layout, *, offset: bool = False) -> Difference | None:
    """``(kind, detail)`` where the layouts differ where it matters, else ``None``: strides of
    dims of size > 1, and the storage offset (``offset``); only where there is more than one
    element to lay out."""
    if want.numel <= 1:
        return None
    if got.defined_strides() != want.defined_strides():
        return "strides", f"{got.stride} vs {want.stride}"
    if offset and got.offset != want.offset:
        return "storage offset", f"{got.offset} vs {want.offset}"
    return None


def default_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing values of ``dtype`` computed by different kernels."""
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype in (torch.float32, torch.complex64):
        return 1.3e-6, 1e-5
    return 1e-7, 1e-7


Tolerance = tuple[float, float] | Callable[[torch.dtype], tuple[float, float]] | None


def value_difference(got: Any, want: Any, *, tolerance: Tolerance = None) -> Difference | None:
    """``(kind, detail)`` where ``got`` and ``want`` differ, else ``None``.

    ``kind`` is "type" (a tensor vs something else, or non-tensors of different types: an
    ``int`` where ``want`` is a ``bool``), "dtype", "shape", "device" or "value". Floating
    and complex values are equal within ``tolerance`` (``(rtol, atol)``, or a function of the
    dtype giving them; default: ``default_tolerance``), NaN equal to NaN. ``(0.0, 0.0)`` is
    bitwise equality with NaN equal to NaN in the same positions.
    """
    if isinstance(got, torch.Tensor) != isinstance(want, torch.Tensor):
        return "type", f"{type(got).__name__} vs {type(want).__name__}"
    if not isinstance(want, torch.Tensor):
        if type(got) is not type(want):
            return "type", f"{type(got).__name__} vs {type(want).__name__}"
        return None if got == want else ("value", f"{got!r} vs {want!r}")
    if got.dtype != want.dtype:
        return "dtype", f"{got.dtype} vs {want.dtype}"
    if got.shape != want.shape:
        return "shape", f"{tuple(got.shape)} vs {tuple(want.shape)}"
    if got.device != want.device:
        return "device", f"{got.device} vs {want.device}"
    if got.dtype == torch.complex32:  # ATen has no comparison kernels for it; widening is exact
        got, want = got.to(torch.complex64), want.to(torch.complex64)
    if torch.equal(got, want):
        return None
    if got.is_floating_point() or got.is_complex():
        if tolerance is None:
            tolerance = default_tolerance
        rtol, atol = tolerance(got.dtype) if callable(tolerance) else tolerance
        if torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            return None
    return "value", f"{got.flatten()[:12].tolist()} vs {want.flatten()[:12].tolist()}"


def format_exc(exc: BaseException, prefix: str = "", *, limit: int = -4) -> str:
    """``exc`` and the last ``-limit`` frames of its traceback (C++ ``frame #`` lines dropped),
    after ``prefix: Type: message`` when a prefix is given."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=limit))
    text = "\n".join(line for line in text.splitlines() if not line.startswith("frame #")).rstrip()
    return f"{prefix}: {type(exc).__name__}: {exc}\n{text}" if prefix else text


# --------------------------------------------------------------------------- one run


@dataclasses.dataclass
class Observed:
    """What one call showed (see ``observe``); indices are into the flattened outputs/inputs."""

    error: BaseException | None = None
    spec: Any = None
    outs: list[Any] = dataclasses.field(default_factory=list)  # snapshots
    out_layouts: list[Layout | None] = dataclasses.field(default_factory=list)
    args_after: list[Any] = dataclasses.field(default_factory=list)  # snapshots
    arg_layouts: list[Layout | None] = dataclasses.field(default_factory=list)
    input_aliases: list[frozenset[int]] = dataclasses.field(default_factory=list)
    output_sharing: frozenset[tuple[int, int]] = frozenset()
    functional_outs: list[int] = dataclasses.field(default_factory=list)
    functional_args: list[int] = dataclasses.field(default_factory=list)
    # Each input's storage after the call, as far as it reached before it: a write
    # through as_strided may land between an input's elements or past them, where no
    # input shows it but the tensor the input was sliced from does.
    storages_after: list[Any] = dataclasses.field(default_factory=list)


def _storage_before(a: Any) -> tuple[torch.UntypedStorage, torch.dtype, int] | None:
    if not isinstance(a, torch.Tensor) or is_functional(a) or a.device.type == "meta":
        return None
    try:
        storage = a.untyped_storage()
    except (RuntimeError, NotImplementedError):  # a wrapper subclass without real storage
        return None
    return storage, a.dtype, storage.nbytes() // a.element_size()


def _storage_snapshot(before: tuple[torch.UntypedStorage, torch.dtype, int] | None) -> Any:
    """The first elements of an input's storage, as many as it held when the call began
    (a resize keeps them; past them eager's grown memory is uninitialized)."""
    if before is None:
        return None
    storage, dtype, count = before
    count = min(count, storage.nbytes() // torch.empty((), dtype=dtype).element_size())
    flat = torch.empty(0, dtype=dtype, device=storage.device)
    return flat.set_(storage, 0, (count,), (1,)).clone()


def observe(call: Callable[..., Any], args: Sequence[Any]) -> Observed:
    """Run ``call(*args)`` (``args`` fresh: they may be mutated) and record what happened.

    An exception raised by the call, or by reading its outputs, is recorded as ``error``.
    Inputs are the leaves of ``args`` (an input may be a list of tensors).
    """
    storages = [_storage_before(a) for a in pytree.tree_leaves(list(args))]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call(*args)
    except Exception as exc:  # noqa: BLE001 - recorded and compared
        return Observed(error=exc)
    try:
        observed = _record(out, pytree.tree_leaves(list(args)))
        observed.storages_after = [
            # (After set_ the input shows another storage; what became of its first is not
            # the input's any more: a functionalized set_ writes the new value back into it.)
            _storage_snapshot(b) if b is not None and storage_id(a) == b[0]._cdata else None
            for a, b in zip(pytree.tree_leaves(list(args)), storages, strict=True)
        ]
        return observed
    except Exception as exc:  # noqa: BLE001 - outputs eager itself cannot read count as an error
        return Observed(error=exc)


def _layout(x: Any) -> Layout | None:
    return Layout.of(x) if isinstance(x, torch.Tensor) else None


def _record(out: Any, args: list[Any]) -> Observed:
    leaves, spec = pytree.tree_flatten(out)
    # Aliasing and wrapper checks on the live objects, then snapshots.
    arg_storages = [visible_storage(a) if isinstance(a, torch.Tensor) else None for a in args]
    storages = [visible_storage(x) if isinstance(x, torch.Tensor) else None for x in leaves]
    aliases = [frozenset(i for i, a in enumerate(arg_storages) if s is not None and a == s) for s in storages]
    sharing = frozenset(
        (i, j)
        for i in range(len(storages))
        for j in range(i + 1, len(storages))
        if storages[i] is not None and storages[i] == storages[j]
    )
    return Observed(
        spec=spec,
        outs=[snapshot(x) for x in leaves],
        out_layouts=[_layout(x) for x in leaves],
        args_after=[snapshot(a) for a in args],
        arg_layouts=[_layout(a) for a in args],
        input_aliases=aliases,
        output_sharing=sharing,
        functional_outs=[i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor) and is_functional(x)],
        functional_args=[i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and is_functional(a)],
    )


# --------------------------------------------------------------------------- two runs


def differences(
    got: Observed,
    want: Observed,
    *,
    values: bool = True,
    strides: bool | str = True,
    input_layout: bool = False,
    offsets: bool = False,
    aliasing: str = "equal",
    tolerance: Tolerance = None,
) -> list[Difference]:
    """What differs between two successful runs on equal inputs.

    ``values``: compare outputs and the inputs' post-state (value, dtype, shape, type), floats
    within ``tolerance`` (as ``value_difference``).

    ``strides``: compare the layout of every output (True), of the outputs that share no
    storage with an input in ``want`` (``"fresh"``: a functionalized program returns a new
    tensor where eager returns an input or a view of one), or of none (False).
    ``input_layout``: compare the inputs' layouts after the call too. ``offsets``: layouts
    include the storage offset (otherwise only the strides of dims of size > 1).

    ``aliasing``: ``"equal"`` (the same input/output and output/output sharing),
    ``"no_new"`` (``got`` shares no storage with an input where ``want`` does not), or
    ``"ignore"``.
    """
    if got.spec != want.spec:
        return [("output structure", f"{got.spec} vs {want.spec}")]
    found: list[Difference] = []
    if values:
        for i, (g, w) in enumerate(zip(got.outs, want.outs, strict=True)):
            diff = value_difference(g, w, tolerance=tolerance)
            check_layout = strides and not (strides == "fresh" and want.input_aliases[i])
            if diff is None and check_layout and isinstance(w, torch.Tensor):
                if want.input_aliases[i] and aliasing == "ignore":
                    # Eager returns an input (or a view of one); a functionalized program returns
                    # a new tensor (as torch.func.functionalize does) laid out as eager's where
                    # that layout is dense: gaps and the input's place in its storage are the
                    # input's, which its write-back keeps.
                    if want.out_layouts[i].dense:
                        diff = layout_difference(got.out_layouts[i], want.out_layouts[i])
                else:
                    diff = layout_difference(got.out_layouts[i], want.out_layouts[i], offset=offsets)
            if diff is not None:
                found.append((f"output {diff[0]}", f"output[{i}]: {diff[1]}"))
        for i, (g, w) in enumerate(zip(got.args_after, want.args_after, strict=True)):
            diff = value_difference(g, w, tolerance=tolerance)
            if diff is None and input_layout and isinstance(w, torch.Tensor):
                diff = layout_difference(got.arg_layouts[i], want.arg_layouts[i], offset=offsets)
            if diff is not None:
                found.append((f"input post-state {diff[0]}", f"input[{i}]: {diff[1]}"))
        if not any(check.startswith("input post-state") for check, _ in found):
            for i, (g, w) in enumerate(zip(got.storages_after, want.storages_after, strict=False)):
                diff = None if g is None or w is None else value_difference(g, w, tolerance=tolerance)
                if diff is not None:
                    found.append((f"input storage {diff[0]}", f"input[{i}]'s storage: {diff[1]}"))
                    break
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


def problem_lines(label: str, against: str, diffs: Iterable[Difference]) -> list[str]:
    """One report line a difference: ``"<label> differs from <against>: <check>: <detail>"``."""
    return [f"{label} differs from {against}: {check}: {detail}" for check, detail in diffs]
