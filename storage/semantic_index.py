"""The semantic index (LanceDB): vectors of cached requests, searched under a hard prefilter.

A vector only points at an entry; the caller serves it only after the entry is
found committed and unexpired in the exact store and its request matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import lancedb
import numpy as np
import polars as pl
import pyarrow as pa

from storage.lance_tables import literal, open_table, table_name, vector_field

CANDIDATES_PER_QUERY = 4


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

    def search(
        self,
        scopes: list[str],
        vectors: np.ndarray,
        before_partition: str | None = None,
        exclude_keys: list[bytes] | None = None,
        limit: int = CANDIDATES_PER_QUERY,
    ) -> list[Neighbour]:
        """Nearest cached vectors for each query row, searching only its own scope.

        Queries sharing a scope go in one batched search.
        """
        neighbours: list[Neighbour] = []
        by_scope: dict[str, list[int]] = {}
        for row, scope in enumerate(scopes):
            by_scope.setdefault(scope, []).append(row)
        visibility = ""
        if before_partition is not None:
            visibility = f" AND (source_partition IS NULL OR source_partition < {literal(before_partition)})"
        for scope, rows in by_scope.items():
            result = (
                self._table.search([vectors[r].tolist() for r in rows])
                .distance_type("cosine")
                .where(f"semantic_scope = {literal(scope)}{visibility}", prefilter=True)
                .limit(limit)
                .select(["key", "_distance"])
                .to_arrow()
            )
            if result.num_rows == 0:
                continue
            # A single query comes back without query_index.
            query_index = (
                result["query_index"].to_pylist()
                if "query_index" in result.column_names
                else [0] * result.num_rows
            )
            for qi, key, distance in zip(
                query_index,
                result["key"].to_pylist(),
                result["_distance"].to_pylist(),
                strict=True,
            ):
                neighbours.append(Neighbour(rows[qi], key, 1.0 - float(distance)))
        return neighbours

    def delete_keys(self, keys: list[bytes]) -> None:
        """Remove the vectors of deleted entries (they would never be served, but cost space)."""
        for start in range(0, len(keys), 1000):
            literals = ",".join("X'" + key.hex() + "'" for key in keys[start : start + 1000])
            self._table.delete(f"key IN ({literals})")

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        self._table.delete(f"tenant = {literal(tenant)} AND namespace = {literal(namespace)}")

    def count(self) -> int:
        return self._table.count_rows()
