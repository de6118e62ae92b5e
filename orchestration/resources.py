"""The one resource the assets use: where the stores live and how models are loaded."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl

from inference.backends import load_backend
from inference.base import Backend
from inference.embedder import Embedder, load_embedder
from inference.miss_runner import BatchLimits
from inference.pair_verifier import VERIFIER_BASE_MODEL, PairVerifier, load_verifier
from storage.config import Settings, load_settings
from storage.embedding_cache import EmbeddingCache
from storage.locations import StoreLocations
from storage.lookalikes import Verify
from storage.pair_scores import VerifiedPairScores
from storage.semantic_index import SemanticIndex

DEFAULT_HOME = ".infercache"


def default_home() -> str:
    """INFERCACHE_HOME, or `.infercache` in the working directory, as an absolute path."""
    return str(Path(os.environ.get("INFERCACHE_HOME", DEFAULT_HOME)).resolve())


class InferCacheResource(dg.ConfigurableResource):
    """The cache's stores (DuckDB file, LanceDB folder, landing and exports) and settings."""

    home: str
    config_dir: str | None = None
    # A verifier folder (python -m inference.train_verifier --out) used alone instead of the
    # shipped pair of models, e.g. to try a retrained one.
    verifier_folder: str | None = None
    # Keep each verifier stage's learned pair scores in the cache file, so a pair met again
    # (a text served from the cache yesterday comes again today) is not read again
    # (storage/pair_scores.py). Off: every look-up reads every pair.
    keep_pair_scores: bool = True
    # semantic_lookups first indexes stored entries that have no vector yet (written while
    # semantic reuse was off, or under another embedding model), most recently used first:
    # at most this many per embedding model a run, so turning reuse on over a large
    # namespace spreads its embedding over several runs (about 300 texts/s on 2 CPU cores
    # with MiniLM).
    vector_backfill_limit: int = 50_000

    @property
    def locations(self) -> StoreLocations:
        return StoreLocations(Path(self.home))

    def settings(self) -> Settings:
        return load_settings(Path(self.config_dir) if self.config_dir else None, home=Path(self.home))

    def now(self) -> datetime:
        return datetime.now(UTC).replace(tzinfo=None)

    def embedder(self, embedding_model: str) -> Embedder:
        spec = self.settings().embedding_model(embedding_model)
        return load_embedder(spec.engine, spec.model_folder, spec.dtype)

    def embedding_fingerprint(self, embedding_model: str) -> str:
        """Which weights the model's name stands for now (EmbeddingModelSpec.fingerprint)."""
        return self.settings().embedding_model(embedding_model).fingerprint()

    def embedding_cache(self, embedding_model: str) -> EmbeddingCache:
        dimension = self.embedder(embedding_model).dimension
        fingerprint = self.embedding_fingerprint(embedding_model)
        return EmbeddingCache(self.locations.lance_folder, embedding_model, dimension, fingerprint)

    def embed_through_cache(self, embedding_model: str, texts: list[str]) -> np.ndarray:
        """The texts' vectors under the embedding model; a text embedded before is read back."""
        vectors, _ = self.embedding_cache(embedding_model).embed(texts, self.embedder(embedding_model))
        return vectors

    def pair_verifier(self) -> PairVerifier:
        """The pair verifier (its models loaded once per process), keeping its learned
        scores in the cache file unless keep_pair_scores is off; a new one per call, so
        its counts (pair_verifier.verifier_counts) are the caller's own."""
        settings = self.settings()
        base = settings.embedding_model(VERIFIER_BASE_MODEL).model_folder()
        folders = (self.verifier_folder,) if self.verifier_folder else None  # None: the shipped ones
        verifier = load_verifier(str(base), folders, dtype=settings.verifier_dtype)
        memory = VerifiedPairScores(self.locations.duckdb_path, self.now()) if self.keep_pair_scores else None
        return verifier.remembering(memory)

    def pair_verifier_for(self, rows: pl.DataFrame) -> PairVerifier | None:
        """The pair verifier where some of `rows` (with semantic_verify, and a vector where
        the frame has one) may need it; None otherwise, so a partition with nothing to
        verify does not load its models."""
        if "vector" in rows.columns:
            rows = rows.filter(pl.col("vector").is_not_null())
        return self.pair_verifier() if rows["semantic_verify"].fill_null(False).any() else None

    def verifier(self) -> Verify:
        """The pair verifier's scoring function (see pair_verifier)."""
        return self.pair_verifier().score

    def semantic_index(self, embedding_model: str) -> SemanticIndex:
        dimension = self.embedder(embedding_model).dimension
        fingerprint = self.embedding_fingerprint(embedding_model)
        return SemanticIndex(
            self.locations.lance_folder, embedding_model, dimension, model_fingerprint=fingerprint
        )

    def backend(self, model: str, version: str) -> tuple[Backend, BatchLimits]:
        settings = self.settings()
        spec = settings.model(model)
        if spec.version != version:
            raise ValueError(
                f"model {model!r} is at version {spec.version} in the registry, not {version}: "
                "re-materialize model_requests for this partition"
            )
        backend = load_backend(
            spec.name,
            spec.version,
            spec.backend,
            spec.settings,
            lambda name: settings.embedding_model(name).model_folder(),
        )
        limits = BatchLimits(
            max_batch_tokens=int(spec.settings.get("max_batch_tokens", BatchLimits.max_batch_tokens)),
            max_batch_size=int(spec.settings.get("batch_size", BatchLimits.max_batch_size)),
        )
        return backend, limits


def infercache_resource() -> InferCacheResource:
    if "INFERCACHE_HOME" in os.environ:
        return InferCacheResource(home=dg.EnvVar("INFERCACHE_HOME"))
    return InferCacheResource(home=default_home())
