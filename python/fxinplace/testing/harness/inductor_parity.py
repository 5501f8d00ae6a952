"""Compile a program with stock Inductor or with `fxinplace.inductor` installed, and measure
what the re-inplacing slot did: the same program, the same graphs at the slot, one pass or
the other. Used by the parity tests and `benchmarks/bench_inductor.py`.

Each run uses a fresh Inductor cache (a cached graph would skip the slot) and counts:
- `writes`: buffers the pass saved, counted the same way for both passes on the graph it
  got and the graph it left (`in_place_writes`);
- `kernels`: Inductor's generated kernel count;
- `pass_seconds`: time spent in the slot.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.fx import Graph, Node

from fxinplace.testing.harness.compile_programs import program

_aten = torch.ops.aten


@dataclass
class SlotRecord:
    nodes: int
    writes: int
    seconds: float
    # With `shadow_stock=True`: Inductor's own pass run on a copy of the same graph.
    stock_writes: int | None = None
    stock_seconds: float | None = None
    same_as_stock: bool | None = None  # both passes left the same code


@dataclass
class InductorRun:
    steps: list[dict[str, torch.Tensor]]
    kernels: int
    slots: list[SlotRecord] = field(default_factory=list)

    @property
    def writes(self) -> int:
        return sum(s.writes for s in self.slots)

    @property
    def pass_seconds(self) -> float:
        return sum(s.seconds for s in self.slots)


def _is_epilogue_copy(node: Node) -> bool:
    return (
        node.target is _aten.copy_.default
        and isinstance(node.args[0], Node)
        and node.args[0].op in ("placeholder", "get_attr")
    )


def _root(node: Any) -> Any:
    from torch.fx.passes.reinplace import _is_view_op

    while isinstance(node, Node) and node.op == "call_function" and _is_view_op(node.target) and node.args:
        node = node.args[0]
    return node


def _af_bases_not_cloned(node: Node) -> int:
    only = node.meta.get("only_clone_these_tensors")
    if only is None:
        return 0
    if node.target is torch.ops.higher_order.auto_functionalized_v2:
        return len(node.kwargs["_all_bases"]) - len(only)
    from torch._higher_order_ops.auto_functionalize import get_mutable_args

    names, _ = get_mutable_args(node.args[0])
    return len([n for n in names if node.kwargs.get(n) is not None]) - len(only)


def in_place_writes(graph: Graph) -> tuple[int, int]:
    """(writes into existing buffers, epilogue copies) of a post-grad graph: a mutating
    op whose written buffer is not a fresh clone (`index_put_`, `view.copy_(src)`,
    `_foreach_*_` per list element, `all_reduce_`), and each auto_functionalized base
    left uncloned. A pass's rewrites: its graph's writes minus the input's, plus the
    epilogue copies it removed."""
    writes = epilogue = 0
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if _is_epilogue_copy(node):
            epilogue += 1
            continue
        if node.target in (
            torch.ops.higher_order.auto_functionalized,
            torch.ops.higher_order.auto_functionalized_v2,
        ):
            writes += _af_bases_not_cloned(node)
            continue
        schema = getattr(node.target, "_schema", None)
        if schema is None or not schema.is_mutable:
            continue
        written = node.args[0] if node.args else None
        if isinstance(written, (list, tuple)):
            writes += len(written)
        elif getattr(_root(written), "target", None) is not _aten.clone.default:
            writes += 1
    return writes, epilogue


def _timed(slot_pass: Callable[..., None], fake_tensor_updater: Any, graph: Graph) -> tuple[int, float]:
    """(rewrites, seconds) of one pass on `graph`."""
    writes_before, epilogue_before = in_place_writes(graph)
    start = time.perf_counter()
    slot_pass(fake_tensor_updater, graph)
    seconds = time.perf_counter() - start
    writes_after, epilogue_after = in_place_writes(graph)
    return writes_after - writes_before + epilogue_before - epilogue_after, seconds


def _code(gm: torch.fx.GraphModule) -> str:
    return gm.graph.python_code(root_module="self").src


def _measuring(
    slot_pass: Callable[..., None], records: list[SlotRecord], shadow_stock: bool, capture: list | None
) -> Callable[..., None]:
    def measured(fake_tensor_updater: Any, graph: Graph) -> None:
        if capture is not None:
            from torch._inductor.virtualized import V

            capture.append(SlotGraph(_copy_module(graph.owning_module), V.fake_mode))
        record = SlotRecord(len(graph.nodes), 0, 0.0)
        if shadow_stock:
            from torch._inductor.fx_passes.reinplace import reinplace_inplaceable_ops
            from torch._inductor.fx_utils import FakeTensorUpdater

            shadow = _copy_module(graph.owning_module)
            record.stock_writes, record.stock_seconds = _timed(
                reinplace_inplaceable_ops, FakeTensorUpdater(shadow), shadow.graph
            )
        record.writes, record.seconds = _timed(slot_pass, fake_tensor_updater, graph)
        if shadow_stock:
            record.same_as_stock = _code(shadow) == _code(graph.owning_module)
        records.append(record)

    return measured


@contextlib.contextmanager
def _slot_measured(
    records: list[SlotRecord], shadow_stock: bool = False, capture: list | None = None
) -> Iterator[None]:
    from torch._inductor.fx_passes import post_grad

    current = post_grad.reinplace_inplaceable_ops
    post_grad.reinplace_inplaceable_ops = _measuring(current, records, shadow_stock, capture)
    try:
        yield
    finally:
        post_grad.reinplace_inplaceable_ops = current


def compile_and_run(
    target: Callable[..., Any],
    run: Callable[[Callable[..., Any]], list[dict[str, torch.Tensor]]],
    *,
    hook: bool,
    dynamic: bool | None = None,
    shadow_stock: bool = False,
    fresh: bool = True,
    check: bool = False,
    capture: list | None = None,
) -> InductorRun:
    """`run(compiled)` with `torch.compile(target, dynamic=dynamic)`, stock Inductor or
    with fxinplace's pass in the slot. fresh: in a fresh cache, so that every graph is
    compiled (otherwise the caller's cache must not hold these graphs: a hit skips the
    slot). shadow_stock: also run Inductor's own pass on a copy of each graph at the slot.
    check: the hook proves every rewrite with `fxinplace.check_reinplaced`. capture: a
    list that gets a `SlotGraph` copy of each graph as it reaches the slot."""
    from torch._inductor import metrics
    from torch._inductor.utils import fresh_cache

    import fxinplace.inductor

    records: list[SlotRecord] = []
    torch._dynamo.reset()
    metrics.reset()
    installed = fxinplace.inductor.installed(check=check) if hook else contextlib.nullcontext()
    cache = fresh_cache() if fresh else contextlib.nullcontext()
    with cache, installed, _slot_measured(records, shadow_stock, capture):
        steps = run(torch.compile(target, dynamic=dynamic))
    kernels = metrics.generated_kernel_count
    torch._dynamo.reset()
    return InductorRun(steps, kernels, records)


def run_program(name: str, *, hook: bool, steps: int = 2, **options: Any) -> InductorRun:
    """A program of `fxinplace.testing.harness.compile_programs`, `steps` steps; options as
    `compile_and_run`'s."""
    setup = program(name).setup()
    return compile_and_run(
        setup.target, lambda fn: [setup.step(fn) for _ in range(steps)], hook=hook, **options
    )


