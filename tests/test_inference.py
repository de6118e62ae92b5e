"""Backends and batching: the tiny seeded LM, the MiniLM zero-shot classifier, the batcher."""

import json
import sys

import polars as pl
import pytest
import torch

from inference.base import CallResult, ModelCall
from inference.batcher import plan_batches, run_calls
from inference.causal_lm import CausalLM
from inference.classifier import ZeroShotClassifier
from inference.miss_runner import BatchLimits, answer_misses
from inference.tiny_lm import build_random_lm

PREFIX = "You are a support assistant.\nQuestion: "


@pytest.fixture(scope="module")
def tiny_lm():
    return CausalLM.from_settings({"tiny_seed": 7, "max_new_tokens": 8})


def test_tiny_lm_is_deterministic_for_a_seed(tiny_lm):
    again = CausalLM.from_settings({"tiny_seed": 7, "max_new_tokens": 8})
    other = CausalLM.from_settings({"tiny_seed": 8, "max_new_tokens": 8})
    ids = torch.tensor([[5, 6, 7, 8]])
    with torch.inference_mode():
        assert torch.equal(tiny_lm.model(ids).logits, again.model(ids).logits)
        assert not torch.allclose(tiny_lm.model(ids).logits, other.model(ids).logits)


def test_batched_greedy_generation_matches_one_at_a_time(tiny_lm):
    calls = [ModelCall(PREFIX, text) for text in ("hi", "how do I reset my password?", "ok")]
    batched = tiny_lm.run_batch(calls)
    alone = [tiny_lm.run_batch([call])[0] for call in calls]
    assert [r.answer for r in batched] == [r.answer for r in alone]
    assert all(r.answer["completion_tokens"] <= 8 for r in batched)


def test_max_new_tokens_param_limits_the_answer(tiny_lm):
    short = tiny_lm.run_batch([ModelCall(PREFIX, "hello", {"max_new_tokens": 2})])[0]
    assert short.answer["completion_tokens"] <= 2


def test_prompt_over_the_context_is_an_error_for_that_call_only(tiny_lm):
    results = tiny_lm.run_batch([ModelCall("", "x" * 5000), ModelCall("", "fine")])
    assert results[0].answer is None and "over the model's context" in results[0].error
    assert results[1].answer is not None


@pytest.mark.slow
def test_zero_shot_classifier_picks_the_obvious_label(minilm):
    classifier = ZeroShotClassifier(minilm, "This request is about {}.")
    labels = ["billing", "shipping", "account access"]
    results = classifier.run_batch(
        [
            ModelCall("", "I was charged twice on my credit card", {"labels": labels}),
            ModelCall("", "Where is my parcel? It has not arrived", {"labels": labels}),
            ModelCall("", "no labels here", {}),
        ]
    )
    assert results[0].answer["label"] == "billing"
    assert results[1].answer["label"] == "shipping"
    assert sum(results[0].answer["scores"].values()) == pytest.approx(1.0, abs=1e-4)
    assert results[2].answer is None and "no candidate labels" in results[2].error


def test_bfloat16_embeddings_are_unit_vectors_close_to_float32_ones(minilm):
    """The semantic cache embeds in bfloat16 where the CPU computes it natively: its
    vectors must stay unit length and within 0.9999 cosine of the float32 ones, far
    below any threshold step, so entries embedded either way compare alike."""
    import numpy as np

    from inference.embedder import SentenceEmbedder
    from storage.config import load_settings

    texts = ["How do I reset my password?", "cancel my subscription", "180 c to f", "x" * 900]
    half = SentenceEmbedder(load_settings().embedding_model("all-MiniLM-L6-v2").model_folder(), "bfloat16")
    exact, fast = minilm(texts), half(texts)
    assert (minilm.dtype, half.dtype) == ("float32", "bfloat16")
    assert not np.array_equal(exact, fast)  # the arithmetic really differs
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    assert (exact * fast).sum(axis=1).min() > 0.9999


def test_batches_respect_the_token_budget_and_group_prefixes():
    counts = [10, 50, 10, 50, 10, 30]
    prefixes = ["b", "a", "b", "a", "a", "b"]
    batches = plan_batches(counts, prefixes, max_batch_tokens=100, max_batch_size=8)
    for batch in batches:
        assert max(counts[i] for i in batch) * len(batch) <= 100
    assert sorted(i for b in batches for i in b) == list(range(6))
    # Ordered by prefix: all of prefix "a" come before any of prefix "b".
    order = [prefixes[i] for b in batches for i in b]
    assert order == sorted(order)


