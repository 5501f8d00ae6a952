"""The pipelines a user has for the reinplace regression tests, and the eager check they share:
``torch.func.functionalize`` -> reinplace, the same after dead-code elimination, and
``fxinplace.functionalize`` -> reinplace."""

from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import fxinplace


def torch_func_trace(fn, args):
    return make_fx(torch.func.functionalize(fn))(*args)


def torch_func_dce_trace(fn, args):
    gm = torch_func_trace(fn, args)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def fxinplace_trace(fn, args):
    return make_fx(fxinplace.functionalize(fn))(*args)


PIPELINES = {
    "torch_func": torch_func_trace,
    "torch_func_dce": torch_func_dce_trace,
    "fxinplace": fxinplace_trace,
}


def clone_args(args):
    # A copy of each tensor's whole storage, viewed as the tensor is: clone() would drop a
    # sliced input's storage offset and gaps, which decide what as_strided reads. Arguments
    # sharing a storage share its copy, so inputs that alias each other still do.
    copies: dict[int, torch.UntypedStorage] = {}

    def copy(a):
        if not isinstance(a, torch.Tensor):
            return a
        original = a.untyped_storage()
        key = original.data_ptr() if original.nbytes() else id(a)  # empty storages share no memory
        if key not in copies:
            copies[key] = original.clone()
        storage = copies[key]
        return torch.empty(0, dtype=a.dtype).set_(storage, a.storage_offset(), a.size(), a.stride())

    return [copy(a) for a in args]


def assert_same_as_eager(fn, args, pipeline):
    want_args = clone_args(args)
    want = fn(*want_args)
    gm = PIPELINES[pipeline](fn, clone_args(args))
    fxinplace.reinplace(gm, *clone_args(args), check=True)
    got_args = clone_args(args)
    got = gm(*got_args)
    want, got = torch.utils._pytree.tree_leaves(want), torch.utils._pytree.tree_leaves(got)
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert torch.equal(w, g), f"{pipeline}: output {g} != eager {w}\n{gm.code}"
    for w, g in zip(want_args, got_args, strict=True):
        assert torch.equal(w, g), f"{pipeline}: input after the call {g} != eager {w}\n{gm.code}"