def eager_steps(name: str, steps: int = 2) -> list[dict[str, torch.Tensor]]:
    setup = program(name).setup()
    return [setup.step(setup.target) for _ in range(steps)]


__all__ = [
    "InductorRun",
    "SlotGraph",
    "SlotRecord",
    "capture_slot_graphs",
    "compile_and_run",
    "eager_steps",
    "in_place_writes",
    "run_native_pass",
    "run_program",
    "run_stock_pass",
    "updater",
]


@dataclass
class SlotGraph:
    """A graph as it reached Inductor's re-inplacing slot (a copy: nodes and meta dicts
    are new, the FakeTensor values in them shared), and the fake mode it was traced in."""

    gm: torch.fx.GraphModule
    fake_mode: Any

    def copy(self) -> torch.fx.GraphModule:
        return _copy_module(self.gm)


def _copy_module(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    out = graph.graph_copy(gm.graph, {})
    graph.output(out)
    return torch.fx.GraphModule(gm, graph)


def capture_slot_graphs(
    target: Callable[..., Any], run: Callable[[Callable[..., Any]], Any]
) -> list[SlotGraph]:
    """Every graph that reaches the slot while `run(torch.compile(target))` compiles with
    stock Inductor (which then runs its own pass on the original)."""
    captured: list[SlotGraph] = []
    compile_and_run(target, run, hook=False, capture=captured)
    return captured


def updater(gm: torch.fx.GraphModule) -> Any:
    """The FakeTensorUpdater post_grad hands the slot (made before the passes run)."""
    from torch._inductor.fx_utils import FakeTensorUpdater

    return FakeTensorUpdater(gm)


def run_stock_pass(graph: SlotGraph, gm: torch.fx.GraphModule, fake_tensor_updater: Any = None) -> None:
    """Inductor's own pass on `gm` (a copy of `graph`'s), as post_grad runs it."""
    from torch._inductor.fx_passes.reinplace import reinplace_inplaceable_ops
    from torch._inductor.virtualized import V

    with V.set_fake_mode(graph.fake_mode):
        reinplace_inplaceable_ops(fake_tensor_updater or updater(gm), gm.graph)


def run_native_pass(graph: SlotGraph, gm: torch.fx.GraphModule, fake_tensor_updater: Any = None) -> None:
    """fxinplace's pass in the slot, on `gm` (a copy of `graph`'s)."""
    from torch._inductor.virtualized import V

    from fxinplace.inductor import reinplace_for_inductor

    with V.set_fake_mode(graph.fake_mode):
        reinplace_for_inductor(fake_tensor_updater or updater(gm), gm.graph)