def test_an_oversized_call_still_gets_a_batch_of_its_own():
    assert plan_batches([500, 10], ["", ""], max_batch_tokens=100) == [[1], [0]]


class FlakyBackend:
    """A stand-in backend: out-of-memory cannot be provoked on this CPU-only machine,
    so this raises torch.OutOfMemoryError for batches above a size, like a full device."""

    def __init__(self, fits: int) -> None:
        self.fits = fits
        self.batch_sizes: list[int] = []

    def token_count(self, call):
        return 10

    def run_batch(self, calls):
        self.batch_sizes.append(len(calls))
        if len(calls) > self.fits:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return [
            CallResult(None, "refused") if c.input == "poison" else CallResult({"echo": c.input})
            for c in calls
        ]


def test_out_of_memory_halves_the_batch_and_retries():
    backend = FlakyBackend(fits=2)
    results = run_calls(backend, [ModelCall("", str(i)) for i in range(8)], max_batch_size=8)
    assert [r.result.answer["echo"] for r in results] == [str(i) for i in range(8)]
    assert backend.batch_sizes[0] == 8 and max(backend.batch_sizes[1:]) <= 4
    assert all(r.device_seconds >= 0 for r in results)
    # Numbered by the runs that answered (four of two), not by the one batch planned.
    assert [r.batch_index for r in results] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_retries_after_out_of_memory_run_outside_the_failed_attempts_exception():
    """While an except clause runs, its traceback keeps the failed attempt's frames (and on a
    device their tensors) alive: a retry from inside it ran beside the memory that failed."""

    class RecordsHandling(FlakyBackend):
        handling: list[bool] = []

        def run_batch(self, calls):
            self.handling.append(sys.exc_info()[0] is not None)
            return super().run_batch(calls)

    backend = RecordsHandling(fits=1)
    results = run_calls(backend, [ModelCall("", str(i)) for i in range(4)], max_batch_size=4)
    assert [r.result.answer["echo"] for r in results] == ["0", "1", "2", "3"]
    assert backend.batch_sizes == [4, 2, 1, 1, 2, 1, 1]
    assert backend.handling == [False] * 7


def test_every_attempt_s_device_time_is_charged_and_a_refused_call_costs_nothing(monkeypatch):
    """A stepped clock: each attempt takes one second a call it holds. The attempts that ran
    out of memory are device time too (before, only the successful ones were counted), and
    a call the backend refused without computing it takes no share of its batch."""
    import inference.batcher

    clock = [0.0]
    monkeypatch.setattr(inference.batcher, "_clock", lambda: clock[0])

    class Timed(FlakyBackend):
        def run_batch(self, calls):
            clock[0] += len(calls)
            return super().run_batch(calls)

    backend = Timed(fits=2)
    calls = [ModelCall("", str(i)) for i in range(3)] + [ModelCall("", "poison")]
    results = run_calls(backend, calls, max_batch_size=4)
    assert backend.batch_sizes == [4, 2, 2]
    assert sum(r.device_seconds for r in results) == pytest.approx(clock[0]) == 8.0
    # The refused call pays its share of the failed attempt of 4 (1 s), none of the batch of 2
    # it was refused in; the call beside it pays that whole batch (2 s) and 1 s of the 4.
    assert [r.device_seconds for r in results] == pytest.approx([2.0, 2.0, 3.0, 1.0])
    assert results[3].result.error == "refused"


def test_a_batch_is_priced_by_its_longest_prompt_plus_its_longest_generation():
    # Each call fits the budget of 1,000 alone and by its own total (prompt + generation),
    # but together every row is padded to 600 prompt tokens and generates 390: 1,980.
    assert plan_batches([610, 400], ["", ""], max_batch_tokens=1000, generation_tokens=[10, 390]) == [
        [0],
        [1],
    ]
    # Without generation lengths the whole count reads as prompt, as before.
    assert plan_batches([610, 400], ["", ""], max_batch_tokens=1300) == [[1, 0]]
    # Calls asking for the same generation length batch together first.
    order = plan_batches([20, 20, 20, 20], ["", "", "", ""], generation_tokens=[5, 9, 5, 9])
    assert order == [[0, 2, 1, 3]]


