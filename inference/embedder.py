"""Sentence-embedding models, loaded from a folder on disk (never from a hub)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np

EMBEDDING_BATCH_SIZE = 64


@lru_cache(maxsize=4)
def load_sentence_model(folder: str):
    # Set before the first import: a hub lookup must fail fast, never download.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(folder, device="cpu", local_files_only=True)


class SentenceEmbedder:
    """Normalized sentence vectors; cosine similarity is then a dot product."""

    def __init__(self, folder: Path) -> None:
        self.model = load_sentence_model(str(folder))
        self.dimension = int(self.model.get_embedding_dimension())

    def __call__(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self.model.encode(
            texts,
            batch_size=EMBEDDING_BATCH_SIZE,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        ).astype(np.float32)
