"""Greedy generation with a transformers causal LM, batched with left padding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from inference.base import CallResult, ModelCall
from inference.tiny_lm import build_tiny_lm

DEFAULT_MAX_NEW_TOKENS = 32


class CausalLM:
    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.max_new_tokens = max_new_tokens
        self.context_tokens = int(getattr(model.config, "max_position_embeddings", 2048))

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
        prompt = len(self.tokenizer(call.prefix + call.input)["input_ids"])
        return prompt + self._max_new(call)

    def generation_tokens(self, call: ModelCall) -> int:
        """The part of token_count the call generates (the batcher prices padding with it)."""
        return self._max_new(call)

    def run_batch(self, calls: list[ModelCall]) -> list[CallResult]:
        results: list[CallResult | None] = [None] * len(calls)
        runnable = []
        for i, call in enumerate(calls):
            needed = self.token_count(call)
            if needed > self.context_tokens:
                results[i] = CallResult(
                    None,
                    f"prompt plus max_new_tokens is {needed} tokens, over the model's "
                    f"context of {self.context_tokens}: shorten the input or lower max_new_tokens",
                )
            else:
                runnable.append(i)
        # One generation per length asked for: generate() pads every row to the longest
        # prompt and runs every row as long as the longest max_new_tokens, so rows that fit
        # the context alone could overrun it together (a long prompt beside a long answer).
        by_length: dict[int, list[int]] = {}
        for i in runnable:
            by_length.setdefault(self._max_new(calls[i]), []).append(i)
        for max_new, rows in by_length.items():
            for i, answer in zip(rows, self._generate([calls[i] for i in rows], max_new), strict=True):
                results[i] = answer
        return results  # type: ignore[return-value]  # every slot is filled above

    def _generate(self, calls: list[ModelCall], max_new: int) -> list[CallResult]:
        prompts = [call.prefix + call.input for call in calls]
        encoded = self.tokenizer(prompts, return_tensors="pt", padding=True)
        with torch.inference_mode():
            generated = self.model.generate(
                **encoded,
                max_new_tokens=max_new,
                do_sample=False,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        answers = []
        for own in generated[:, encoded["input_ids"].shape[1] :]:
            own = own[own != self.tokenizer.pad_token_id]
            text = self.tokenizer.decode(own, skip_special_tokens=True)
            answers.append(CallResult({"text": text, "completion_tokens": int(own.numel())}))
        return answers