def test_rows_that_fit_the_context_alone_are_answered_as_alone_when_batched_together(tiny_lm):
    """A long prompt with a short answer beside a short prompt with a long answer: padded to
    one generation they would run past the tiny model's context of 1,024 positions."""
    calls = [
        ModelCall("", "a" * 600, {"max_new_tokens": 2}),
        ModelCall("", "how do I reset my password", {"max_new_tokens": 480}),
    ]
    assert all(tiny_lm.token_count(c) <= tiny_lm.context_tokens for c in calls)
    assert sum(tiny_lm.token_count(c) for c in calls) > tiny_lm.context_tokens
    lengths = []
    generate = tiny_lm.model.generate

    def recording_generate(**kwargs):
        out = generate(**kwargs)
        lengths.append(out.shape[1])
        return out

    tiny_lm.model.generate = recording_generate
    try:
        together = tiny_lm.run_batch(calls)
        alone = [tiny_lm.run_batch([c])[0] for c in calls]
    finally:
        del tiny_lm.model.generate
    assert together == alone and all(r.answer is not None for r in together)
    assert max(lengths) <= tiny_lm.context_tokens


def test_calls_of_one_prefix_prefill_it_once_and_answer_as_alone():
    """The prefix KV cache: the shared prefix is computed once for the batch, each call's
    own tokens after it, and every answer is the one the call gets alone (seed 8 answers
    these inputs five different ways, so an answer taken from the wrong row would show)."""
    lm = CausalLM.from_settings({"tiny_seed": 8, "max_new_tokens": 6})
    inputs = ["how do I reset my password", "cancel my order please", "where is my parcel", "hi"]
    calls = [ModelCall(PREFIX, text) for text in inputs] + [ModelCall("", "no prefix at all")]
    positions = []

    kept_logits = []

    def count_positions(module, args, kwargs):
        positions.append(kwargs["input_ids"].numel())
        kept_logits.append(kwargs.get("logits_to_keep"))

    alone = [lm.run_batch([call])[0] for call in calls]
    assert len({r.answer["text"] for r in alone}) >= 4
    hook = lm.model.register_forward_pre_hook(count_positions, with_kwargs=True)
    try:
        together = lm.run_batch(calls)
    finally:
        hook.remove()
    assert together == alone
    prompt_tokens = [lm.token_count(call) - 6 for call in calls]
    shared = len(lm.tokenizer(PREFIX)["input_ids"]) - 1  # the prefix's bytes (no end token)
    assert lm.prefix_tokens_reused == shared * 3
    # Prefill of the prefix once, then of the 4 rows' own tokens (padded to the longest),
    # then one position a row for each further token; the row without a prefix apart.
    # Left-padded without the cache, the 4 rows' prefill is 4 x their longest prompt.
    own = max(prompt_tokens[:4]) - shared
    assert positions[:2] == [shared, 4 * own]
    assert kept_logits[0] == 1  # the prefix's prefill keeps its cache, not every place's logits
    assert shared + 4 * own < 4 * max(prompt_tokens[:4])


def test_a_batch_that_fails_part_way_counts_its_shared_prefix_once_it_runs_whole():
    """Two lengths asked for, two generations: the second runs out of memory, and the batch is
    run again (by the batcher, in halves). The first generation's reuse is not counted twice."""
    lm = CausalLM.from_settings({"tiny_seed": 8, "max_new_tokens": 6})
    calls = [ModelCall(PREFIX, text, {"max_new_tokens": 2}) for text in ["reset my password", "cancel"]]
    calls += [ModelCall(PREFIX, "hi", {"max_new_tokens": 3})]
    generate = lm.model.generate

    def out_of_memory_for_three(**kwargs):
        if kwargs["max_new_tokens"] == 3:
            raise torch.OutOfMemoryError("out of memory (simulated)")
        return generate(**kwargs)

    lm.model.generate = out_of_memory_for_three
    try:
        with pytest.raises(torch.OutOfMemoryError):
            lm.run_batch(calls)
    finally:
        del lm.model.generate
    assert lm.prefix_tokens_reused == 0
    lm.run_batch(calls)
    assert lm.prefix_tokens_reused == len(lm.tokenizer(PREFIX)["input_ids"]) - 1  # two calls, one reuse


def _tiny_gpt2(seed: int):
    """A random GPT-2: learned absolute positions, unlike Llama's rotary ones."""
    from transformers import GPT2Config, GPT2LMHeadModel

    model, tokenizer = build_random_lm(
        GPT2LMHeadModel, GPT2Config, seed, n_embd=64, n_layer=2, n_head=4, n_positions=1024
    )
    return CausalLM(model, tokenizer, 4)


