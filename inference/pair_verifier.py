"""The pair verifier: a small cross-encoder that says whether two requests mean the same.

It reads both texts together, so it sees the one word that changes an answer
(order / subscription, increase / decrease, USD to EUR / EUR to USD) where two
separate sentence vectors do not. It shares its word embeddings with the
installed all-MiniLM-L6-v2 (frozen in training), so the project ships only the
transformer layers and the head.

Explainable vetoes run beside it (inference/pair_conflicts.py): different numbers,
codes, units, an odd number of negations or opposites, a swapped direction.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from inference.pair_conflicts import vetoed

SHIPPED_MODEL = Path(__file__).resolve().parent / "verifier_model"
WEIGHTS_FILE = "weights.safetensors"
CONFIG_FILE = "config.json"
RECORD_FILE = "training.json"
WORD_EMBEDDINGS = "bert.embeddings.word_embeddings.weight"
BASE_WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
MAX_PAIR_TOKENS = 64
# The embedding model whose tokenizer and word embeddings the verifier shares.
VERIFIER_BASE_MODEL = "all-MiniLM-L6-v2"
SCORE_BATCH = 64


def build_cross_encoder(base_folder: Path, num_layers: int):
    """A BERT pair classifier initialised from the first `num_layers` layers of the base model."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(base_folder, local_files_only=True)
    config.num_hidden_layers = num_layers
    config.num_labels = 1
    return AutoModelForSequenceClassification.from_pretrained(
        base_folder, config=config, local_files_only=True, ignore_mismatched_sizes=True
    )


class PairVerifier:
    def __init__(self, model, tokenizer) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer

    @classmethod
    def load(cls, base_folder: Path, folder: Path = SHIPPED_MODEL) -> PairVerifier:
        from safetensors import safe_open
        from safetensors.torch import load_file
        from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        model = AutoModelForSequenceClassification.from_config(config)
        state = {name: tensor.float() for name, tensor in load_file(folder / WEIGHTS_FILE).items()}
        with safe_open(base_folder / "model.safetensors", "pt") as base:
            state[WORD_EMBEDDINGS] = base.get_tensor(BASE_WORD_EMBEDDINGS)
        model.load_state_dict(state)
        tokenizer = AutoTokenizer.from_pretrained(base_folder, local_files_only=True)
        return cls(model, tokenizer)

    def logits(self, pairs: list[tuple[str, str]]) -> torch.Tensor:
        encoded = self.tokenizer(
            [a for a, _ in pairs],
            [b for _, b in pairs],
            padding=True,
            truncation=True,
            max_length=MAX_PAIR_TOKENS,
            return_tensors="pt",
        )
        return self.model(**encoded).logits.squeeze(-1)

    def score(self, pairs: list[tuple[str, str]], vetoes: bool = True) -> np.ndarray:
        """Probability that each pair means the same; 0 where a conflict check vetoes it
        (`vetoes=False` gives the learned score alone, for comparison).

        Each pair is read in a fixed order (sorted), so score(a, b) == score(b, a).
        Vetoed pairs are never given to the model (the checks cost far less), and the
        rest are batched by length so that little of each batch is padding.
        """
        scores = np.zeros(len(pairs), dtype=np.float32)
        to_score = np.flatnonzero(~vetoed(pairs)) if vetoes else np.arange(len(pairs))
        if not len(to_score):
            return scores
        ordered = [tuple(sorted(pairs[i])) for i in to_score]
        lengths = [len(a) + len(b) for a, b in ordered]
        by_length = np.argsort(lengths, kind="stable")
        with torch.inference_mode():
            for start in range(0, len(by_length), SCORE_BATCH):
                batch = by_length[start : start + SCORE_BATCH]
                logits = self.logits([ordered[i] for i in batch])
                scores[to_score[batch]] = torch.sigmoid(logits).numpy()
        return scores


def training_record(folder: Path = SHIPPED_MODEL) -> dict:
    return json.loads((folder / RECORD_FILE).read_text())


@lru_cache(maxsize=2)
def load_verifier(base_folder: str, folder: str = str(SHIPPED_MODEL)) -> PairVerifier:
    """The verifier in `folder` (the shipped one by default), on the base model's embeddings."""
    if not (Path(folder) / WEIGHTS_FILE).exists():
        raise FileNotFoundError(
            f"the pair verifier's weights are missing from {folder}: "
            "train them with `python -m inference.train_verifier`"
        )
    return PairVerifier.load(Path(base_folder), Path(folder))
