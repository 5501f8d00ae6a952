"""Bytes a graph holds at each of its nodes, measured by running it.

``live_bytes(gm, args)`` runs the graph node by node (``torch.fx.Interpreter``, which drops
each value after its last use, as the generated code does) and records, at each node, the
bytes of every storage the graph itself allocated that a live value still holds, the node's
own result included: what an allocator must hold while that node runs. Storages of the
inputs are the caller's and are not counted. Storages are told apart by identity, so a
view, an in-place op's result or an `out=` result adds nothing; a new storage is one
allocation. (Every result the graph allocates is kept to the end of the run so that no
two storages share an identity: measure small graphs.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import GraphModule, Interpreter, Node
from torch.utils._pytree import tree_leaves

__all__ = ["Timeline", "live_bytes"]


@dataclass(frozen=True)
class Timeline:
    names: list[str]  # the graph's call nodes, in order
    live: list[int]  # bytes held while each runs
    allocated_bytes: int  # every new storage's size, summed
    allocations: int
    result: Any  # what the graph returned

    @property
    def peak(self) -> int:
        return max(self.live, default=0)


def _storages(value: Any) -> dict[int, int]:
    found = {}
    for leaf in tree_leaves(value):
        if isinstance(leaf, torch.Tensor) and leaf.layout == torch.strided and not leaf.is_meta:
            storage = leaf.untyped_storage()
            found[storage._cdata] = storage.nbytes()
    return found


class _Recorder(Interpreter):
    def __init__(self, gm: GraphModule, inputs: dict[int, int]) -> None:
        super().__init__(gm)
        self.inputs = inputs
        self.seen: set[int] = set(inputs)
        self.names: list[str] = []
        self.live: list[int] = []
        self.allocated = 0
        self.allocations = 0
        # Every storage seen is kept: a storage freed and another allocated at the same
        # address would otherwise look like the first one.
        self.kept: list[Any] = []

    def run_node(self, n: Node) -> Any:
        result = super().run_node(n)
        if n.op in ("placeholder", "output"):
            return result
        held: dict[int, int] = {}
        for node, value in self.env.items():
            # The Interpreter drops a value after its last use but never one that has no
            # use (an in-place op's result, say); the generated code drops it at once.
            if node.users:
                held.update(_storages(value))
        held.update(_storages(result))
        for key, nbytes in _storages(result).items():
            if key not in self.seen:
                self.seen.add(key)
                self.kept.append(result)
                self.allocated += nbytes
                self.allocations += 1
        self.names.append(n.name)
        self.live.append(sum(b for k, b in held.items() if k not in self.inputs))
        return result


def live_bytes(gm: GraphModule, args: tuple) -> Timeline:
    """Run ``gm(*args)`` and measure the bytes it holds at each node (see the module's text)."""
    recorder = _Recorder(gm, _storages(list(args)))
    result = recorder.run(*args)
    return Timeline(recorder.names, recorder.live, recorder.allocated, recorder.allocations, result)
