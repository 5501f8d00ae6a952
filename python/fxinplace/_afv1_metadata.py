"""What an auto_functionalized (v1) node returns, for `_metadata.propagate`, without
running its custom op: fresh tensors like the recorded outputs, and each written
argument's new value: a fresh tensor laid out like the argument (as
`clone_preserve_strides` makes it), or the argument itself when it is not cloned."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.fx import GraphModule, Node

from fxinplace._afv1_node import AFV1
from fxinplace._afv2_metadata import _like
from fxinplace._metadata import _NeedsFake, _static_value, _vals_describe


class _MetadataStandIn:
    """Takes an auto_functionalized node's place while `_metadata.propagate` runs.

    With recorded values that describe the sample args, the op's outputs are fresh
    tensors shaped like `meta['val']`; otherwise (and for ops whose outputs alias
    their arguments) torch's own dense implementation runs on the meta or fake
    values, which reaches the op's meta or fake kernel only.
    """

    def __init__(self, node: Node, trust_val: bool) -> None:
        self.node = node
        self.trust_val = trust_val
        self.__name__ = "auto_functionalized"

    def __call__(self, mutable_op: Any, /, **kwargs: Any) -> Any:
        from torch._higher_order_ops.auto_functionalize import auto_functionalized_dense, get_mutable_args

        fake_mode = torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
        names, _ = get_mutable_args(mutable_op)
        only = kwargs.get("_only_clone_these_tensors")
        val = self.node.meta.get("val")
        aliased = any(r.alias_info is not None for r in mutable_op._schema.returns)
        if (
            self.trust_val
            and not aliased
            and isinstance(val, (tuple, list))
            and len(val) >= len(names)
            and _static_value(val)
        ):
            n_outs = len(val) - len(names)
            outs = [
                _like(v, "meta" if fake_mode is None else v.device) if isinstance(v, torch.Tensor) else v
                for v in val[:n_outs]
            ]
            new = [
                kwargs[name] if only is not None and name not in only else _new_value(kwargs[name])
                for name in names
            ]
            return (*outs, *new)
        try:
            return auto_functionalized_dense(mutable_op, **kwargs)
        except Exception as e:
            if fake_mode is None:
                raise _NeedsFake from e
            raise


def _new_value(arg: Any) -> Any:
    if isinstance(arg, torch.Tensor):
        return _like(arg, arg.device)
    if isinstance(arg, (list, tuple)):
        return [_new_value(a) for a in arg]
    return arg


def metadata_runners(gm: GraphModule, sample_args: tuple) -> dict[Node, Callable[..., Any]]:
    """What computes each auto_functionalized node's metadata (see _MetadataStandIn)."""
    nodes = gm.graph.find_nodes(op="call_function", target=AFV1)
    if not nodes:
        return {}
    trust = _vals_describe(gm, sample_args)
    return {node: _MetadataStandIn(node, trust) for node in nodes}
