"""Building a backend from its registry entry; loaded once per process and model version."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from inference.base import Backend
from inference.causal_lm import CausalLM
from inference.classifier import ZeroShotClassifier
from inference.embedder import SentenceEmbedder

_loaded: dict[tuple[str, str], Backend] = {}


def load_backend(
    name: str,
    version: str,
    backend: str,
    settings: dict[str, Any],
    embedding_folder: Callable[[str], Path],
) -> Backend:
    """`embedding_folder` resolves an embedding model's name to its folder on disk."""
    cache_key = (name, version)
    if cache_key not in _loaded:
        if backend == "zero_shot_classifier":
            # float32 whatever models.yaml says for the semantic cache: another dtype could
            # change a label, and this model's answers are cached under its version.
            embedder = SentenceEmbedder(
                embedding_folder(settings.get("embedding_model", "all-MiniLM-L6-v2")), "float32"
            )
            _loaded[cache_key] = ZeroShotClassifier(
                embedder, settings.get("hypothesis_template", "This text is about {}.")
            )
        elif backend == "causal_lm":
            _loaded[cache_key] = CausalLM.from_settings(settings)
        else:
            raise ValueError(f"unknown backend {backend!r} for model {name!r}")
    return _loaded[cache_key]
