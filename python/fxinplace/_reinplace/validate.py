"""What the pass accepts: the graph and the sample args are checked before anything runs,
and whatever the pass cannot handle is a ReinplaceInputError naming the node or arg."""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import GraphModule, Node

from fxinplace._reinplace.auto_functionalized.v1 import AFV1, read_v1_call
from fxinplace._reinplace.auto_functionalized.v2 import AFV2, read_call
from fxinplace._reinplace.errors import ReinplaceInputError
from fxinplace._reinplace.higher_order import check_node as check_higher_order
from fxinplace._reinplace.metadata import check_tensor_kind
from fxinplace._reinplace.op_info import op_info


def validate(gm: Any, sample_args: tuple) -> None:
    """Raise ReinplaceInputError naming the first node the pass cannot handle."""
    if not isinstance(gm, GraphModule):
        raise TypeError(f"reinplace expects a torch.fx.GraphModule, got {type(gm).__name__}")
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(sample_args):
        raise TypeError(
            f"the graph has {len(placeholders)} placeholders "
            f"({', '.join(n.name for n in placeholders)}) but {len(sample_args)} sample args were given"
        )
    for i, (node, arg) in enumerate(zip(placeholders, sample_args, strict=True)):
        _check_sample_arg(i, node, arg)
    for node in gm.graph.nodes:
        if node.op in ("call_module", "call_method"):
            raise ReinplaceInputError(
                f"node {node.name!r}: {node.op} nodes are not supported; trace to ATen ops "
                "first (make_fx(functionalize(f)))"
            )
        if node.op != "call_function":
            continue
        target = node.target
        if isinstance(target, torch._ops.HigherOrderOperator):
            if target is AFV2:
                read_call(node)  # raises on a malformed node
                continue
            if target is AFV1:
                read_v1_call(node)
                continue
            check_higher_order(node)  # an opaque reader (see higher_order)
            continue
        if isinstance(target, torch._ops.OpOverloadPacket):
            raise ReinplaceInputError(
                f"node {node.name!r}: target {target} is an overload packet; "
                "the pass needs a concrete overload such as torch.ops.aten.add.Tensor"
            )
        if isinstance(target, torch._ops.OpOverload):
            if op_info(target).mutates and not is_input_write_back(node):
                raise ReinplaceInputError(
                    f"node {node.name!r}: {target} mutates its arguments; the pass expects a "
                    "functional graph (the only mutations allowed are functionalization's write-backs "
                    "into graph inputs: copy_, resize_ and as_strided_)"
                )
            continue
        if target is operator.getitem:
            continue


# Functionalization writes a mutated input back with copy_, after giving it its
# new size or layout with resize_ / as_strided_ when the program changed those.
_METADATA_WRITE_BACKS = (torch.ops.aten.resize_.default, torch.ops.aten.as_strided_.default)


def _check_sample_arg(i: int, node: Node, arg: Any) -> None:
    """A sample arg must be what the graph was traced with: a tensor of the
    recorded dtype, rank and (where the trace fixed them) sizes. Planning on
    another would produce a graph that fails or is wrong on the real inputs."""
    if isinstance(arg, torch.Tensor):
        check_tensor_kind(arg, f"sample arg {i}")
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        if isinstance(arg, torch.Tensor) and isinstance(val, (int, float, bool, torch.SymInt)):
            raise ReinplaceInputError(
                f"sample arg {i} (placeholder {node.name!r}) is a tensor, but the graph was traced "
                f"with the {type(val).__name__} {val}"
            )
        return
    where = f"sample arg {i} (placeholder {node.name!r})"
    if not isinstance(arg, torch.Tensor):
        raise ReinplaceInputError(
            f"{where} is {type(arg).__name__} {arg!r}, but the graph was traced with a tensor of "
            f"shape {tuple(val.shape)} and dtype {val.dtype}"
        )
    problems = []
    if arg.dtype != val.dtype:
        problems.append(f"dtype {arg.dtype} instead of {val.dtype}")
    # (A meta tensor carries every fact the pass reads: geometry, dtype, storage sharing.)
    if arg.device.type != val.device.type and arg.device.type != "meta":
        problems.append(f"device {arg.device} instead of {val.device}")
    if arg.dim() != val.dim():
        problems.append(f"{arg.dim()} dims instead of {val.dim()}")
    else:
        fixed = [
            (d, want, got)
            for d, (want, got) in enumerate(zip(val.shape, arg.shape, strict=True))
            if type(want) is int and type(got) is int and want != got
        ]
        problems.extend(f"size {got} instead of {want} at dim {d}" for d, want, got in fixed)
    if problems:
        raise ReinplaceInputError(
            f"{where} does not match the value the graph was traced with: " + "; ".join(problems)
        )


def is_input_write_back(node: Node) -> bool:
    """copy_ / resize_ / as_strided_ into a graph input, as functionalization writes it back."""
    dst = node.args[0] if node.args else None
    if not isinstance(dst, Node):
        return False
    if node.target not in _METADATA_WRITE_BACKS and node.target is not torch.ops.aten.copy_.default:
        return False
    # resize_ then as_strided_ (an out= argument resized, then laid out as the kernel's result);
    # copy_ into the value a copy_ returned, the input itself (torch.func.functionalize writes
    # back an input passed twice, f(a, a), that way: copy_(copy_(x1, v0), v1)).
    return dst.op == "placeholder" or (
        (dst.target in _METADATA_WRITE_BACKS or dst.target is torch.ops.aten.copy_.default)
        and is_input_write_back(dst)
    )


def written_input(node: Node) -> Node:
    """The placeholder an input write-back (`is_input_write_back`) writes."""
    dst = node.args[0]
    while dst.op != "placeholder":
        dst = dst.args[0]
    return dst
