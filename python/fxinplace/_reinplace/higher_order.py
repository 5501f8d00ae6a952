"""Higher-order ops (torch.cond, while_loop, map, scan, invoke_subgraph, ...) in a graph to re-inplace.

The pass does not look inside their subgraphs: a higher-order op node is an
opaque reader of every tensor it is given, returning fresh tensors, as the stock
pass treats it. Nothing is re-inplaced into an operand while the node still
needs it, and the node itself is never rewritten.

Fresh outputs are an assumption the recorded values can check: torch forbids
these ops' outputs to alias their inputs, and a graph whose recorded output
shares storage with an operand is refused rather than planned on a wrong
alias picture. A few HOPs are refused (see _REFUSED); auto_functionalized and
auto_functionalized_v2 have their own handling (auto_functionalized/).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.fx import GraphModule, Node

from fxinplace._reinplace.errors import ReinplaceInputError

# Higher-order ops the pass refuses, and why. Treating this one as an opaque
# reader would be wrong: it writes into its operands.
_REFUSED = {
    "triton_kernel_wrapper_mutation": "mutates its operands; the pass expects a functional graph",
}
# Higher-order ops modelled on their own, not as opaque readers.
_MODELLED = ("auto_functionalized", "auto_functionalized_v2")


def is_opaque_higher_order(target: Any) -> bool:
    return (
        isinstance(target, torch._ops.HigherOrderOperator)
        and target.name() not in _REFUSED
        and target.name() not in _MODELLED
    )


def check_node(node: Node) -> None:
    """Raise ReinplaceInputError for a higher-order op the pass cannot treat as opaque."""
    name = node.target.name()
    if name in _REFUSED:
        raise ReinplaceInputError(f"node {node.name!r}: higher-order op {name} {_REFUSED[name]}")
    outputs = _tensor_storages(node.meta.get("val"))
    inputs = set()
    for arg in node.all_input_nodes:
        inputs |= _tensor_storages(arg.meta.get("val"))
    if outputs & inputs:
        raise ReinplaceInputError(
            f"node {node.name!r}: higher-order op {name} returns a tensor that shares memory with "
            "one of its operands; the pass treats these ops as returning fresh tensors"
        )


def _tensor_storages(value: Any) -> set[int]:
    if isinstance(value, torch.Tensor):
        return {value.untyped_storage()._cdata}
    if isinstance(value, (list, tuple)):
        found: set[int] = set()
        for v in value:
            found |= _tensor_storages(v)
        return found
    return set()


def _rng_state() -> torch.Tensor:
    # A fresh tensor standing for a generator state: only that it is fresh
    # memory matters to the pass (its consumer, run_with_rng_state, is opaque).
    return torch.empty(torch.get_rng_state().shape, dtype=torch.uint8, device="meta")


# What an opaque higher-order op returns, for those AOTAutograd records without a
# `meta["val"]`: its RNG functionalization (activation checkpointing around dropout or
# scaled_dot_product_attention) wraps the random op, which runs here on the propagated
# values as any ATen op does. The ops themselves cannot run on meta tensors.
_WITHOUT_RECORDED_VALUE: dict[str, Callable[..., Any]] = {
    "run_and_save_rng_state": lambda op, *args, **kwargs: (_rng_state(), op(*args, **kwargs)),
    "run_with_rng_state": lambda _state, op, *args, **kwargs: op(*args, **kwargs),
}


class _FreshOutputs:
    """Takes a higher-order op node's place while `metadata.propagate` runs:
    returns fresh tensors shaped like the node's recorded outputs, without
    running the subgraphs. Without a recorded value the op's rule in
    `_WITHOUT_RECORDED_VALUE` gives them, or the op itself runs."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.__name__ = node.target.name()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        val = self.node.meta.get("val")
        if val is None:
            rule = _WITHOUT_RECORDED_VALUE.get(self.__name__, self.node.target)
            return rule(*args, **kwargs)
        return _fresh_like(val)


def _fresh_like(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        if not all(type(s) is int for s in (*value.shape, *value.stride())):
            return value  # a symbolic trace's own fake value stands for itself
        # Under the fake replay a fake tensor on the value's device, else meta.
        in_fake_mode = torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE) is not None
        device = value.device if in_fake_mode else "meta"
        return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device=device)
    if isinstance(value, (list, tuple)):
        return type(value)(_fresh_like(v) for v in value)
    return value


def metadata_runners(gm: GraphModule) -> dict[Node, Callable[..., Any]]:
    """What computes each opaque higher-order op node's metadata, for `metadata.propagate`."""
    return {
        node: _FreshOutputs(node)
        for node in gm.graph.nodes
        if node.op == "call_function" and is_opaque_higher_order(node.target)
    }
