"""``fxinplace.functionalize``: a drop-in for ``torch.func.functionalize``.

Tensors entering ``func`` are wrapped in fxinplace functional tensors; every
op on them goes to a C++ fallback on our own dispatch key (see
``csrc/functionalize/``), which re-issues it as functional ops on the
unwrapped values. Outputs are synced and unwrapped, and inputs that ``func``
mutated get the new value copied back (under ``make_fx`` these are the
trailing ``copy_`` into placeholders).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch.fx.experimental.symbolic_shapes import is_concrete_int, statically_known_true
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from fxinplace._C import functionalize as kernels
from fxinplace._functionalize.afv2_call import call_auto_functionalized_v2
from fxinplace._functionalize.input_geometry import (
    contiguous_strides,
    extent,
    geometry_extent,
    geometry_of,
    metadata_change,
    provably_contiguous,
    repeats_memory,
    storage_key,
)
from fxinplace._functionalize.storage_span import storage_write_backs
from fxinplace._functionalize.trace_values import exact_storage_offsets, one_fake_mode_per_trace

__all__ = ["functionalize", "DISPATCH_KEY"]


def _claim_dispatch_key() -> None:
    """Registers our fallback on its dispatch key, once, at the first call of a functionalized
    function (under a lock: two threads may make the first call together). Importing
    fxinplace to compile or re-inplace leaves the key alone."""
    if _claimed:
        return
    with _claim_lock:
        if not _claimed:
            kernels.register()
            kernels.set_auto_functionalize_hook(call_auto_functionalized_v2)
            _claimed.append(True)


_claimed: list[bool] = []  # non-empty once the key is ours
_claim_lock = threading.Lock()

#: The dispatch key our fallback owns (see ``csrc/functionalize/dispatch_key.h``).
DISPATCH_KEY: str = kernels.dispatch_key()

_REMOVE_MODES = {"mutations": True, "mutations_and_views": False}

_KEY = torch._C._dispatch_key_parse(DISPATCH_KEY)

#: Higher-order ops whose tensor arguments are operands and whose callable
#: arguments are subgraphs applied to them: they run on the unwrapped operands,
#: each subgraph functionalized in a region of its own.
_SUBGRAPH_HIGHER_ORDER_OPS = ("cond", "while_loop")


def _check_not_nested(flat_args: list[Any]) -> None:
    if kernels.region_active():
        raise RuntimeError("fxinplace.functionalize cannot be nested inside another fxinplace.functionalize")
    if torch._C._are_functorch_transforms_active() or any(
        isinstance(a, torch.Tensor) and torch._is_functional_tensor(a) for a in flat_args
    ):
        raise RuntimeError(
            "fxinplace.functionalize cannot run inside torch.func.functionalize "
            "or another torch.func transform"
        )


def _has_gaps(t: torch.Tensor) -> bool:
    """Whether ``t``'s elements are distinct memory locations with others between them
    (``x[:, ::2]``): a functional value of it is compact, so its eager place in the storage,
    which ``as_strided`` addresses, would be lost at its first write."""
    if t.layout != torch.strided or t.numel() == 0:
        return False
    spanned = 0  # the largest offset the dims taken so far reach
    gaps = False
    for stride, size in sorted((st, s) for s, st in zip(t.shape, t.stride(), strict=True) if s > 1):
        if stride <= spanned:
            return False  # overlapping (expanded) memory
        gaps = gaps or stride > spanned + 1
        spanned += (size - 1) * stride
    return gaps


def _shared_storage_groups(flat_args: list[Any]) -> list[list[int]]:
    """Indices of tensor inputs that share a storage, in groups of two or more, and inputs
    with gaps between their elements, each a group of its own."""
    groups: dict[object, list[int]] = {}
    for i, a in enumerate(flat_args):
        if isinstance(a, torch.Tensor):
            key = storage_key(a)
            if key is not None:
                groups.setdefault(key, []).append(i)
    return [g for g in groups.values() if len(g) > 1 or _has_gaps(flat_args[g[0]])]


class _Inputs:
    """The functional tensors standing for ``func``'s inputs.

    The same tensor object passed twice (``f(x, x)``) is one functional tensor,
    so metadata changes (``x.t_()``) are seen through both arguments. Distinct
    inputs that share a storage (``f(x, x[1:])``) must see each other's writes,
    as in eager, and an input with gaps between its elements must keep its place
    in the storage (and the memory between its elements) past its first write:
    each is wrapped on its own, and the C++ side joins them into one alias group
    over their common storage where that shows (an op reading one after another
    was written; see csrc/functionalize/input_alias_set.h). Until then the graph
    reads and writes the inputs themselves, naming none of their geometry.
    """

    def __init__(self, flat_args: list[Any], reapply_views: bool) -> None:
        self.wrapped: list[Any] = list(flat_args)
        first_of: dict[int, int] = {}
        for i, a in enumerate(flat_args):
            if not isinstance(a, torch.Tensor):
                continue
            if id(a) not in first_of:
                first_of[id(a)] = i
                self.wrapped[i] = kernels.wrap(a, eager_layout=True)
        distinct = [a if first_of.get(id(a)) == i else None for i, a in enumerate(flat_args)]
        for group in _shared_storage_groups(distinct):
            members = [flat_args[i] for i in group]
            if len({m.element_size() for m in members}) > 1:
                raise RuntimeError(
                    "fxinplace.functionalize: inputs that share memory with different element sizes "
                    f"({', '.join(sorted({str(m.dtype) for m in members}))}) are not supported; "
                    "pass one of them and view it inside the function instead"
                )
            kernels.share_inputs([self.wrapped[i] for i in group], members)
        for i, a in enumerate(flat_args):
            if isinstance(a, torch.Tensor) and first_of[id(a)] != i:
                self.wrapped[i] = self.wrapped[first_of[id(a)]]


def _write_back(
    original: torch.Tensor,
    functional: torch.Tensor,
    reapply_views: bool,
    *,
    storage_written: bool = False,
    spanned: bool = False,
) -> tuple[Callable[[], None] | None, Callable[[], None] | None]:
    """Computes what ``original`` must become; returns the write-backs to run after the
    region: one that runs before the storage spans' (``storage_write_backs``), or None, and
    the input's own, or None.
    ``storage_written``: its storage is written back whole too (its elements too);
    ``spanned``: through ``original`` itself, which must take its place back."""
    if kernels.storage_changed(functional):
        return None, _write_back_whole(original, functional, reapply_views)
    geometry = metadata_change(original, functional)
    own = geometry_of(original)
    if geometry is None and not spanned and (storage_written or not kernels.mutated(functional)):
        return None, None
    final = tuple(geometry) if geometry is not None else geometry_of(original)
    if repeats_memory(final):
        raise RuntimeError(
            "fxinplace.functionalize: the function writes an input in which more than one element refers to "
            "a single memory location (an expanded tensor); writing such an input back is not supported. "
            "Pass a clone (x.clone() or x.contiguous()) instead"
        )
    # eager grew the input's storage and the input ends up needing it
    grown = kernels.resized_base_sizes(functional)
    if grown is not None and (geometry is None or geometry_extent(*geometry) <= extent(original)):
        grown = None
    if (
        grown is not None
        and any(isinstance(d, torch.SymInt) for d in original.shape)
        and all(is_concrete_int(d) for d in grown)
    ):
        # resize_ of a placeholder with symbolic sizes to concrete ones takes ATen's C++
        # path, which refuses to set the sizes of a tensor with symbolic ones (seed 4349;
        # symbolic new sizes go through the fake tensor's own resize_). A SymInt a guard
        # made a constant is concrete too (seed 120690: (s0, s0) with s0 == 2).
        raise RuntimeError(
            "fxinplace.functionalize: the function grows the storage of an input with symbolic sizes to "
            "concrete ones "
            f"(shape {tuple(original.shape)}, to {tuple(grown)}: an out= argument resized past its memory); "
            "a symbolic trace cannot record that resize_. Trace with concrete sizes, or pass an out= tensor "
            "of the result's shape"
        )
    new_value = kernels.unwrap(functional, reapply_views)
    # Writes made before a resize (or as_strided_) moved the input off some of its
    # elements stay in the memory it leaves, where other tensors see them
    # (x1 = x0[:, 1:]; x1.add_(1); torch.abs(x1[:, :0], out=x1): x0 keeps x1's add; and
    # x1 = t[::2] written, then resized to more elements that do not reach its last row:
    # random pipelines seed 132848).
    # It goes before the storage's span, whose value holds the later writes, which this
    # older value would otherwise undo (random pipelines seed 159970: x2 written, then
    # resized by an out= write of all its elements, then as_strided_ to every other
    # element); the span need not hold the older writes (seed 175326: x2 = t.t() written
    # whole, then resized by an out= write to its first 4 elements: the span is those 4).
    # Each layout a resize left, oldest first: seed 178149 wrote x whole through an out=
    # resize to (1, n * n), then resized it to 4 of those elements.
    before_shrinking = []
    if geometry is not None and grown is None and kernels.joined_base(functional) is None:
        if not _covers_elements(geometry, original):
            before_shrinking = kernels.left_behind(functional, reapply_views)
    # Written only under torch.no_grad() (an optimizer updating a parameter): so is the
    # write-back, as eager recorded nothing for the writes.
    recorded = kernels.written_with_grad(functional)

    def restore_before_shrinking() -> None:
        with torch.set_grad_enabled(recorded and torch.is_grad_enabled()):
            moved = False
            for left, value in before_shrinking:
                if left is not None:  # None: at the input's own geometry
                    _grow_storage_to_hold(original, left)
                    original.as_strided_(*left)
                    moved = True
                original.copy_(value)
            if moved:
                original.as_strided_(*own)

    def write_back() -> None:
        with torch.set_grad_enabled(recorded and torch.is_grad_enabled()):
            if spanned:
                original.as_strided_(*own)  # back from the storage span it was written through
            if grown is not None:
                original.resize_(grown)
            if geometry is not None and tuple(geometry) != geometry_of(original):
                original.as_strided_(*geometry)
            original.copy_(new_value)

    return (restore_before_shrinking if before_shrinking else None), write_back


def _grow_storage_to_hold(original: torch.Tensor, left: tuple[Any, Any, Any]) -> None:
    """Eager grew the input's storage with an out= resize before a later resize shrank the
    input again: the layout it left behind may reach past the storage the caller passed
    (x1 = t[1:4] of 5 elements, torch.mul(x0_7x2, 2, out=x1) makes it (7, 2) at offset 1 in 15
    elements, then torch.sum(x0, 0, out=x1) makes it (2,); random pipelines seed 202096).
    The storage grows as eager's did, through resize_ of the input (which only grows: where
    the storage is large enough it keeps it). A symbolic trace cannot compare with a storage
    size (make_fx records no proxy for one), so there it always resizes."""
    need = geometry_extent(*left)
    nbytes = original.untyped_storage().nbytes()
    if type(nbytes) is int and statically_known_true(need * original.element_size() <= nbytes):
        return
    original.resize_((need - original.storage_offset(),))


def _covers_elements(final: tuple[Any, Any, Any], original: torch.Tensor) -> bool:
    """Every element of ``original`` is an element of a dense, contiguous ``final`` (known
    without a guard): the input's write-back then writes all the memory it held."""
    sizes, strides, start = final
    if not provably_contiguous(sizes, strides):
        return False
    if original.numel() == 0:
        return True
    end = start + math.prod(sizes)
    return statically_known_true(start <= original.storage_offset()) and statically_known_true(
        extent(original) <= end
    )


