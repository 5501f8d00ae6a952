"""Programs users compile, for the torch.compile backend's tests and benchmark.

Each ``CompileProgram`` builds, on every ``setup()`` call, a fresh copy of the same state
(seeded weights, inputs, buffers, optimizer state), so eager and each backend start equal.
``Setup.target`` is what ``torch.compile`` wraps (a module, or ``opt.step``),
``Setup.run(fn)`` runs one step through ``fn`` (the compiled target, or the target itself
for eager), and ``Setup.observe(result)`` snapshots every tensor the step must get right,
by name (``Setup.step(fn)`` does both; memory is measured around ``run`` only): outputs,
gradients, mutated buffers (BatchNorm running stats, KV caches), parameters and
optimizer state after an optimizer step.

Small configs (2 layers, 64 wide) keep a compile within seconds on two CPU cores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from fxinplace.testing.models import tiny_bert, tiny_gpt2, tiny_llama, tiny_t5

__all__ = ["PROGRAMS", "WIDE_PROGRAMS", "CompileProgram", "Setup", "program"]


@dataclass
class Setup:
    target: Any
    run: Callable[[Callable[..., Any]], Any]
    observe: Callable[[Any], dict[str, torch.Tensor]]

    def step(self, fn: Callable[..., Any]) -> dict[str, torch.Tensor]:
        return self.observe(self.run(fn))


@dataclass(frozen=True)
class CompileProgram:
    name: str
    setup: Callable[[], Setup]
    kind: str  # "train", "infer", "optimizer" or "decode"
    # The inputs change size between two steps when compiled with dynamic=True.
    dynamic_sizes: bool = False


def _leaves(prefix: str, value: Any) -> dict[str, torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return {prefix: value.detach().clone()}  # a snapshot: later steps mutate buffers
    if isinstance(value, dict) or hasattr(value, "items"):
        out = {}
        for k, v in value.items():
            out.update(_leaves(f"{prefix}.{k}", v))
        return out
    if isinstance(value, (list, tuple)):
        out = {}
        for k, v in enumerate(value):
            out.update(_leaves(f"{prefix}.{k}", v))
        return out
    return {}


def _state_of(model: torch.nn.Module, *, grads: bool) -> dict[str, torch.Tensor]:
    out = {f"buffer.{n}": b.detach().clone() for n, b in model.named_buffers()}
    if grads:
        out.update({f"grad.{n}": p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    return out


def _model_setup(
    make_model: Callable[[], torch.nn.Module],
    make_inputs: Callable[[int], dict[str, torch.Tensor]],
    *,
    train: bool,
    loss: Callable[[Any], torch.Tensor] | None = None,
) -> Callable[[], Setup]:
    def setup() -> Setup:
        torch.manual_seed(0)
        model = make_model()
        model.train(train)
        calls = [0]

        def run(fn: Callable[..., Any]) -> Any:
            # Two sizes in turn, so that dynamic=True compiles see a second shape.
            inputs = make_inputs(calls[0])
            calls[0] += 1
            if train:
                model.zero_grad(set_to_none=True)
                out = fn(**inputs)
                value = loss(out) if loss else out
                value.backward()
                return value.detach()
            with torch.no_grad():
                return fn(**inputs)

        def observe(result: Any) -> dict[str, torch.Tensor]:
            if train:
                return {"loss": result.clone(), **_state_of(model, grads=True)}
            return {**_leaves("out", result), **_state_of(model, grads=False)}

        return Setup(model, run, observe)

    return setup


def _ids(vocab: int, call: int, batch: int = 2, seqs: tuple[int, int] = (12, 16)) -> torch.Tensor:
    seq = seqs[call % 2]
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(call))


def _gpt2_checkpointed() -> torch.nn.Module:
    """GPT-2 with activation checkpointing, as `gradient_checkpointing_enable()` trains it:
    AOTAutograd records its dropout as `run_and_save_rng_state` / `run_with_rng_state`."""
    model = tiny_gpt2()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def _lm_inputs(
    vocab: int = 128, batch: int = 2, seqs: tuple[int, int] = (12, 16)
) -> Callable[[int], dict[str, torch.Tensor]]:
    def make(call: int) -> dict[str, torch.Tensor]:
        ids = _ids(vocab, call, batch, seqs)
        return {"input_ids": ids, "labels": ids}

    return make


def _infer_inputs(vocab: int = 128) -> Callable[[int], dict[str, torch.Tensor]]:
    return lambda call: {"input_ids": _ids(vocab, call)}


def _t5_inputs(call: int) -> dict[str, torch.Tensor]:
    ids = _ids(128, call)
    return {"input_ids": ids, "labels": ids.flip(1)}


def _t5_infer_inputs(call: int) -> dict[str, torch.Tensor]:
    ids = _ids(128, call)
    return {"input_ids": ids, "decoder_input_ids": ids[:, :4]}


def _hf_loss(out: Any) -> torch.Tensor:
    return out.loss


class _ConvBN(torch.nn.Module):
    """Conv, BatchNorm (train mode: running stats are input mutations), ReLU, pooling."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + y)
        return self.head(y.mean((2, 3)))


def _image(call: int) -> dict[str, torch.Tensor]:
    size = (8, 10)[call % 2]
    return {"x": torch.randn(4, 3, size, size, generator=torch.Generator().manual_seed(call))}


