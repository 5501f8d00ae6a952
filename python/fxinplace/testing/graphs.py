"""Graph builders shared by the benchmarks and the CLI.

Every builder returns ``(make_gm, sample_args)``: ``make_gm()`` gives a *fresh*
functional ATen ``GraphModule`` each call (the passes mutate what they get) and
``sample_args`` are the real tensors to run it on.

* ``chain_graph`` / ``view_mutation_graph``: synthetic graphs of any size. Tracing
  100k ops with ``make_fx`` takes minutes, so one short stretch of the program is
  traced and its nodes repeated with ``torch.fx.Graph`` (same targets, same constant
  arguments, the node names ``make_fx`` gives, and a fresh ``FakeTensor``
  ``meta['val']`` per node laid out like the traced one, as ``make_fx`` records). For
  any size the result has the same code as ``make_fx(functionalize(f))`` of the whole
  program (``trace_chain`` / ``trace_view_mutation`` trace it, for checking).
* ``gpt2_graph`` / ``llama_graph``: small ``transformers`` models with random
  weights, traced with ``make_fx(functionalize(...))``; parameters and buffers are
  graph inputs (``torch.func.functional_call``), so the graph has no ``get_attr``
  tensors and the stock pass can run on it. Sample args are
  ``(*params, *buffers, input_ids)``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch.fx import Graph, GraphModule, Node
from torch.fx.experimental.proxy_tensor import make_fx

from fxinplace.testing.models import VOCAB, tiny_gpt2, tiny_llama

__all__ = [
    "MODELS",
    "GraphBuilder",
    "build",
    "chain_graph",
    "gpt2_graph",
    "gpt2_program",
    "llama_graph",
    "llama_program",
    "matmul_chain_graph",
    "trace_chain",
    "trace_view_mutation",
    "view_mutation_graph",
]

GraphBuilder = tuple[Callable[[], GraphModule], tuple]


# Which functionalization records the graphs: torch's, or fxinplace's own.
FUNCTIONALIZERS: dict[str, Callable[..., Any]] = {"stock": torch.func.functionalize}


def _functionalizer(name: str) -> Callable[..., Any]:
    if name == "fxinplace":
        import fxinplace

        return fxinplace.functionalize
    if name not in FUNCTIONALIZERS:
        raise ValueError(f"unknown functionalize {name!r}; expected 'stock' or 'fxinplace'")
    return FUNCTIONALIZERS[name]


def _functional_trace(fn: Callable[..., Any], *args: Any, functionalize: str = "stock") -> GraphModule:
    return make_fx(_functionalizer(functionalize)(fn))(*args)


def _x44() -> torch.Tensor:
    return torch.randn(4, 4, generator=torch.Generator().manual_seed(0))


def _fresh(gm: GraphModule) -> Callable[[], GraphModule]:
    """A factory of independent copies of `gm` (its own graph, nodes and meta dicts)."""

    def make_gm() -> GraphModule:
        return copy.deepcopy(gm)

    return make_gm


def _fresh_from_graph(root: torch.nn.Module, graph: Graph) -> Callable[[], GraphModule]:
    """A factory of GraphModules over independent copies of `graph` (meta dicts copied,
    values shared, as deepcopy does); `graph` itself is never handed out."""

    def make_gm() -> GraphModule:
        new = Graph()
        new.output(new.graph_copy(graph, {}), type_expr=graph.output_node().type)
        return GraphModule(root, new)

    return make_gm


# --------------------------------------------------------------------------- synthetic


def _chain_fn(n_ops: int) -> Callable[[torch.Tensor], torch.Tensor]:
    def f(x: torch.Tensor) -> torch.Tensor:
        y = x
        for i in range(n_ops):
            k = i % 3
            if k == 0:
                y = y + 1
            elif k == 1:
                y = y * 2
            else:
                y = torch.relu(y)
        return y

    return f


def _view_mutation_fn(n_iters: int) -> Callable[[torch.Tensor], torch.Tensor]:
    def f(x: torch.Tensor) -> torch.Tensor:
        y = x.clone()
        for i in range(n_iters):
            y = y * 2
            y[i % 4].add_(1)
        return y

    return f


def _matmul_chain_fn(n_iters: int) -> Callable[[torch.Tensor], torch.Tensor]:
    def f(x: torch.Tensor) -> torch.Tensor:
        y = x
        for _ in range(n_iters):
            y = torch.tanh(torch.mm(y, y.t()))
        return y

    return f


def trace_chain(n_ops: int) -> GraphBuilder:
    """The chain graph traced op by op with make_fx (slow for big sizes; for reference)."""
    x = _x44()
    return _fresh(_functional_trace(_chain_fn(n_ops), x)), (x,)


def trace_view_mutation(n_iters: int) -> GraphBuilder:
    """The view-mutation graph traced with make_fx (slow for big sizes; for reference)."""
    x = _x44()
    return _fresh(_functional_trace(_view_mutation_fn(n_iters), x)), (x,)


def _fake_like(val: Any, elem: torch.Tensor) -> Any:
    """A new FakeTensor of `val`'s mode and device around the meta tensor `elem`.

    Going through the FakeTensorMode dispatcher costs ~300us an op; wrapping a meta
    tensor directly costs ~50us, which keeps a 100k-node graph buildable in seconds.
    """
    from torch._subclasses.fake_tensor import FakeTensor

    return FakeTensor(val.fake_mode, elem, val.device)


def _replicate(template: GraphModule, prologue: int, period: int, repeats: int, extra: int = 0) -> Graph:
    """Build a graph: `template`'s first `prologue` nodes (placeholders included), then
    its next `period` nodes repeated `repeats` times, then the first `extra` nodes of
    the period once more, then an output node returning the last value computed.

    Within a period, arguments that are nodes of that period map to their copies in
    the current repeat, and the node the period reads from before it (the previous
    period's result) maps to the current chain value. Each copied node gets its own
    FakeTensor in meta['val'], laid out like the template node's.
    """
    nodes = list(template.graph.nodes)
    head, body = nodes[:prologue], nodes[prologue : prologue + period]
    body_set = set(body)
    carried_in = {a for n in body for a in n.all_input_nodes if a not in body_set}
    assert len(carried_in) == 1, "a period must read exactly one earlier node"
    carried_in_node = carried_in.pop()
    # A period's (or a prefix's) result: its last node that anything uses.
    live = [n for n in body if n.users]

    graph = Graph()
    env: dict[Node, Node] = {}
    for n in head:
        env[n] = graph.node_copy(n, lambda a: env[a])
    current = env[carried_in_node]
    for r in range(repeats + (1 if extra else 0)):
        part = body if r < repeats else body[:extra]
        local: dict[Node, Node] = {carried_in_node: current}
        for n in part:
            args = torch.fx.node.map_arg(n.args, local.__getitem__)
            kwargs = torch.fx.node.map_arg(n.kwargs, local.__getitem__)
            local[n] = _copy_node(graph, n, args, kwargs)
        current = local[[n for n in live if n in local][-1]]
    graph.output(current, type_expr=nodes[-1].type)
    graph.lint()
    return graph


def _new_val(template: Node) -> Any:
    """A fresh FakeTensor laid out like `template`'s meta['val'] (same sizes, strides,
    offset and storage size). make_fx(functionalize(f)) records a fresh, unaliased
    fake value for every node, views included, and so does this."""
    val = template.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return val
    numel = val.untyped_storage().nbytes() // val.element_size()
    elem = torch.empty(numel, dtype=val.dtype, device="meta").as_strided(
        val.shape, val.stride(), val.storage_offset()
    )
    return _fake_like(val, elem)


def _copy_node(graph: Graph, template: Node, args: tuple, kwargs: dict) -> Node:
    # Named after the op, as make_fx names its nodes: add, add_1, ...
    name = template.target.overloadpacket.__name__ if hasattr(template.target, "overloadpacket") else None
    new = graph.create_node(template.op, template.target, args, kwargs, name=name)
    new.meta = dict(template.meta)
    new.meta["val"] = _new_val(template)
    return new


def chain_graph(n_nodes: int) -> GraphBuilder:
    """~n_nodes nodes: x -> add -> mul -> relu -> add -> ... on a 4x4 tensor."""
    n_ops = max(n_nodes - 2, 1)
    period = 3
    if n_ops <= 4 * period:
        return trace_chain(n_ops)
    x = _x44()
    template = _functional_trace(_chain_fn(2 * period), x)
    repeats, extra = divmod(n_ops, period)
    graph = _replicate(template, prologue=1, period=period, repeats=repeats, extra=extra)
    return _fresh_from_graph(template, graph), (x,)


def view_mutation_graph(n_nodes: int) -> GraphBuilder:
    """~n_nodes nodes: `y = x.clone(); for i: y = y * 2; y[i % 4].add_(1)`, functionalized
    (mul, select, add, select_scatter and the dead select functionalization re-emits)."""
    per_iter = 5
    n_iters = max((n_nodes - 3) // per_iter, 1)
    if n_iters <= 8:
        return trace_view_mutation(n_iters)
    x = _x44()
    # One period is four iterations: i % 4 cycles through the rows.
    template = _functional_trace(_view_mutation_fn(8), x)
    repeats, extra = divmod(n_iters, 4)
    graph = _replicate(template, prologue=2, period=4 * per_iter, repeats=repeats, extra=extra * per_iter)
    return _fresh_from_graph(template, graph), (x,)


def matmul_chain_graph(n_nodes: int) -> GraphBuilder:
    """~n_nodes nodes: `y = tanh(mm(y, y.t()))` repeated. Re-inplacing writes tanh into mm's
    result, but every mm allocates: the graph on which a memory plan has work at every step
    (each mm can take the buffer of the mm two steps back)."""
    per_iter = 3  # t, mm, tanh
    n_iters = max((n_nodes - 2) // per_iter, 1)
    x = _x44()
    if n_iters <= 4:
        return _fresh(_functional_trace(_matmul_chain_fn(n_iters), x)), (x,)
    template = _functional_trace(_matmul_chain_fn(2), x)
    graph = _replicate(template, prologue=1, period=per_iter, repeats=n_iters)
    return _fresh_from_graph(template, graph), (x,)


# --------------------------------------------------------------------------- models


def _model_graph(
    model: torch.nn.Module, input_ids: torch.Tensor, *, training_step: bool, functionalize: str = "stock"
) -> tuple[Callable[[], GraphModule], tuple, Callable[..., Any]]:
    """(fresh copies of the graph, sample args, the eager program it was traced from)."""
    model.eval()
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    names = list(state)
    n_params = len(dict(model.named_parameters()))
    kwargs = {"use_cache": False, "return_dict": False}

    def logits_of(tensors: tuple[torch.Tensor, ...], ids: torch.Tensor) -> torch.Tensor:
        # An explicit all-ones mask: without one, transformers inspects position_ids for
        # packed sequences, a data-dependent branch make_fx cannot trace.
        call_kwargs = {**kwargs, "attention_mask": torch.ones_like(ids)}
        out = torch.func.functional_call(model, dict(zip(names, tensors, strict=True)), (ids,), call_kwargs)
        return out[0]

    if training_step:

        def loss(params: tuple[torch.Tensor, ...], buffers: tuple[torch.Tensor, ...], ids):
            logits = logits_of(params + buffers, ids)
            return torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1)
            )

        grad_fn = torch.func.grad_and_value(loss)

        def fn(*flat: torch.Tensor):
            params, buffers, ids = flat[:n_params], flat[n_params:-1], flat[-1]
            grads, value = grad_fn(tuple(params), tuple(buffers), ids)
            return (value, *grads)

    else:

        def fn(*flat: torch.Tensor):
            return logits_of(tuple(flat[:-1]), flat[-1])

    sample_args = tuple(t.detach().clone() for t in state.values()) + (input_ids,)
    with torch.no_grad() if not training_step else _nullcontext():
        gm = _functional_trace(fn, *sample_args, functionalize=functionalize)
    return _fresh(gm), sample_args, fn


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _input_ids(vocab_size: int, seq_len: int = 16) -> torch.Tensor:
    return torch.randint(0, vocab_size, (1, seq_len), generator=torch.Generator().manual_seed(0))


def gpt2_graph(**kwargs: Any) -> GraphBuilder:
    """GPT-2 (2 layers, 64 wide, 4 heads, vocab 128) with random weights; input_ids (1, seq_len)."""
    make_gm, args, _ = gpt2_program(**kwargs)
    return make_gm, args


def llama_graph(**kwargs: Any) -> GraphBuilder:
    """Llama (2 layers, 64 wide, 4 heads / 2 KV heads, vocab 128) with random weights."""
    make_gm, args, _ = llama_program(**kwargs)
    return make_gm, args


def _tiny_program(
    tiny: Callable[[], torch.nn.Module], with_training_step: bool, seq_len: int, functionalize: str
) -> tuple[Callable[[], GraphModule], tuple, Callable[..., Any]]:
    torch.manual_seed(0)
    model = tiny()
    return _model_graph(
        model,
        _input_ids(VOCAB, seq_len),
        training_step=with_training_step,
        functionalize=functionalize,
    )


def gpt2_program(
    *, with_training_step: bool = False, seq_len: int = 16, functionalize: str = "stock"
) -> tuple[Callable[[], GraphModule], tuple, Callable[..., Any]]:
    """gpt2_graph, and the eager program it was traced from."""
    return _tiny_program(tiny_gpt2, with_training_step, seq_len, functionalize)


def llama_program(
    *, with_training_step: bool = False, seq_len: int = 16, functionalize: str = "stock"
) -> tuple[Callable[[], GraphModule], tuple, Callable[..., Any]]:
    """llama_graph, and the eager program it was traced from."""
    return _tiny_program(tiny_llama, with_training_step, seq_len, functionalize)


MODELS: dict[str, Callable[..., GraphBuilder]] = {"gpt2": gpt2_graph, "llama": llama_graph}
PROGRAMS: dict[str, Callable[..., tuple]] = {"gpt2": gpt2_program, "llama": llama_program}


def build(
    kind: str, n_nodes: int | None = None, *, with_training_step: bool = False, functionalize: str = "stock"
) -> GraphBuilder:
    """One entry point: kind is 'chain', 'view', 'gpt2' or 'llama'.

    ``functionalize="fxinplace"`` records the model graphs with fxinplace.functionalize
    (inference graphs only: the training step differentiates inside the traced
    function, which fxinplace.functionalize does not support).
    """
    if functionalize != "stock" and (kind not in MODELS or with_training_step):
        raise ValueError("functionalize='fxinplace' is available for the gpt2/llama inference graphs")
    if kind == "chain":
        return chain_graph(n_nodes or 1000)
    if kind in ("view", "view_mutation"):
        return view_mutation_graph(n_nodes or 1000)
    if kind in MODELS:
        return MODELS[kind](with_training_step=with_training_step, functionalize=functionalize)
    raise ValueError(f"unknown graph kind {kind!r}; expected chain, view, gpt2 or llama")
