"""The prefix KV cache against left padding, side by side, on one batch of calls that share a
system prompt.

The tiny LM the demo runs is too small for its prefill to matter, so this builds a random
Llama from a config (nothing is downloaded) large enough that computing the prompt is most
of a call, as it is for a real model with a long system prompt. Rounds alternate the two
ways; each prints its median, and whether both gave every call the same answer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from benchmarks.common import peak_rss_mb, quiet_environment

SYSTEM_PROMPT = (
    "You are a support assistant for an online shop. Answer in one short sentence, "
    "politely, and never invent order numbers.\n"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks prefix_cache", description=__doc__)
    parser.add_argument("--calls", type=int, default=32)
    parser.add_argument("--prompt-repeats", type=int, default=4, help="copies of the system prompt")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    quiet_environment()
    from transformers import LlamaConfig, LlamaForCausalLM

    import inference.causal_lm as causal_lm
    from inference.base import ModelCall
    from inference.tiny_lm import build_random_lm

    model, tokenizer = build_random_lm(
        LlamaForCausalLM,
        LlamaConfig,
        0,
        hidden_size=args.hidden,
        intermediate_size=args.hidden * 8 // 3,
        num_hidden_layers=args.layers,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=4096,
    )
    # The same model both ways; left-padded is the prefix cache never reached.
    ways = {
        "prefix_cache": causal_lm.CausalLM(model, tokenizer, args.max_new_tokens),
        "left_padded": causal_lm.CausalLM(model, tokenizer, args.max_new_tokens, min_shared_tokens=10**9),
    }
    prefix = SYSTEM_PROMPT * args.prompt_repeats + "Question: "
    calls = [ModelCall(prefix, f"question {i} about my order {i * 7}") for i in range(args.calls)]
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    answers = {}
    for _ in range(args.rounds):
        for way, lm in ways.items():
            started = time.perf_counter()
            answers[way] = lm.run_batch(calls)
            seconds[way].append(time.perf_counter() - started)
    cached, padded = (statistics.median(seconds[w]) for w in ("prefix_cache", "left_padded"))
    report = {
        "calls": args.calls,
        "prefix_tokens": len(tokenizer(prefix)["input_ids"]) - 1,  # its bytes, without the end token
        "max_new_tokens": args.max_new_tokens,
        "model": f"random Llama, {args.layers} layers, {args.hidden} wide",
        "prefix_cache_seconds_median": cached,
        "left_padded_seconds_median": padded,
        "speedup": padded / cached,
        "same_answers": answers["prefix_cache"] == answers["left_padded"],
        "rounds": args.rounds,
        "peak_rss_mb": peak_rss_mb(),
    }
    print(json.dumps(report, indent=2) if args.json else report)
    return 0
