"""The checker's graph inputs: the storages of the sample args and module constants,
copied afresh for each run (real or fake; see `_Inputs`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.fx import GraphModule

from fxinplace._checker.refs import _CannotCheck, _is_cuda, _leaves


class _Inputs:
    """The storages of the sample args and module constants: numbered the same
    in both graphs, copied afresh for each run.

    Real sample args: each run works on clones of their storages, for real.
    Fake ones (FakeTensors, with sizes that may be symbolic): each run works
    on fresh fake tensors of the same sizes (symbolic ones at their hints),
    strides, offsets and storage sharing, in a fake mode of the checker's own
    without symbolic shapes, so that every size the recorder sees is concrete.
    The checker needs nothing else of the args: tags stand for their values.
    """

    def __init__(self, gm: GraphModule, sample_args: tuple, donated_inputs: tuple[int, ...] = ()) -> None:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(sample_args):
            raise _CannotCheck(
                f"the graph has {len(placeholders)} placeholders but {len(sample_args)} sample args"
            )
        self.sample_args = sample_args
        self.names: list[list[str]] = []
        self.rows: list[list] = []  # [nbytes, itemsize, constant, donated]
        self.by_storage: dict[int, int] = {}
        self.by_attr: dict[str, int] = {}
        self.fake_mode: Any = None
        if any(_is_fake(a) for a in sample_args):
            from torch._subclasses.fake_tensor import FakeTensorMode

            # Real tensors met in a fake run (module constants, a higher-order
            # op's captured tensors) are faked on the way.
            self.fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        # Each placeholder's (storage offset, sizes, strides), concrete.
        self.layouts: list[tuple[int, list[int], list[int]] | None] = []
        for k in donated_inputs:
            if not 0 <= k < len(sample_args) or not isinstance(sample_args[k], torch.Tensor):
                raise ValueError(f"check_reinplaced: donated input {k} is not a tensor input of the graph")
        for index, (node, arg) in enumerate(zip(placeholders, sample_args, strict=True)):
            if isinstance(arg, torch.Tensor):
                what = f"sample arg {node.name}"
                if arg.layout != torch.strided:
                    raise _CannotCheck(f"{what} has layout {arg.layout} (only strided tensors are modelled)")
                self.layouts.append(
                    (
                        _concrete(arg.storage_offset(), what),
                        [_concrete(v, what) for v in arg.shape],
                        [_concrete(v, what) for v in arg.stride()],
                    )
                )
                found = self._add(node.name, arg, arg.untyped_storage()._cdata, False)
                self.rows[found][3] = index in donated_inputs
            else:
                self.layouts.append(None)
                if isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                    _concrete(arg, f"sample arg {node.name}")

        for found, names in enumerate(self.names):  # donated only where no other input shares it
            if len(names) != 1:
                self.rows[found][3] = False

    def _add(self, name: str, t: torch.Tensor, key: Any, constant: bool) -> int:
        table = self.by_attr if constant else self.by_storage
        found = table.get(key)
        if found is None:
            found = table[key] = len(self.rows)
            nbytes = _concrete(t.untyped_storage().nbytes(), f"the storage of {name}")
            self.rows.append([nbytes, t.element_size(), constant, False])
            self.names.append([])
        if name not in self.names[found]:
            self.names[found].append(name)
        return found

    def constant(self, target: str, t: torch.Tensor) -> int:
        return self._add(target, t, target, True)

    def table(self) -> list[tuple]:
        return [("/".join(n), *row) for n, row in zip(self.names, self.rows, strict=True)]

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Where a graph runs: in the checker's fake mode for fake args; for real
        ones, on a fixed random seed (both graphs draw the same numbers)."""
        if self.fake_mode is not None:
            with self.fake_mode, torch.no_grad():
                yield
            return
        devices = sorted({a.device.index or 0 for a in _leaves(self.sample_args) if _is_cuda(a)})
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(0)
            yield

    def fresh_storage(self, t: torch.Tensor, nbytes: int) -> Any:
        """A storage for a run's copy of `t`'s: its clone, or a fake one of `nbytes` (in `running`)."""
        if self.fake_mode is None:
            return t.untyped_storage().clone()
        return torch.empty(nbytes, dtype=torch.uint8, device=t.device).untyped_storage()

    def copies(self) -> list[Any]:
        """Fresh copies of the sample args, sharing storage as the originals do (in `running`)."""
        storages: dict[int, Any] = {}
        out = []
        for arg, layout in zip(self.sample_args, self.layouts, strict=True):
            if isinstance(arg, torch.Tensor):
                key = arg.untyped_storage()._cdata
                if key not in storages:
                    storages[key] = self.fresh_storage(arg, self.rows[self.by_storage[key]][0])
                out.append(_on_storage(arg, storages[key], layout))
            elif isinstance(arg, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                out.append(_concrete(arg, "a sample arg"))
            else:
                out.append(arg)
        return out


def _is_fake(v: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(v, FakeTensor)


def _concrete(v: Any, what: str) -> Any:
    """A size, stride or scalar as a plain number: a symbolic one at its hint."""
    if not isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return v
    hint = v.node.hint
    if hint is None:
        raise _CannotCheck(
            f"{what} has a symbolic size or value with no hint ({v}; data-dependent): "
            "the checker runs the graphs at concrete sizes"
        )
    return hint


def _beyond_fake(e: Exception) -> bool:
    """Whether a fake run raised for want of values or of a fake kernel, not
    because the graph is wrong: a data-dependent output or shape, an op with no
    fake implementation."""
    from torch._subclasses import fake_tensor
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    kinds = (
        fake_tensor.DataDependentOutputException,
        fake_tensor.DynamicOutputShapeException,
        fake_tensor.UnsupportedOperatorException,
        fake_tensor.UnsupportedFakeTensorException,
        GuardOnDataDependentSymNode,
    )
    return isinstance(e, kinds)


def _on_storage(t: torch.Tensor, storage: Any, layout: tuple | None = None) -> torch.Tensor:
    offset, sizes, strides = layout or (t.storage_offset(), t.shape, t.stride())
    fresh = torch.empty(0, dtype=t.dtype, device=t.device)
    return fresh.set_(storage, offset, sizes, strides)
