"""The semantic index (LanceDB): vectors of cached requests, searched under a hard prefilter.

A vector only points at an entry; the caller serves it only after the entry is
found committed and unexpired in the exact store and its request matches.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import lancedb
import numpy as np
import polars as pl
import pyarrow as pa
from lancedb.index import BTree

from storage.lance_tables import literal, open_table, table_name, vector_field

CANDIDATES_PER_QUERY = 4
SCOPE_INDEX_MIN_ROWS = 10_000
# In-process copies of scope matrices, dropped whenever the table changes.
SCOPE_CACHE_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class Neighbour:
    query_row: int
    key: bytes
    similarity: float


class SemanticIndex:
    def __init__(self, folder: Path, embedding_model: str, dimension: int) -> None:
        self.embedding_model = embedding_model
        self.dimension = dimension
        schema = pa.schema(
            [
                pa.field("key", pa.binary()),
                pa.field("semantic_scope", pa.string()),
                pa.field("tenant", pa.string()),
                pa.field("namespace", pa.string()),
                pa.field("model", pa.string()),
                pa.field("model_version", pa.string()),
                pa.field("source_partition", pa.string()),
                vector_field(dimension),
            ]
        )
        self._table = open_table(
            lancedb.connect(str(folder)), table_name("semantic", embedding_model), schema
        )
        self._scope_cache: OrderedDict[tuple, tuple[list[bytes], np.ndarray]] = OrderedDict()

    def add(self, rows: pl.DataFrame, vectors: np.ndarray, partition: str | None) -> None:
        """Add vectors for committed entries (key, semantic_scope, tenant, namespace, model,
        model_version); a re-run of `partition` first removes what it added before."""
        if partition is not None:
            self._table.delete(f"source_partition = {literal(partition)}")
        if not rows.height:
            return
        table = (
            rows.select("key", "semantic_scope", "tenant", "namespace", "model", "model_version")
            .with_columns(pl.lit(partition, dtype=pl.String).alias("source_partition"))
            .to_arrow()
        )
        table = table.append_column(
            "vector",
            pa.array(vectors.astype(np.float32).tolist(), type=vector_field(self.dimension).type),
        )
        self._table.add(table.cast(self._table.schema))
        self._index_scopes()

    def _index_scopes(self) -> None:
        """A scalar index on the scope once the table is large enough for a scan to show;
        rows added later are searched unindexed until the next optimize()."""
        if self._table.count_rows() < SCOPE_INDEX_MIN_ROWS:
            return
        if not any("semantic_scope" in index.columns for index in self._table.list_indices()):
            self._table.create_index("semantic_scope", config=BTree())

    def search(
        self,
        scopes: list[str],
        vectors: np.ndarray,
        before_partition: str | None = None,
        limit: int = CANDIDATES_PER_QUERY,
    ) -> list[Neighbour]:
        """Nearest cached vectors for each query row, searching only its own scope.

        Exact search, one matrix product per scope: the hard prefilter splits the
        vectors into scopes (tenant, namespace, model, version, params, prefix,
        embedding model), each far smaller than the table, so comparing a whole
        partition's queries with their scope at once beats any per-query search.
        """
        rows_by_scope: dict[str, list[int]] = {}
        for row, scope in enumerate(scopes):
            rows_by_scope.setdefault(scope, []).append(row)
        stored = self.scope_vectors(list(rows_by_scope), before_partition)
        neighbours: list[Neighbour] = []
        for scope, rows in rows_by_scope.items():
            keys, matrix = stored.get(scope, ([], None))
            if matrix is None or not len(keys):
                continue
            similarities = vectors[rows] @ matrix.T
            k = min(limit, len(keys))
            top = np.argpartition(-similarities, k - 1, axis=1)[:, :k]
            for query, row in enumerate(rows):
                for column in top[query]:
                    neighbours.append(Neighbour(row, keys[column], float(similarities[query, column])))
        return neighbours

    def scope_vectors(
        self, scopes: list[str], before_partition: str | None = None
    ) -> dict[str, tuple[list[bytes], np.ndarray]]:
        """Keys and vectors of each scope, read in one filtered scan (cached per table version)."""
        version = self._table.version
        wanted = [s for s in scopes if (version, s, before_partition) not in self._scope_cache]
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            condition = f"semantic_scope IN ({','.join(literal(s) for s in chunk)})"
            if before_partition is not None:
                condition += (
                    f" AND (source_partition IS NULL OR source_partition < {literal(before_partition)})"
                )
            table = (
                self._table.search()
                .where(condition)
                .select(["key", "semantic_scope", "vector"])
                .limit(None)
                .to_arrow()
            )
            flat = table["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False)
            matrix = flat.reshape(-1, self.dimension).astype(np.float32, copy=False)
            found_scopes = np.asarray(table["semantic_scope"].to_pylist(), dtype=object)
            keys = table["key"].to_pylist()
            for scope in chunk:
                mask = found_scopes == scope
                self._scope_cache[(version, scope, before_partition)] = (
                    [key for key, keep in zip(keys, mask, strict=True) if keep],
                    matrix[mask],
                )
        self._trim_cache(version)
        return {s: self._scope_cache[(version, s, before_partition)] for s in scopes}

    def _trim_cache(self, version: int) -> None:
        """Keep only the current table version's matrices, within the byte budget."""
        for cache_key in [k for k in self._scope_cache if k[0] != version]:
            del self._scope_cache[cache_key]
        total = sum(m.nbytes for _, m in self._scope_cache.values())
        while total > SCOPE_CACHE_BYTES and self._scope_cache:
            _, (_, matrix) = self._scope_cache.popitem(last=False)
            total -= matrix.nbytes

    def delete_keys(self, keys: list[bytes]) -> None:
        """Remove the vectors of deleted entries (they would never be served, but cost space)."""
        for start in range(0, len(keys), 1000):
            literals = ",".join("X'" + key.hex() + "'" for key in keys[start : start + 1000])
            self._table.delete(f"key IN ({literals})")

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        self._table.delete(f"tenant = {literal(tenant)} AND namespace = {literal(namespace)}")

    def count(self) -> int:
        return self._table.count_rows()