@pytest.mark.parametrize("kind", ["llama", "gpt2"])
def test_with_the_prefix_cache_every_step_s_logits_are_the_calls_own_alone(kind):
    """Stronger than equal answers: the scores of every generated token, with the prefix's
    cache shared by the batch and the call's own tokens after a gap of padding, equal the
    call's own run alone (rotary and learned positions alike)."""
    lm = CausalLM.from_settings({"tiny_seed": 8, "max_new_tokens": 4}) if kind == "llama" else _tiny_gpt2(3)
    calls = [ModelCall(PREFIX, text) for text in ["reset my password", "cancel my order please", "hi"]]
    scores = []
    generate = lm.model.generate

    def generate_keeping_scores(**kwargs):
        # Every step generated (a random model may end a row at once), in both runs alike.
        kwargs["min_new_tokens"] = kwargs["max_new_tokens"]
        out = generate(**kwargs, output_scores=True, return_dict_in_generate=True)
        scores.append(torch.stack(out.scores, dim=1))
        return out.sequences

    lm.model.generate = generate_keeping_scores
    try:
        lm.run_batch(calls)
        for call in calls:
            lm.run_batch([call])
    finally:
        del lm.model.generate
    assert lm.prefix_tokens_reused > 0  # the first run shared the prefix
    together, alone = scores[0], torch.cat(scores[1:])
    assert together.shape == alone.shape == (3, 4, len(lm.tokenizer))
    torch.testing.assert_close(together, alone, rtol=0, atol=1e-5)


def test_a_sliding_window_model_or_one_naming_its_cache_kind_left_pads_instead():
    """A sliding window counts sequence places, so padding after the shared tokens would cut
    a row's window short (a review: 15 of 24 rows differed with a window of 24); a model
    whose generation config names a cache kind refuses one passed to it, and every batch
    then ran its calls one by one. Both keep to left padding, the batch whole."""
    from transformers import MistralConfig, MistralForCausalLM

    model, tokenizer = build_random_lm(
        MistralForCausalLM,
        MistralConfig,
        0,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        sliding_window=24,
    )
    windowed = CausalLM(model, tokenizer, 6)
    own_cache = CausalLM.from_settings({"tiny_seed": 8, "max_new_tokens": 6})
    own_cache.model.generation_config.cache_implementation = "static"
    calls = [
        ModelCall(PREFIX, text) for text in ["how do I reset my password please", "cancel my order", "hi"]
    ]
    for lm in (windowed, own_cache):
        sizes = []
        generate = lm.model.generate

        def counting_generate(sizes=sizes, generate=generate, **kwargs):
            sizes.append(kwargs["input_ids"].shape[0])
            return generate(**kwargs)

        lm.model.generate = counting_generate
        try:
            together = [r.result for r in run_calls(lm, calls)]
        finally:
            del lm.model.generate
        assert sizes == [3] and lm.prefix_tokens_reused == 0
        assert together == [lm.run_batch([call])[0] for call in calls]


def test_a_call_the_model_refuses_stays_out_of_every_batch_and_its_attempts(monkeypatch):
    """A call over the model's context never runs: it joins no batch, so it neither counts in
    the token budget nor takes (by its many tokens) most of an attempt that runs out of memory."""
    import inference.batcher

    clock = [0.0]
    monkeypatch.setattr(inference.batcher, "_clock", lambda: clock[0])

    class RefusesLong(FlakyBackend):
        def token_count(self, call):
            return 5000 if call.input == "long" else 10

        def refusal(self, call):
            return "over the context" if call.input == "long" else None

        def run_batch(self, calls):
            clock[0] += len(calls)
            return super().run_batch(calls)

    backend = RefusesLong(fits=1)
    results = run_calls(backend, [ModelCall("", t) for t in ["long", "a", "b"]], max_batch_tokens=100)
    assert backend.batch_sizes == [2, 1, 1]
    assert (results[0].result.error, results[0].device_seconds, results[0].batch_index) == (
        "over the context",
        0,
        -1,
    )
    assert [r.device_seconds for r in results[1:]] == pytest.approx([2.0, 2.0])


