"""Where `python -m fxinplace bench/explain` get a graph: a built-in one, a saved
`torch.export` program (`.pt2`), or a user's `module:function` with example-input shapes.

Each is a `GraphSource`: fresh copies of the functional graph, its sample args, and
(when there is one) an eager reference to hold the re-inplaced graph's results to.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.fx import GraphModule
from torch.fx.experimental.proxy_tensor import make_fx

from fxinplace.testing import graphs

# (graph outputs, inputs after the call); an entry None is not compared.
EagerReference = tuple[list[Any], list[Any] | None]


@dataclass
class GraphSource:
    name: str
    make_gm: Callable[[], GraphModule]
    args: tuple
    # Runs the original program on fresh copies of the args; None: no eager program
    # (a synthetic graph).
    eager: Callable[[], EagerReference] | None = None
    details: dict[str, str] = field(default_factory=dict)


def builtin(kind: str, nodes: int | None, *, train: bool, functionalize: str) -> GraphSource:
    if kind in graphs.PROGRAMS:
        make_gm, args, fn = graphs.PROGRAMS[kind](with_training_step=train, functionalize=functionalize)
        name = f"{kind}{' (training step)' if train else ''}"
        details = {"model": f"{kind}, 2 layers, 64 wide, random weights", "functionalize": functionalize}
        return GraphSource(name, make_gm, args, _eager_of(fn, args), details)
    make_gm, args = graphs.build(kind, nodes)
    return GraphSource(f"{kind} ({nodes or 1000} nodes)", make_gm, args, None, {"synthetic": kind})


def from_exported(path: str) -> GraphSource:
    """A `torch.export.save`d program: its functional core-ATen graph with lifted
    parameters, buffers and constants as placeholders, and its example inputs."""
    program = torch.export.load(path).run_decompositions({})
    signature = program.graph_signature
    user_inputs = list(torch.utils._pytree.tree_leaves(program.example_inputs))
    if not user_inputs and any(s.kind.name == "USER_INPUT" for s in signature.input_specs):
        raise ValueError(f"{path}: the saved program has no example inputs to run it on")
    args: list[Any] = []
    for spec in signature.input_specs:
        if spec.kind.name == "USER_INPUT":
            args.append(user_inputs.pop(0))
        elif spec.target in program.state_dict:
            args.append(program.state_dict[spec.target])
        else:
            args.append(program.constants[spec.target])
    template = program.graph_module

    def make_gm() -> GraphModule:
        return GraphModule(template, _copy_graph(template))

    user_outputs = [spec.kind.name == "USER_OUTPUT" for spec in signature.output_specs]

    def eager() -> EagerReference:
        module = torch.export.load(path).module()
        out = torch.utils._pytree.tree_leaves(module(*program.example_inputs[0], **program.example_inputs[1]))
        it = iter(out)
        return [next(it) if user else None for user in user_outputs], None

    return GraphSource(Path(path).name, make_gm, tuple(args), eager, {"file": path})


def from_function(spec: str, inputs: str) -> GraphSource:
    """`package.module:function`, traced with make_fx(torch.func.functionalize(f)) on
    random inputs of the given shapes, e.g. inputs="4x4,8:int64,3x3:float16"."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"{spec!r}: expected package.module:function")
    fn = getattr(importlib.import_module(module_name), attr)
    args = tuple(parse_inputs(inputs))
    gm = make_fx(torch.func.functionalize(fn))(*fresh_args(args))

    def make_gm() -> GraphModule:
        return GraphModule(gm, _copy_graph(gm))

    return GraphSource(spec, make_gm, args, _eager_of(fn, args), {"function": spec, "inputs": inputs})


_INPUT = re.compile(r"^(\d+(?:x\d+)*|scalar)(?::(\w+))?$")


def parse_inputs(text: str) -> list[torch.Tensor]:
    """'4x4,8:int64,scalar:float64' -> random tensors of those shapes and dtypes (float32 by
    default; integers are 0 or 1, as inputs used as indices must stay in range)."""
    tensors = []
    gen = torch.Generator().manual_seed(0)
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _INPUT.match(item)
        if not match:
            raise ValueError(f"input {item!r}: expected sizes like 4x4 (or 'scalar'), optionally :dtype")
        shape = () if match.group(1) == "scalar" else tuple(int(s) for s in match.group(1).split("x"))
        dtype = getattr(torch, match.group(2) or "float32", None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"input {item!r}: {match.group(2)!r} is not a torch dtype")
        if dtype.is_floating_point or dtype.is_complex:
            tensors.append(torch.randn(shape, generator=gen).to(dtype))
        elif dtype == torch.bool:
            tensors.append(torch.randint(0, 2, shape, generator=gen).bool())
        else:
            # Small (0 or 1): integer inputs are often indices or counts.
            tensors.append(torch.randint(0, 2, shape, generator=gen).to(dtype))
    return tensors


def fresh_args(args: tuple) -> list[Any]:
    """Clones of the tensor args (the rest as they are): a run that mutates nothing shared."""
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def _eager_of(fn: Callable[..., Any], args: tuple) -> Callable[[], EagerReference]:
    def eager() -> EagerReference:
        fresh = fresh_args(args)
        out = torch.utils._pytree.tree_leaves(fn(*fresh))
        return out, fresh

    return eager


def _copy_graph(gm: GraphModule) -> torch.fx.Graph:
    import copy

    return copy.deepcopy(gm.graph)
