"""A tiny seeded random-weight causal LM with a tokenizer that needs no files.

It stands in for a real local model in the demo and the tests: same code path,
same batching, deterministic outputs for a given seed, no downloads.
"""

from __future__ import annotations

import torch
from transformers import ByT5Tokenizer, LlamaConfig, LlamaForCausalLM

TINY_CONTEXT_TOKENS = 1024


def build_tiny_lm(seed: int) -> tuple[LlamaForCausalLM, ByT5Tokenizer]:
    return build_random_lm(
        LlamaForCausalLM,
        LlamaConfig,
        seed,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=TINY_CONTEXT_TOKENS,
    )


def build_random_lm(model_class, config_class, seed: int, **config) -> tuple[object, ByT5Tokenizer]:
    """A random-weight model of any causal LM class from its config, on the byte tokenizer
    (the tests' other architectures and the prefix-cache benchmark build theirs here). The
    global random state is left as it was."""
    tokenizer = ByT5Tokenizer()
    settings = config_class(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **config,
    )
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = model_class(settings).eval()
    finally:
        torch.random.set_rng_state(generator_state)
    return model, tokenizer
