"""What auto_functionalized (v1) and auto_functionalized_v2 nodes share: what such a node
returns while `metadata.propagate` runs, without running its custom op (each version says in
a subclass of `MetadataStandIn` what the node writes and which dense implementation it falls
back on), and the direct call of its op that replaces it (`call_directly`)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
from torch.fx import Graph, GraphModule, Node

from fxinplace._reinplace.fx_edit import arrange, give_direct_call_its_value, like, replace_output_getitem
from fxinplace._reinplace.metadata import NeedsFake, static_value, vals_describe

__all__ = ["MetadataStandIn", "call_directly", "metadata_runners", "new_value_getitems"]


class MetadataStandIn:
    """Takes an auto_functionalized node's place while `metadata.propagate` runs.

    With recorded values that describe the sample args (and where `written_count` does not
    refuse them), the op's outputs are fresh tensors shaped like `meta['val']`, followed by
    the new values of what the node writes (`written_values`); otherwise the version's dense
    implementation (`dense`) runs on the meta or fake values, which reaches the op's meta or
    fake kernel only.
    """

    #: The higher-order op's name (the stand-in's __name__).
    op_name = ""

    def __init__(self, node: Node, trust_val: bool) -> None:
        self.node = node
        self.trust_val = trust_val
        self.__name__ = self.op_name

    def __call__(self, mutable_op: Any, /, **kwargs: Any) -> Any:
        fake_mode = torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FAKE)
        val = self.node.meta.get("val")
        written = self.written_count(mutable_op, kwargs) if self.trust_val else None
        if (
            written is not None
            and isinstance(val, (tuple, list))
            and len(val) >= written
            and static_value(val)
        ):
            outs = [
                like(v, "meta" if fake_mode is None else v.device) if isinstance(v, torch.Tensor) else v
                for v in val[: len(val) - written]
            ]
            return (*outs, *self.written_values(mutable_op, kwargs))
        try:
            return self.dense(mutable_op, kwargs)
        except Exception as e:
            if fake_mode is None:
                raise NeedsFake from e
            raise

    def written_count(self, mutable_op: Any, kwargs: dict[str, Any]) -> int | None:
        """How many new values of written arguments follow the op's outputs in the node's
        value; None where the recorded values cannot stand for the node's."""
        raise NotImplementedError

    def written_values(self, mutable_op: Any, kwargs: dict[str, Any]) -> list[Any]:
        """The new values of the written arguments, fresh (or the argument, when not cloned)."""
        raise NotImplementedError

    def dense(self, mutable_op: Any, kwargs: dict[str, Any]) -> Any:
        """What the node computes, by torch's dense implementation of it."""
        raise NotImplementedError


def metadata_runners(
    gm: GraphModule, sample_args: tuple, target: Any, stand_in: type[MetadataStandIn]
) -> dict[Node, Callable[..., Any]]:
    """A `stand_in` for each node of `gm` that calls `target`, for `metadata.propagate`."""
    nodes = gm.graph.find_nodes(op="call_function", target=target)
    if not nodes:
        return {}
    trust = vals_describe(gm, sample_args)
    return {node: stand_in(node, trust) for node in nodes}


def new_value_getitems(node: Node, call: Any, written: int) -> list[tuple[Node, int]] | None:
    """The users of `node` that read the new value of the j-th of its `written` arguments,
    each with j; None where a user is not a getitem a direct call of the op (`call.op`, with
    `call.num_outputs` outputs) could stand for: not by an int, out of range, or reading the
    None that an op without outputs returns."""
    found = []
    for user in node.users:
        if user.target is not operator.getitem or type(user.args[1]) is not int:
            return None
        k = user.args[1]
        if not 0 <= k < call.num_outputs + written:
            return None
        if k < call.num_outputs:
            if not call.op._schema.returns and user.users:
                return None  # reads the None an op without outputs returns
        else:
            found.append((user, k - call.num_outputs))
    return found


def call_directly(
    graph: Graph,
    node: Node,
    call: Any,
    values: dict[str, Any],
    replace_new_value: Callable[[Node, int], None],
    replaced: dict[Node, Any],
) -> None:
    """Replace `node`, whose users are all `getitem(node, k)` (see `new_value_getitems`), by a
    direct call of its op (`call.op`, with `call.num_outputs` outputs) on `values` (by the op's
    argument names), inserted before it: a getitem of one of the op's outputs reads the call,
    one of the new value of the j-th written argument goes to `replace_new_value(getitem, j)`."""
    with graph.inserting_before(node):
        args, kwargs = arrange(call.op, values)
        direct = graph.call_function(call.op, tuple(args), kwargs)
    give_direct_call_its_value(node, direct, call.op)
    for user in list(node.users):
        k = user.args[1]
        if k < call.num_outputs:
            replace_output_getitem(graph, user, direct, call.op, replaced)
        else:
            replace_new_value(user, k - call.num_outputs)
    graph.erase_node(node)
    replaced[node] = direct