def _write_back_whole(
    original: torch.Tensor, functional: torch.Tensor, reapply_views: bool
) -> Callable[[], None]:
    """`set_` pointed the input at another tensor's storage: the caller's tensor takes that
    tensor's value and geometry (resized to hold it) rather than sharing its storage, as
    torch.func.functionalize writes it back."""
    new_value = kernels.unwrap(functional, reapply_views)
    # The functional tensor answers with eager's layout (its value may be a compact copy).
    size, stride = list(functional.shape), list(functional.stride())
    if repeats_memory((size, stride, 0)):
        stride = contiguous_strides(size)
    recorded = kernels.written_with_grad(functional)

    def write_back() -> None:
        with torch.set_grad_enabled(recorded and torch.is_grad_enabled()):
            target = original
            if extent(original) < geometry_extent(size, stride, 0) or list(original.shape) != size:
                target = target.resize_(geometry_extent(size, stride, 0))
            if geometry_of(target) != (size, stride, 0):
                target = target.as_strided_(size, stride, 0)
            target.copy_(new_value)

    return write_back


def _unwrap(x: Any, reapply_views: bool) -> Any:
    if isinstance(x, torch.Tensor) and kernels.is_functional(x):
        return kernels.unwrap(x, reapply_views)
    return x


def _functionalized_subgraph(name: str, fn: Callable[..., Any], reapply_views: bool) -> Callable[..., Any]:
    """``fn`` run on functional tensors in a region of its own (a branch of ``cond``, ...)."""

    def subgraph(*args: Any) -> Any:
        flat_args, spec = tree_flatten(args)
        with kernels.Region(reapply_views):
            inputs = _Inputs(flat_args, reapply_views)
            out = fn(*tree_unflatten(inputs.wrapped, spec))
            for i, w in enumerate(inputs.wrapped):
                if isinstance(w, torch.Tensor) and (
                    kernels.mutated(w) or metadata_change(flat_args[i], w) is not None
                ):
                    raise RuntimeError(
                        f"fxinplace.functionalize: a subgraph of torch.ops.higher_order.{name} changes its "
                        f"operand {i} in place; writes to the operands of higher-order ops are not supported"
                    )
            operands = {kernels.alias_group(w) for w in inputs.wrapped if isinstance(w, torch.Tensor)}
            for o in tree_flatten(out)[0]:
                if isinstance(o, torch.Tensor) and kernels.is_functional(o):
                    # as torch.cond checks when it compiles itself
                    if not kernels.from_current_region(o) or kernels.alias_group(o) in operands:
                        raise RuntimeError(
                            f"fxinplace.functionalize: a subgraph of torch.ops.higher_order.{name} returns "
                            "an operand, a view of one or a tensor from outside it; higher-order ops do not "
                            "support aliasing (return a clone() instead)"
                        )
            return tree_map(lambda o: _unwrap(o, reapply_views), out)

    return subgraph


