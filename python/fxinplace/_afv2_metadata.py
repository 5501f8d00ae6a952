"""What an auto_functionalized_v2 node returns, for `_metadata.propagate`, without
running its custom op: fresh tensors like the recorded outputs, and each base's new
value, which is the base itself when it is not cloned (the node writes it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.fx import GraphModule, Node

from fxinplace._afv2_node import AFV2
from fxinplace._metadata import _NeedsFake, _static_value, _vals_describe
from fxinplace._torch_compat import has_out_semantics


def _like(t: torch.Tensor, device: Any) -> torch.Tensor:
    """Fresh memory laid out like `t` (offset included, as clone_preserve_strides does)."""
    needed = 1 + t.storage_offset() + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True))
    if any(s == 0 for s in t.shape):
        needed = t.storage_offset()
    buffer = torch.empty(needed, dtype=t.dtype, device=device)
    return buffer.as_strided(t.shape, t.stride(), t.storage_offset())


class _MetadataStandIn:
    """Takes an AFv2 node's place while `_metadata.propagate` runs.

    Returns the op's outputs as fresh tensors shaped like the recorded
    `meta['val']` (when the recorded values describe the sample args), and each
    base's new value as a fresh tensor laid out like the base, or the base itself
    when it is not cloned. Otherwise runs the real operator (its meta/fake kernel).
    """

    def __init__(self, node: Node, trust_val: bool) -> None:
        self.node = node
        self.trust_val = trust_val
        self.__name__ = "auto_functionalized_v2"

    def __call__(self, mutable_op: Any, /, **kwargs: Any) -> Any:
        from torch._higher_order_ops.auto_functionalize import auto_functionalized_v2_dense

        fake_mode = torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
        bases = list(kwargs.get("_all_bases") or [])
        only = kwargs.get("_only_clone_these_bases")
        val = self.node.meta.get("val")
        if (
            self.trust_val
            and isinstance(val, (tuple, list))
            and len(val) >= len(bases)
            and _static_value(val)
            and not has_out_semantics(mutable_op)
        ):
            n_outs = len(val) - len(bases)
            outs = [
                _like(v, "meta" if fake_mode is None else v.device) if isinstance(v, torch.Tensor) else v
                for v in val[:n_outs]
            ]
            new_bases = [
                b if b is None or (only is not None and i not in only) else _like(b, b.device)
                for i, b in enumerate(bases)
            ]
            return (*outs, *new_bases)
        try:
            # The dense implementation, not the operator: under FakeTensorMode the
            # operator's fake rule passes _only_clone_these_bases twice (torch 2.13).
            return auto_functionalized_v2_dense(mutable_op, **kwargs)
        except Exception as e:
            if fake_mode is None:
                raise _NeedsFake from e
            raise


def metadata_runners(gm: GraphModule, sample_args: tuple) -> dict[Node, Callable[..., Any]]:
    """What computes each AFv2 node's metadata (see _MetadataStandIn), for ``_metadata.propagate``."""
    nodes = gm.graph.find_nodes(op="call_function", target=AFV2)
    if not nodes:
        return {}
    trust = _vals_describe(gm, sample_args)
    return {node: _MetadataStandIn(node, trust) for node in nodes}
