"""A tiny seeded random-weight causal LM with a tokenizer that needs no files.

It stands in for a real local model in the demo and the tests: same code path,
same batching, deterministic outputs for a given seed, no downloads.
"""

from __future__ import annotations

import torch
from transformers import ByT5Tokenizer, LlamaConfig, LlamaForCausalLM

TINY_CONTEXT_TOKENS = 1024


def build_tiny_lm(seed: int) -> tuple[LlamaForCausalLM, ByT5Tokenizer]:
    tokenizer = ByT5Tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=TINY_CONTEXT_TOKENS,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config).eval()
    finally:
        torch.random.set_rng_state(generator_state)
    return model, tokenizer