class KVCacheDecoder(torch.nn.Module):
    """One attention layer decoding a token at `pos` into a static KV cache (buffers,
    updated in place with index_copy_, as static-cache decoders do)."""

    def __init__(self, dim: int = 64, heads: int = 4, max_len: int = 256, batch: int = 2) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)
        shape = (batch, heads, max_len, self.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        self.k_cache.index_copy_(2, pos, k)
        self.v_cache.index_copy_(2, pos, v)
        scores = q @ self.k_cache.transpose(-1, -2) / self.head_dim**0.5
        limit = torch.arange(self.k_cache.shape[2]) <= pos.max()
        scores = scores.masked_fill(~limit, float("-inf"))
        y = scores.softmax(-1) @ self.v_cache
        return self.out(y.transpose(1, 2).reshape(b, t, -1))


class KVViewsDecoder(KVCacheDecoder):
    """KVCacheDecoder with its two caches views of one tensor (`k = kv[0]`, `v = kv[1]`), as
    paged caches keep keys and values in one allocation: torch.compile passes the two views
    as graph inputs sharing a storage."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        kv = torch.zeros((2, *self.k_cache.shape))
        del self.k_cache, self.v_cache
        self.register_buffer("kv", kv)
        self.k_cache, self.v_cache = kv[0], kv[1]


def _decode_inputs(call: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(call)
    return {"x": torch.randn(2, 1, 64, generator=g), "pos": torch.tensor([call % 7])}


class CacheUpdate(torch.nn.Module):
    """A one-row update of a `mib`-MiB cache, the smallest KV-cache write."""

    def __init__(self, mib: int = 32) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 16, mib * 1024 // 32, 512))

    def forward(self, new: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        self.cache.index_copy_(2, pos, new)
        return self.cache[:, :, :8].sum()


def _cache_inputs(call: int) -> dict[str, torch.Tensor]:
    return {"new": torch.full((1, 16, 1, 512), float(call + 1)), "pos": torch.tensor([call % 5])}


def _adamw_setup() -> Setup:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=True)
    calls = [0]

    def run(fn: Callable[..., Any]) -> None:
        g = torch.Generator().manual_seed(calls[0])
        calls[0] += 1
        for p in model.parameters():  # gradients as a backward pass would leave them
            p.grad = torch.randn(p.shape, generator=g)
        fn()

    def observe(result: Any) -> dict[str, torch.Tensor]:
        state = {f"param.{n}": p.detach().clone() for n, p in model.named_parameters()}
        for i, p in enumerate(model.parameters()):
            state.update(_leaves(f"state.{i}", opt.state[p]))
        return state

    return Setup(opt.step, run, observe)


def program(name: str) -> CompileProgram:
    for p in (*PROGRAMS, *WIDE_PROGRAMS):
        if p.name == name:
            return p
    raise KeyError(f"no compile program {name!r}; have {[p.name for p in (*PROGRAMS, *WIDE_PROGRAMS)]}")


PROGRAMS: tuple[CompileProgram, ...] = (
    CompileProgram(
        "gpt2_train", _model_setup(tiny_gpt2, _lm_inputs(), train=True, loss=_hf_loss), "train", True
    ),
    CompileProgram("gpt2_infer", _model_setup(tiny_gpt2, _infer_inputs(), train=False), "infer", True),
    CompileProgram(
        "gpt2_checkpointed_train",
        _model_setup(_gpt2_checkpointed, _lm_inputs(), train=True, loss=_hf_loss),
        "train",
    ),
    CompileProgram(
        "llama_train", _model_setup(tiny_llama, _lm_inputs(), train=True, loss=_hf_loss), "train", True
    ),
    CompileProgram("llama_infer", _model_setup(tiny_llama, _infer_inputs(), train=False), "infer", True),
    CompileProgram(
        "bert_train", _model_setup(tiny_bert, _lm_inputs(), train=True, loss=_hf_loss), "train", True
    ),
    CompileProgram("bert_infer", _model_setup(tiny_bert, _infer_inputs(), train=False), "infer", True),
    CompileProgram("t5_train", _model_setup(tiny_t5, _t5_inputs, train=True, loss=_hf_loss), "train", True),
    CompileProgram("t5_infer", _model_setup(tiny_t5, _t5_infer_inputs, train=False), "infer", True),
    CompileProgram(
        "batchnorm_train",
        _model_setup(_ConvBN, _image, train=True, loss=lambda y: y.square().mean()),
        "train",
        True,
    ),
    CompileProgram("adamw_foreach", _adamw_setup, "optimizer"),
    CompileProgram("kv_cache_decode", _model_setup(KVCacheDecoder, _decode_inputs, train=False), "decode"),
    CompileProgram("kv_views_decode", _model_setup(KVViewsDecoder, _decode_inputs, train=False), "decode"),
    CompileProgram("cache_update_32mib", _model_setup(CacheUpdate, _cache_inputs, train=False), "decode"),
)


def _gpt2_512() -> torch.nn.Module:
    return tiny_gpt2(layers=4, positions=256, width=512, heads=8)


def _llama_512() -> torch.nn.Module:
    return tiny_llama(
        hidden_size=512,
        intermediate_size=1024,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=256,
    )


# Mid-size training steps (4 layers, 512 wide, batch 4 x 256 tokens, then 4 x 224): seconds a
# step on a CPU, so only the benchmarks run them (`bench_compile.py --programs gpt2_512_train`).
_WIDE_INPUTS = _lm_inputs(batch=4, seqs=(256, 224))
WIDE_PROGRAMS: tuple[CompileProgram, ...] = (
    CompileProgram(
        "gpt2_512_train", _model_setup(_gpt2_512, _WIDE_INPUTS, train=True, loss=_hf_loss), "train", True
    ),
    CompileProgram(
        "llama_512_train", _model_setup(_llama_512, _WIDE_INPUTS, train=True, loss=_hf_loss), "train", True
    ),
)
