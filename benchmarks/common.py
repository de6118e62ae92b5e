"""Shared pieces of the benchmarks: data locations, QQP questions, embeddings, timing."""

from __future__ import annotations

import os
import random
import resource
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
QQP = REPO.parent / "shared" / "data" / "qqp_pairs.jsonl.gz"
# Embeddings computed once and kept out of git (see .gitignore).
DATA = REPO / "benchmarks" / ".data"
# The labelled workloads written for the project (tracked, unlike DATA).
WORKLOADS_FOLDER = REPO / "benchmarks" / "data"


def quiet_environment() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    torch.set_num_threads(2)


def qqp_questions(seed: int = 0) -> list[str]:
    """Every distinct QQP question, in a fixed shuffled order."""
    from inference.pair_data import read_pairs

    questions = sorted({q for pair in read_pairs(QQP) for q in (pair["a"], pair["b"])})
    random.Random(seed).shuffle(questions)
    return questions


def embed_through_cache(texts: list[str], model: str = "all-MiniLM-L6-v2") -> tuple[np.ndarray, int]:
    """MiniLM vectors of `texts`, through the project's embedding cache under benchmarks/.data."""
    from inference.embedder import SentenceEmbedder
    from storage.config import load_settings
    from storage.embedding_cache import EmbeddingCache

    # float32: the vectors are computed once and kept, so the dtype's speed does not matter here.
    spec = load_settings().embedding_model(model)
    embedder = SentenceEmbedder(spec.model_folder(), "float32")
    cache = EmbeddingCache(DATA / "lance", model, embedder.dimension, spec.fingerprint())
    return cache.embed(texts, embedder)


def median_seconds(run: Callable[[], object], repeats: int = 3) -> tuple[float, object]:
    timings, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings), result


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
