"""The tiny transformers models the tests, the benchmarks and the CLI build: one home for their
configs. Each is 2 layers, 64 wide, 4 heads (GPT-2 and Llama take wider sizes), a vocabulary of `VOCAB`, eager
attention and no KV cache, with random weights (seed torch's generator first for the same ones).
Needs `transformers` (the `test` and `bench` extras)."""

from __future__ import annotations

import torch

__all__ = ["VOCAB", "tiny_bert", "tiny_gpt2", "tiny_llama", "tiny_t5"]

VOCAB = 128

# What the Llama and BERT configs say alike (their keyword arguments have the same names).
_LLAMA_BERT = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": VOCAB,
    "max_position_embeddings": 64,
    "attn_implementation": "eager",
}


def tiny_gpt2(*, layers: int = 2, positions: int = 64, width: int = 64, heads: int = 4) -> torch.nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_layer=layers,
        n_embd=width,
        n_head=heads,
        vocab_size=VOCAB,
        n_positions=positions,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="eager",
    )
    config.use_cache = False
    return GPT2LMHeadModel(config)


def tiny_llama(**wider: int) -> torch.nn.Module:
    """`wider`: any of _LLAMA_BERT's sizes, and num_key_value_heads (2)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**{**_LLAMA_BERT, "num_key_value_heads": 2, **wider})
    config.use_cache = False
    return LlamaForCausalLM(config)


def tiny_bert() -> torch.nn.Module:
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(**_LLAMA_BERT)
    return BertForMaskedLM(config)


def tiny_t5() -> torch.nn.Module:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        d_model=64,
        d_ff=128,
        d_kv=16,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        vocab_size=VOCAB,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    config.use_cache = False
    return T5ForConditionalGeneration(config)
