"""Greedy generation with a transformers causal LM, batched with left padding."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any

import torch

from inference.base import CallResult, ModelCall
from inference.tiny_lm import build_tiny_lm

DEFAULT_MAX_NEW_TOKENS = 32
# Calls of one prefix share its prefill (a prefix KV cache) where they share at least this
# many leading tokens; under it the cache's own pass costs about what it saves.
MIN_SHARED_TOKENS = 16


class CausalLM:
    def __init__(
        self, model: Any, tokenizer: Any, max_new_tokens: int, min_shared_tokens: int = MIN_SHARED_TOKENS
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_new_tokens = max_new_tokens
        self.context_tokens = int(getattr(model.config, "max_position_embeddings", 2048))
        self.min_shared_tokens = min_shared_tokens
        # Token positions not prefilled again thanks to the prefix KV cache (all batches so far).
        self.prefix_tokens_reused = 0
        # A prompt is read for its count (planning), its refusal and its generation: tokenized once.
        self._prompt_ids = functools.lru_cache(maxsize=4096)(self._tokenize)

    def _tokenize(self, prompt: str) -> tuple[int, ...]:
        return tuple(self.tokenizer(prompt)["input_ids"])

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> CausalLM:
        """`model_path` (a local folder) or `tiny_seed` (the built-in tiny model)."""
        max_new = int(settings.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS))
        if settings.get("model_path"):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            folder = Path(settings["model_path"])
            if not folder.is_dir():
                raise FileNotFoundError(
                    f"model_path {folder} is not a folder: point it at a local model folder"
                )
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
            return cls(model, tokenizer, max_new)
        if "tiny_seed" in settings:
            model, tokenizer = build_tiny_lm(int(settings["tiny_seed"]))
            return cls(model, tokenizer, max_new)
        raise ValueError("a causal_lm model needs settings.model_path or settings.tiny_seed")

    def _max_new(self, call: ModelCall) -> int:
        return int(call.params.get("max_new_tokens", self.max_new_tokens))

    def token_count(self, call: ModelCall) -> int:
        return len(self._prompt_ids(call.prefix + call.input)) + self._max_new(call)

    def generation_tokens(self, call: ModelCall) -> int:
        """The part of token_count the call generates (the batcher prices padding with it)."""
        return self._max_new(call)

    def refusal(self, call: ModelCall) -> str | None:
        """Why the model cannot run the call at all, or None: the batcher leaves such a call
        out of every batch (it would cost nothing, but take a share of a failed attempt)."""
        needed = self.token_count(call)
        if needed > self.context_tokens:
            return (
                f"prompt plus max_new_tokens is {needed} tokens, over the model's "
                f"context of {self.context_tokens}: shorten the input or lower max_new_tokens"
            )
        return None

    def run_batch(self, calls: list[ModelCall]) -> list[CallResult]:
        results: list[CallResult | None] = [None] * len(calls)
        runnable = []
        for i, call in enumerate(calls):
            refused = self.refusal(call)
            if refused is not None:
                results[i] = CallResult(None, refused)
            else:
                runnable.append(i)
        # One generation per length asked for: generate() pads every row to the longest
        # prompt and runs every row as long as the longest max_new_tokens, so rows that fit
        # the context alone could overrun it together (a long prompt beside a long answer).
        by_length: dict[int, list[int]] = {}
        for i in runnable:
            by_length.setdefault(self._max_new(calls[i]), []).append(i)
        reused = 0
        for max_new, rows in by_length.items():
            answers, reused_here = self._generate([calls[i] for i in rows], max_new)
            for i, answer in zip(rows, answers, strict=True):
                results[i] = answer
            reused += reused_here
        # Counted once the whole batch has run: a batch that fails part way is run again.
        self.prefix_tokens_reused += reused
        return results  # type: ignore[return-value]  # every slot is filled above

    def _generate(self, calls: list[ModelCall], max_new: int) -> tuple[list[CallResult], int]:
        """Greedy answers of calls that generate `max_new` tokens, the calls of one prefix
        together: their shared leading tokens are computed once (see _generate_sharing).
        Also the token positions that sharing kept from being computed again."""
        rows = [list(self._prompt_ids(call.prefix + call.input)) for call in calls]
        by_prefix: dict[str, list[int]] = {}
        for i, call in enumerate(calls):
            by_prefix.setdefault(call.prefix, []).append(i)
        answers: list[CallResult | None] = [None] * len(calls)
        alone: list[int] = []
        reused = 0
        shares_prefixes = _can_share_prefixes(self.model)
        for members in by_prefix.values():
            shared = _shared_length([rows[i] for i in members])
            if not shares_prefixes or len(members) < 2 or shared < self.min_shared_tokens:
                alone += members
                continue
            found = self._generate_sharing([rows[i] for i in members], shared, max_new)
            for i, answer in zip(members, found, strict=True):
                answers[i] = answer
            reused += shared * (len(members) - 1)
        if alone:
            prompts = [calls[i].prefix + calls[i].input for i in alone]
            encoded = self.tokenizer(prompts, return_tensors="pt", padding=True)
            with torch.inference_mode():
                generated = self.model.generate(
                    **encoded,
                    max_new_tokens=max_new,
                    do_sample=False,
                    pad_token_id=self.tokenizer.pad_token_id,
                )
            for i, own in zip(alone, generated[:, encoded["input_ids"].shape[1] :], strict=True):
                answers[i] = self._answer(own)
        return answers, reused  # type: ignore[return-value]  # every slot is filled above

    def _generate_sharing(self, rows: list[list[int]], shared: int, max_new: int) -> list[CallResult]:
        """The prefix KV cache: the rows' first `shared` tokens (the same in every row) are
        prefilled once, for one row, and that cache is repeated for the batch; each row's own
        tokens follow the shared ones, padded between the two (masked, and positions continue
        from the shared part as in the row alone). Only the rows' own tokens are prefilled
        for each row: a 200-token system prompt for 8 calls is computed once, 1,400 token
        positions fewer. A model whose cache cannot be repeated fails the batch, and the
        batcher's isolation then runs each call alone, without the cache."""
        pad = self.tokenizer.pad_token_id
        own = [row[shared:] for row in rows]
        width = max(len(tokens) for tokens in own)
        input_ids = torch.tensor([rows[0][:shared] + [pad] * (width - len(t)) + t for t in own])
        attention_mask = torch.tensor([[1] * shared + [0] * (width - len(t)) + [1] * len(t) for t in own])
        with torch.inference_mode():
            # Only the cache is wanted: logits for the last place alone (every place's logits
            # would be shared x vocabulary floats, 1.2 GB for 2,000 tokens of a 150,000 vocabulary).
            keep = {"logits_to_keep": 1} if _keeps_logits(type(self.model)) else {}
            cache = self.model(input_ids=input_ids[:1, :shared], use_cache=True, **keep).cache
            cache.batch_repeat_interleave(len(rows))
            generated = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                cache=cache,
                max_new_tokens=max_new,
                do_sample=False,
                pad_token_id=pad,
            )
        return [self._answer(tokens) for tokens in generated[:, input_ids.shape[1] :]]

    def _answer(self, generated: torch.Tensor) -> CallResult:
        own = generated[generated != self.tokenizer.pad_token_id]
        text = self.tokenizer.decode(own, skip_special_tokens=True)
        return CallResult({"text": text, "completion_tokens": int(own.numel())})


def _can_share_prefixes(model: Any) -> bool:
    """Whether the prefix KV cache gives each row exactly its answer alone. Not with a sliding
    window: it counts sequence places, and a row's padding after the shared tokens would use
    up places of its window (a review's tiny Mistral with a window of 24: 15 of 24 rows
    differed). Nor where the model's generation config names its own cache kind: generate()
    refuses a cache passed beside one."""
    config = model.config
    if getattr(config, "sliding_window", None) or "sliding_attention" in (
        getattr(config, "layer_types", None) or ()
    ):
        return False
    generation_config = getattr(model, "generation_config", None)
    return getattr(generation_config, "cache_implementation", None) is None


@functools.cache
def _keeps_logits(model_class: type) -> bool:
    return "logits_to_keep" in inspect.signature(model_class.forward).parameters


def _shared_length(rows: list[list[int]]) -> int:
    """How many leading tokens every row shares, leaving each row at least one of its own
    (generation starts from a row's last token). Counted on the tokens, not the prefix text:
    a prefix's last characters may tokenize together with the input's first."""
    shortest = min(len(row) for row in rows) - 1
    shared = 0
    while shared < shortest and all(row[shared] == rows[0][shared] for row in rows):
        shared += 1
    return shared
