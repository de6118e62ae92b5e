"""Exact top-k search of one scope's vectors for a batch of queries.

The product of a partition's queries with a scope's matrix is most of a semantic look-up's
time. Where bfloat16 products are faster than float32 ones (CPUs with AVX-512 BF16 or AMX:
about twice as fast on the machines measured here), candidates come from a bfloat16
product and are then re-scored exactly (summed in float64, rounded to float32: one pair gets
one value whatever the batch), so every similarity returned is the exact one.
RERANK_EXTRA more candidates than asked for are re-scored; a query whose candidates could
have missed a vector within bfloat16's rounding of its k-th best (near duplicates crowding
the cut) is compared with the whole scope in float32, so the top-k itself is exact too.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

# Below this many vectors a scope's product is cheap whatever its precision: stay in float32.
BFLOAT16_MIN_ROWS = 4_096
RERANK_EXTRA = 12
# The most a dot product of two unit vectors moves when computed from bfloat16 copies:
# bfloat16 keeps 8 significant bits, so each input is off by up to 2^-8 of itself (2^-7 over
# the product, by Cauchy-Schwarz) and the result by 2^-8 more; the rest is room (a review's
# adversarial vectors, every component rounded the same way, reached 0.0095). For vectors
# of other lengths it scales with their norms.
BFLOAT16_ERROR = 2.0**-6
# Queries whose candidates are re-scored at once (rescored), and pairs (cosines with a floor).
RESCORE_QUERIES = 64
RESCORE_PAIRS = 4096
# How far a float32 product of unit vectors can fall from the exact value, with room to spare
# (the rounding of 384 products and their sum is about 1e-6; it scales with the norms): a
# similarity that could reach a floor from under it is summed again.
FLOAT32_PRODUCT_ERROR = 1e-4
# Similarities of one scope's queries held at once (float32).
PRODUCT_BYTES = 256 * 2**20


def cosines(a: np.ndarray, b: np.ndarray, floor: float | None = None) -> np.ndarray:
    """Similarities a @ b.T, each summed in float64 and rounded to float32, so that one pair
    gets one value in any batch: float32 products of matrices of other shapes differ in the
    last bit, and a similarity at a threshold then passed in one replay block and not in
    another (a review's case). With `floor`, only the similarities that could reach it are
    summed so (the others come from the float32 product, for a caller that decides nothing
    under its threshold): twice as fast as the whole product in float64."""
    if floor is None:
        return (np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64).T).astype(np.float32)
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    similarities = a @ b.T
    if not similarities.size:
        return similarities
    room = FLOAT32_PRODUCT_ERROR * float(np.linalg.norm(a, axis=1).max() * np.linalg.norm(b, axis=1).max())
    # flatnonzero: numpy's nonzero of a 2-D mask took six times as long.
    rows, columns = np.divmod(np.flatnonzero(similarities >= floor - room), similarities.shape[1])
    for start in range(0, len(rows), RESCORE_PAIRS):
        these, those = rows[start : start + RESCORE_PAIRS], columns[start : start + RESCORE_PAIRS]
        similarities[these, those] = np.einsum(
            "ij,ij->i", a[these].astype(np.float64), b[those].astype(np.float64)
        )
    return similarities


def rescored(queries: np.ndarray, vectors: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Each query's similarity to its own candidates (`columns` of `vectors`, one row of
    columns a query), as `cosines` computes it."""
    found = np.empty(np.shape(columns), dtype=np.float32)
    # RESCORE_QUERIES at a time: their candidates in float64 stay in the CPU's cache (the whole
    # partition's at once took three times as long as the float32 product).
    for start in range(0, len(columns), RESCORE_QUERIES):
        stop = start + RESCORE_QUERIES
        gathered = vectors[columns[start:stop]].astype(np.float64)  # (queries, candidates, dimension)
        query = np.asarray(queries[start:stop], dtype=np.float64)[:, :, None]
        found[start:stop] = (gathered @ query)[:, :, 0]
    return found


@dataclass(frozen=True)
class ScopeMatrix:
    """A scope's keys (an Arrow array: only winners become Python bytes), its float32
    vectors, and a bfloat16 copy (a torch tensor) where candidates come from one."""

    keys: pa.Array
    vectors: np.ndarray
    bfloat16_vectors: object | None = None
    largest_norm: float = 1.0  # of the vectors, which the bfloat16 error scales with

    @classmethod
    def build(cls, keys: pa.Array, vectors: np.ndarray, low_precision: bool | None) -> ScopeMatrix:
        """low_precision None: bfloat16 candidates where the scope is large and the CPU has bfloat16."""
        use_bfloat16 = len(vectors) >= BFLOAT16_MIN_ROWS and (
            bfloat16_is_fast() if low_precision is None else low_precision
        )
        if not use_bfloat16:
            return cls(keys, vectors)
        import torch

        as_tensor = torch.from_numpy(vectors)
        # torch's norm: numpy's took 0.08 s over 130,000 x 384, a tenth of a whole search.
        largest_norm = float(torch.linalg.vector_norm(as_tensor, dim=1).max())
        return cls(keys, vectors, as_tensor.to(torch.bfloat16), largest_norm)

    @property
    def nbytes(self) -> int:
        extra = 0 if self.bfloat16_vectors is None else self.bfloat16_vectors.nbytes
        return self.vectors.nbytes + extra


def nearest_columns(similarities: np.ndarray, limit: int) -> np.ndarray:
    """For each row of a similarity matrix, the columns of its `limit` largest values (unordered)."""
    k = min(limit, similarities.shape[1])
    if k == 1:
        return similarities.argmax(axis=1)[:, None]
    import torch

    # torch's top-k is several times faster than numpy's argpartition on wide rows (measured:
    # 0.016 s against 0.1 s for 500 x 13,000), and reads the numpy array in place.
    return torch.topk(torch.from_numpy(similarities), k, dim=1, sorted=False).indices.numpy()


def top_k(queries: np.ndarray, scope: ScopeMatrix, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns of the `limit` most similar vectors of the scope for each query row (unordered)
    and their exact float32 similarities, both shaped (queries, min(limit, scope rows)).
    Queries go PRODUCT_BYTES of similarities (or of gathered candidate vectors) at a time: a
    partition's queries against a large scope would otherwise hold queries x rows floats at
    once (1.5 GB for 4,000 queries against 100,000 vectors)."""
    if limit <= 0:
        return np.zeros((len(queries), 0), dtype=np.int64), np.zeros((len(queries), 0), dtype=np.float32)
    # A query's similarities to the scope, or (bfloat16 path) its candidates' vectors, whichever
    # is larger (they are gathered for the exact re-score RESCORE_QUERIES at a time).
    candidate_floats = (
        (limit + RERANK_EXTRA) * scope.vectors.shape[1] if scope.bfloat16_vectors is not None else 0
    )
    step = max(1, PRODUCT_BYTES // (4 * max(len(scope.vectors), candidate_floats, 1)))
    if len(queries) <= step:
        return _top_k(queries, scope, limit)
    parts = [_top_k(queries[start : start + step], scope, limit) for start in range(0, len(queries), step)]
    return np.concatenate([c for c, _ in parts]), np.concatenate([s for _, s in parts])


def _top_k(queries: np.ndarray, scope: ScopeMatrix, limit: int) -> tuple[np.ndarray, np.ndarray]:
    if scope.bfloat16_vectors is None:
        columns = nearest_columns(queries @ scope.vectors.T, limit)
        return columns, rescored(queries, scope.vectors, columns)
    import torch

    approximate = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32)).to(torch.bfloat16)
    approximate = approximate @ scope.bfloat16_vectors.T
    k = min(limit + RERANK_EXTRA, approximate.shape[1])
    cut = torch.topk(approximate, k, dim=1, sorted=False)
    candidates = cut.indices.numpy()
    exact = rescored(queries, scope.vectors, candidates)
    best = nearest_columns(exact, limit)
    columns, similarities = (
        np.take_along_axis(candidates, best, axis=1),
        np.take_along_axis(exact, best, axis=1),
    )
    # A vector left out scored at most the cut's lowest in bfloat16, so at most the bfloat16
    # error more exactly. Where that could beat the worst of the rows' exact top-k (near duplicates
    # crowding the cut), the row is compared with the whole scope in float32, so the top-k
    # returned is the exact one whatever order the vectors were written in.
    error = BFLOAT16_ERROR * np.linalg.norm(queries, axis=1) * scope.largest_norm
    lowest_left_out = cut.values.float().min(dim=1).values.numpy() + error
    unsure = np.flatnonzero(lowest_left_out >= similarities.min(axis=1)) if k < approximate.shape[1] else []
    if len(unsure):
        columns[unsure] = nearest_columns(queries[unsure].astype(np.float32) @ scope.vectors.T, limit)
        similarities[unsure] = rescored(queries[unsure], scope.vectors, columns[unsure])
    return columns, similarities


@functools.cache
def bfloat16_is_fast() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AVX-512 BF16 or AMX, from Linux's CPU
    flags): without it torch emulates bfloat16, slower than float32, so float32 it is."""
    try:
        cpu_flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return re.search(r"\b(avx512_bf16|amx_bf16)\b", cpu_flags) is not None