def test_a_call_whose_generation_length_cannot_be_read_shifts_no_other_calls_count(monkeypatch):
    import inference.batcher

    clock = [0.0]
    monkeypatch.setattr(inference.batcher, "_clock", lambda: clock[0])

    class Counts(FlakyBackend):
        def token_count(self, call):
            return {"a": 100, "bad": 50, "c": 2, "d": 1}[call.input]

        def generation_tokens(self, call):
            if call.input == "bad":
                raise ValueError("no max_new_tokens")
            return 0

        def run_batch(self, calls):
            clock[0] += 103.0
            return super().run_batch(calls)

    results = run_calls(Counts(fits=8), [ModelCall("", t) for t in ["a", "bad", "c", "d"]])
    assert results[1].result.error == "tokenization failed: no max_new_tokens"
    # Shared by each call's own count (before, the counts after "bad" moved up a place:
    # "c" was charged as 0 tokens and "d" as "c").
    assert [r.device_seconds for r in results] == pytest.approx([100.0, 0.0, 2.0, 1.0])


def _misses(keys, inputs, model="m", params_json="{}"):
    """Requests that missed both look-ups, ids "a", "b", ... in order."""
    count = len(keys)
    return pl.DataFrame(
        {
            "request_id": [chr(ord("a") + i) for i in range(count)],
            "key": keys,
            "model": [model] * count,
            "model_version": ["1"] * count,
            "params_json": [params_json] * count,
            "prefix": [""] * count,
            "input": inputs,
        }
    )


def test_identical_keys_fold_into_one_call_and_failures_are_per_key():
    backend = FlakyBackend(fits=100)
    misses = _misses([b"k1", b"k1", b"k2", b"k3"], ["same", "same", "other", "poison"])
    out = answer_misses(misses, lambda model, version: (backend, BatchLimits()))
    assert out["path"].to_list() == ["model", "folded", "model", "failed"]
    assert out["served_key"].to_list() == [None, b"k1", None, None]
    assert json.loads(out["answer_json"][1]) == {"echo": "same"}
    assert out["device_seconds"][1] == 0.0
    assert out["error"][3] == "refused"
    assert backend.batch_sizes == [3]


def test_a_call_that_reached_no_batch_keeps_no_batch_number():
    class RefusesOneInput(FlakyBackend):
        def token_count(self, call):
            if call.input == "untokenizable":
                raise ValueError("bad input")
            return super().token_count(call)

    misses = _misses([b"k1", b"k2", b"k3"], ["fine", "fine too", "untokenizable"]).with_columns(
        model=pl.Series(["m1", "m2", "m2"])
    )
    out = answer_misses(misses, lambda model, version: (RefusesOneInput(fits=100), BatchLimits()))
    assert out["path"].to_list() == ["model", "model", "failed"]
    assert out["batch_index"].to_list() == [0, 1, -1]


def test_batches_of_different_models_are_numbered_apart():
    misses = pl.concat(
        [
            _misses([b"k1"], ["one"], model="m1"),
            _misses([b"k2"], ["two"], model="m2").with_columns(request_id=pl.lit("z")),
        ]
    )
    out = answer_misses(misses, lambda model, version: (FlakyBackend(fits=100), BatchLimits()))
    assert out["path"].to_list() == ["model", "model"]
    assert out["batch_index"].n_unique() == 2


def test_a_lookalike_whose_leader_fails_makes_its_own_call(tiny_lm):
    """The real tiny LM: the leader's input is over its context, its look-alike's is not.
    The look-alike (and its identical repeat) are answered by their own call, not failed
    with another input's error; the leader's identical repeat still fails with it."""
    long_input = "how do I reset my password " * 400
    short_input = "how do I reset my password"
    misses = _misses(
        [b"long", b"long", b"short", b"short"],
        [long_input, long_input, short_input, short_input],
        model="tiny-llm",
        params_json='{"max_new_tokens": 2}',
    )
    out = answer_misses(misses, lambda model, version: (tiny_lm, BatchLimits()), {b"short": b"long"})
    assert out["path"].to_list() == ["failed", "failed", "model", "folded"]
    assert out["served_key"].to_list() == [None, None, None, b"short"]
    assert "context" in out["error"][0] and out["error"][2] is None
    assert out["answer_json"][3] == out["answer_json"][2] is not None
    assert out["device_seconds"][2] > 0 and out["device_seconds"][3] == 0.0
    # The look-alike's own call ran in a batch after the leader's: each batch has its own number.
    assert out["batch_index"][2] > out["batch_index"][0]
    # Where the leader answers, the look-alike is still folded into it.
    fine = misses.with_columns(input=pl.col("input").str.slice(0, 30))
    folded = answer_misses(fine, lambda model, version: (tiny_lm, BatchLimits()), {b"short": b"long"})
    assert folded["path"].to_list() == ["model", "folded", "folded", "folded"]
    assert folded["served_key"].to_list() == [None, b"long", b"long", b"long"]