def _run_subgraph_higher_order_op(name: str, op: Any, *args: Any, **kwargs: Any) -> Any:
    reapply_views = kernels.reapply_views()
    groups = [
        kernels.alias_group(a)
        for a in tree_flatten((args, kwargs))[0]
        if isinstance(a, torch.Tensor) and kernels.is_functional(a)
    ]
    if len(set(groups)) != len(groups):
        # as torch.cond checks when it compiles itself
        raise RuntimeError(
            f"fxinplace.functionalize: operands of torch.ops.higher_order.{name} share memory; "
            "higher-order ops do not support aliasing (pass a clone() instead)"
        )
    args, kwargs = tree_map(
        lambda a: (
            _functionalized_subgraph(name, a, reapply_views)
            if callable(a) and not isinstance(a, torch.Tensor)
            else _unwrap(a, reapply_views)
        ),
        (args, kwargs),
    )
    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(_KEY)):
        out = op(*args, **kwargs)
    return tree_map(lambda o: kernels.wrap(o) if isinstance(o, torch.Tensor) else o, out)


def _reject_higher_order_op(name: str, *args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(
        f"fxinplace.functionalize: the higher-order op torch.ops.higher_order.{name} is not supported "
        f"(supported: {', '.join(_SUBGRAPH_HIGHER_ORDER_OPS)})"
    )


def _register_higher_order_ops() -> None:
    """Gives every higher-order op defined so far a kernel on our dispatch key."""
    for name, op in list(torch._ops._higher_order_ops.items()):
        if _KEY in op.py_kernels:
            continue
        if name in _SUBGRAPH_HIGHER_ORDER_OPS:
            op.py_impl(_KEY)(functools.partial(_run_subgraph_higher_order_op, name, op))
        else:
            op.py_impl(_KEY)(functools.partial(_reject_higher_order_op, name))


# Tensor methods that read a tensor's memory directly, without the dispatcher: on a
# functional tensor (whose storage holds no data) they would read nothing, or garbage.
_HOST_READS = ("numpy", "tolist", "__array__")


def _host_read(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def read(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not kernels.is_functional(self):
            return original(self, *args, **kwargs)
        reapply = kernels.reapply_views() if kernels.region_active() else True
        value = kernels.unwrap(self, reapply)  # its current value, every write applied
        try:
            return original(value, *args, **kwargs)
        except (RuntimeError, NotImplementedError, TypeError) as e:
            raise RuntimeError(
                f"fxinplace.functionalize: Tensor.{name}() reads the values of a tensor, which this "
                f"run does not have (under tracing the values are symbolic): {e}"
            ) from e

    read._fxinplace_host_read = True  # type: ignore[attr-defined]
    return read


def _install_host_reads() -> None:
    """`numpy()`, `tolist()` and `__array__` (printing uses `tolist()`) of a functional
    tensor read its current value: the methods are wrapped once, on the first
    `functionalize` call; other tensors go straight to the original method."""
    for name in _HOST_READS:
        original = getattr(torch.Tensor, name)
        if not getattr(original, "_fxinplace_host_read", False):
            setattr(torch.Tensor, name, _host_read(name, original))


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """Returns ``func`` with mutations (and, with ``remove="mutations_and_views"``, views) removed.

    Same contract as ``torch.func.functionalize``: run it eagerly, or trace it with
    ``make_fx`` to record a functional graph.
    """
    if remove not in _REMOVE_MODES:
        raise ValueError(
            f"fxinplace.functionalize: remove must be 'mutations' or 'mutations_and_views', got {remove!r}"
        )
    reapply_views = _REMOVE_MODES[remove]

    @functools.wraps(func)
    def functionalized(*args: Any, **kwargs: Any) -> Any:
        flat_args, spec = tree_flatten((args, kwargs))
        _claim_dispatch_key()
        _check_not_nested(flat_args)
        _register_higher_order_ops()
        _install_host_reads()
        # torch.cond and other higher-order ops compile themselves with dynamo
        # when run eagerly; dynamo cannot trace functional tensors, and our
        # kernels for those ops run them eagerly anyway.
        with (
            torch.compiler.set_stance("force_eager"),
            kernels.Region(reapply_views),
            one_fake_mode_per_trace(flat_args),
            exact_storage_offsets(flat_args),
        ):
            inputs = _Inputs(flat_args, reapply_views)
            w_args, w_kwargs = tree_unflatten(inputs.wrapped, spec)
            out = func(*w_args, **w_kwargs)
            flat_out, out_spec = tree_flatten(out)
            unwrapped = [
                kernels.unwrap(o, reapply_views)
                if isinstance(o, torch.Tensor) and kernels.is_functional(o)
                else o
                for o in flat_out
            ]
            # Every new input value first, then every copy_: the write-backs form
            # the graph's epilogue, with no compute between them.
            # One write-back per tensor object: f(x, x) writes x once.
            first_index = {id(a): i for i, a in reversed(list(enumerate(flat_args)))}
            firsts = [
                (original, functional)
                for i, (original, functional) in enumerate(zip(flat_args, inputs.wrapped, strict=True))
                if isinstance(original, torch.Tensor) and first_index[id(original)] == i
            ]
            whole = storage_write_backs(firsts, reapply_views)
            # The inputs' values from before a shrinking resize, then the storage spans
            # (which hold every later write), then each input's final value.
            write_backs: list[Callable[[], None] | None] = []
            finals = []
            for original, functional in firsts:
                spanned = whole.get(storage_key(original), (None,))[0]
                early, final = _write_back(
                    original,
                    functional,
                    reapply_views,
                    storage_written=spanned is not None,
                    spanned=spanned is original,
                )
                write_backs.append(early)
                finals.append(final)
            write_backs += [write_back for _, write_back in whole.values()]
            write_backs += finals
        for write_back in write_backs:
            if write_back is not None:
                write_back()
        return tree_unflatten(unwrapped, out_spec)

    return functionalized
