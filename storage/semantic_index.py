"""The semantic index (LanceDB): vectors of cached requests, searched under a hard prefilter.

A vector only points at an entry; the caller serves it only after the entry is
found committed and unexpired in the exact store and its request matches.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from lancedb.index import BTree, IvfHnswSq

from storage.lance_tables import connect, literal, open_table, table_name, vector_field
from storage.scope_search import ScopeMatrix, rescored, top_k

CANDIDATES_PER_QUERY = 4
SCOPE_INDEX_MIN_ROWS = 10_000
# A scope this large is searched through LanceDB's ANN index instead of exactly: reading
# and multiplying a scope's whole matrix grows with the scope, ANN does not. Measured here
# (benchmarks/semantic.py, 5,000 queries, 2 cores): one scope of 130,000 vectors searched
# exactly at 1,000 queries/s, through IVF-HNSW-SQ under the scope prefilter at 67 (recall@1
# 0.98). Exact cost grows with the scope; extrapolated (not measured), the two would meet
# somewhere past 2 million vectors a scope, where the scope's matrix (3 GB in float32) also
# stops fitting comfortably in memory.
ANN_MIN_SCOPE_ROWS = 2_000_000
# HNSW's default ef is far too small for top-1 recall (0.1 on near duplicates).
ANN_EF = 200
# Read the whole table when the scopes wanted hold more than this share of it.
WHOLE_READ_SHARE = 0.3
# In-process copies of scope matrices, dropped whenever the table changes.
SCOPE_CACHE_BYTES = 512 * 1024 * 1024
# Scopes named in one filtered read of the table (the filter is a SQL string of their hashes).
SCOPES_PER_READ = 1_000
# What splitting a read into scope matrices needs (not the tenant, namespace or model names).
SCOPE_COLUMNS = ["key", "semantic_scope", "source_partition", "vector"]


@dataclass(frozen=True)
class Neighbour:
    query_row: int
    key: bytes
    similarity: float


class SemanticIndex:
    def __init__(
        self,
        folder: Path,
        embedding_model: str,
        dimension: int,
        ann_min_scope_rows: int = ANN_MIN_SCOPE_ROWS,
        low_precision: bool | None = None,
        model_fingerprint: str | None = None,
    ) -> None:
        """low_precision: bfloat16 candidates, re-scored exactly, for large scopes (storage.scope_search);
        None: where the CPU multiplies bfloat16 in hardware."""
        self.embedding_model = embedding_model
        self.dimension = dimension
        self.ann_min_scope_rows = ann_min_scope_rows
        self.low_precision = low_precision
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
            connect(folder), table_name("semantic", embedding_model), schema, model_fingerprint
        )
        self._scope_cache: OrderedDict[tuple, ScopeMatrix] = OrderedDict()
        # (table version, rows per scope): which scopes are large enough for the ANN index.
        self._scope_sizes: tuple[int | None, dict[str, int]] = (None, {})

    def add(self, rows: pl.DataFrame, vectors: np.ndarray, partition: str | None) -> int:
        """Add vectors for committed entries (key, semantic_scope, tenant, namespace, model,
        model_version), written by `partition`: a key written again replaces its earlier
        vector (one vector a key, as one entry a key). The partition's other vectors stay,
        as their entries do when a re-run does not write them again (it may now serve
        those requests from the cache); a vector whose entry is gone is removed by the
        write-back (storage.write_back.keys_without_live_entry). A vector with NaN or
        infinity is not indexed (LanceDB refuses it, and it would match nothing): returns
        how many were."""
        return self.add_stored(
            rows.with_columns(source_partition=pl.lit(partition, dtype=pl.String)), vectors
        )

    def add_stored(self, rows: pl.DataFrame, vectors: np.ndarray) -> int:
        """As add, for entries written earlier (rows carry each entry's source_partition):
        each vector is seen by the partitions that see its entry, and removed by a re-run
        of the partition that wrote it, as that re-run replaces the entry."""
        if not rows.height:
            return 0
        self.delete_keys(rows["key"].to_list())
        vectors = vectors.astype(np.float32)
        finite = np.isfinite(vectors).all(axis=1)
        rows, vectors = rows.filter(pl.Series(finite)), vectors[finite]
        if not rows.height:
            return 0
        table = rows.select(
            "key", "semantic_scope", "tenant", "namespace", "model", "model_version", "source_partition"
        ).to_arrow()
        table = table.append_column(
            "vector", pa.array(vectors.tolist(), type=vector_field(self.dimension).type)
        )
        self._table.add(table.cast(self._table.schema))
        self._maintain_indices()
        return rows.height

    def keys(self, with_scopes: bool = False) -> pa.Table:
        """Every indexed key (column `key`; with tenant, namespace and semantic_scope where
        `with_scopes`): write-back compares them with the live entries, the backfill with
        the scopes their requests search."""
        columns = ["key", "tenant", "namespace", "semantic_scope"] if with_scopes else ["key"]
        return self._table.search().select(columns).limit(None).to_arrow()

    def keys_in_scopes(self, scopes: list[str]) -> pa.Table:
        """The keys (column `key`) of every vector in these scopes, whatever its partition."""
        parts = [table for _, table in self._read_scopes(scopes, ["key"], None)]
        return pa.concat_tables(parts) if parts else pa.table({"key": pa.array([], pa.binary())})

    def _read_scopes(self, scopes: list[str], columns: list[str], before_partition: str | None):
        """(scopes, rows read) for each SCOPES_PER_READ of `scopes`, in one filtered scan each."""
        for start in range(0, len(scopes), SCOPES_PER_READ):
            chunk = scopes[start : start + SCOPES_PER_READ]
            yield (
                chunk,
                self._table.search()
                .where(self._scope_filter(chunk, before_partition))
                .select(columns)
                .limit(None)
                .to_arrow(),
            )

    def _maintain_indices(self) -> None:
        """Build indices once the table is large enough for them to pay, and refresh them
        when a tenth of the rows is not yet in one of them: optimize folds new rows into
        every index (the scope index too, else later rows are scanned without it) and
        compacts the fragments that adds and deletes leave."""
        rows = self._table.count_rows()
        indices = {tuple(index.columns): index for index in self._table.list_indices()}
        if rows >= SCOPE_INDEX_MIN_ROWS and ("semantic_scope",) not in indices:
            self._table.create_index("semantic_scope", config=BTree())
        if rows >= self.ann_min_scope_rows and ("vector",) not in indices:
            partitions = max(1, int(math.sqrt(rows) / 4))
            self._table.create_index(
                "vector", config=IvfHnswSq(distance_type="cosine", num_partitions=partitions)
            )
        elif any(index.num_unindexed_rows > rows // 10 for index in indices.values()):
            self._table.optimize()

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
        partition's queries with their scope at once beats any per-query search
        (large scopes: bfloat16 candidates re-scored in float32, storage.scope_search).
        A scope of ann_min_scope_rows or more is searched through the ANN index
        instead, one batched query per scope, under the same prefilter.
        """
        if limit <= 0:
            return []  # as the exact path answers it; the ANN query refuses a limit of 0
        rows_by_scope: dict[str, list[int]] = {}
        for row, scope in enumerate(scopes):
            rows_by_scope.setdefault(scope, []).append(row)
        neighbours: list[Neighbour] = []
        large = self._large_scopes(list(rows_by_scope))
        for scope in large:
            neighbours += self._ann_search(scope, rows_by_scope.pop(scope), vectors, before_partition, limit)
        stored = self.scope_vectors(list(rows_by_scope), before_partition)
        for scope, rows in rows_by_scope.items():
            matrix = stored.get(scope)
            if matrix is None or not len(matrix.keys):
                continue
            columns, similarities = top_k(vectors[rows], matrix, limit)
            # The winners' keys as Python bytes in one conversion, not one Arrow scalar each.
            keys = matrix.keys.take(columns.ravel()).to_pylist()
            query_rows = np.repeat(rows, columns.shape[1]).tolist()
            neighbours += map(Neighbour, query_rows, keys, similarities.ravel().tolist())
        return neighbours

    def _large_scopes(self, scopes: list[str]) -> list[str]:
        """Scopes at or above the ANN size, when the table has a vector index at all."""
        if self._table.count_rows() < self.ann_min_scope_rows:
            return []
        if not any(index.columns == ["vector"] for index in self._table.list_indices()):
            return []
        # The scopes' sizes from one read of the scope column per table version: a filtered
        # count per scope took 0.65 ms each (1.3 s a search at 2,000 tenant namespaces).
        version = self._table.version
        if self._scope_sizes[0] != version:
            column = self._table.search().select(["semantic_scope"]).limit(None).to_arrow()["semantic_scope"]
            counted = pc.value_counts(column)
            self._scope_sizes = (
                version,
                dict(
                    zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist(), strict=True)
                ),
            )
        sizes = self._scope_sizes[1]
        return [scope for scope in scopes if sizes.get(scope, 0) >= self.ann_min_scope_rows]

    def _ann_search(
        self, scope: str, rows: list[int], vectors: np.ndarray, before_partition: str | None, limit: int
    ) -> list[Neighbour]:
        """One batched ANN query for every query row of a large scope, under the hard prefilter."""
        condition = f"semantic_scope = {literal(scope)}"
        if before_partition is not None:
            condition += f" AND (source_partition IS NULL OR source_partition < {literal(before_partition)})"
        result = (
            self._table.search(vectors[rows].tolist())
            .distance_type("cosine")
            .where(condition, prefilter=True)
            .limit(limit)
            .ef(max(ANN_EF, limit))  # the HNSW search refuses an ef under the limit
            .select(["key", "vector"])
            .to_arrow()
        )
        query_index = (
            np.asarray(result["query_index"].to_pylist())
            if "query_index" in result.column_names
            else np.zeros(result.num_rows, dtype=int)
        )
        if not result.num_rows:
            return []
        # The index only finds the candidates; each is re-scored exactly. Its `_distance`
        # is not one scale: on a fully indexed table it read 2(1 - cosine), with rows not
        # yet indexed 1 - cosine.
        found = result["vector"].combine_chunks().flatten().to_numpy(zero_copy_only=False)
        found = found.reshape(-1, self.dimension).astype(np.float32, copy=False)
        queries = vectors[np.asarray(rows)[query_index]].astype(np.float32, copy=False)
        similarities = rescored(queries, found, np.arange(len(found))[:, None])[:, 0]
        return [
            Neighbour(rows[q], key, float(similarity))
            for q, key, similarity in zip(
                query_index.tolist(), result["key"].to_pylist(), similarities, strict=True
            )
        ]

    def scope_vectors(self, scopes: list[str], before_partition: str | None = None) -> dict[str, ScopeMatrix]:
        """Keys and vectors of each scope (cached per table version, within SCOPE_CACHE_BYTES).

        A filtered read costs far more per row than a plain read of the whole table
        (measured: 0.2 s for a 13,000-row scope, 0.66 s for all 130,000 rows), so when
        the scopes wanted hold a good share of the table it is read whole and split
        here; otherwise they are read in one filtered scan (one per SCOPES_PER_READ), not
        one a scope: 500 scopes of 2,000 took 4.1 s one by one and 0.1 s at once. What
        one call needs is returned whole even where it is more than the cache keeps.
        """
        version = self._table.version
        found: dict[str, ScopeMatrix] = {}
        for scope in scopes:
            cached = self._scope_cache.get((version, scope, before_partition))
            if cached is not None:
                self._scope_cache.move_to_end((version, scope, before_partition))
                found[scope] = cached
        wanted = [s for s in dict.fromkeys(scopes) if s not in found]
        if wanted:
            total = self._table.count_rows()
            needed = self._table.count_rows(self._scope_filter(wanted, before_partition)) if total else 0
            if needed > total * WHOLE_READ_SHARE:
                whole = self._table.search().select(SCOPE_COLUMNS).limit(None).to_arrow()
                found |= self._split(whole, wanted, before_partition)
            else:
                for chunk, table in self._read_scopes(wanted, SCOPE_COLUMNS, before_partition):
                    found |= self._split(table, chunk, before_partition)
            for scope in wanted:
                self._scope_cache[(version, scope, before_partition)] = found[scope]
        self._trim_cache(version)
        return {s: found[s] for s in scopes}

    @staticmethod
    def _scope_filter(scopes: list[str], before_partition: str | None) -> str:
        condition = f"semantic_scope IN ({','.join(literal(s) for s in scopes)})"
        if before_partition is not None:
            condition += f" AND (source_partition IS NULL OR source_partition < {literal(before_partition)})"
        return condition

    def _split(self, table: pa.Table, scopes: list[str], before_partition) -> dict[str, ScopeMatrix]:
        """Each scope's keys and matrix from rows read, applying the visibility rule."""
        import torch

        # One copy into a writable float32 matrix (torch gathers from it in place), then
        # torch's row gather: 25 ms for 130,000 rows of 384 against numpy's 84 ms.
        pieces = [chunk.flatten().to_numpy(zero_copy_only=False) for chunk in table["vector"].chunks]
        flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.float32)
        matrix = torch.from_numpy(flat.reshape(-1, self.dimension).astype(np.float32, copy=False))
        visible = None
        if before_partition is not None:
            partitions = table["source_partition"].combine_chunks()
            visible = pc.or_kleene(pc.is_null(partitions), pc.less(partitions, before_partition))
        keys = table["key"].combine_chunks()
        # Rows grouped by scope in one pass (a comparison of the whole column per scope cost
        # 1.4 s for 500 scopes of 100 rows): scope codes, visible rows only, stably sorted.
        encoded = pc.dictionary_encode(table["semantic_scope"].combine_chunks())
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        if visible is not None:
            codes[~visible.to_numpy(zero_copy_only=False)] = -1
        order = np.argsort(codes, kind="stable")
        starts = np.searchsorted(codes[order], np.arange(len(encoded.dictionary) + 1))
        code_of = {scope: code for code, scope in enumerate(encoded.dictionary.to_pylist())}
        split = {}
        for scope in scopes:
            code = code_of.get(scope)
            rows = order[starts[code] : starts[code + 1]] if code is not None else order[:0]
            vectors = matrix.index_select(0, torch.from_numpy(rows)).numpy()
            split[scope] = ScopeMatrix.build(keys.take(rows), vectors, self.low_precision)
        return split

    def _trim_cache(self, version: int) -> None:
        """Keep only the current table version's matrices, within the byte budget."""
        for cache_key in [k for k in self._scope_cache if k[0] != version]:
            del self._scope_cache[cache_key]
        total = sum(matrix.nbytes for matrix in self._scope_cache.values())
        while total > SCOPE_CACHE_BYTES and self._scope_cache:
            _, matrix = self._scope_cache.popitem(last=False)
            total -= matrix.nbytes

    def delete_keys(self, keys: list[bytes]) -> None:
        """Remove the vectors of deleted entries (they would never be served, but cost space)."""
        for start in range(0, len(keys), 1000):
            literals = ",".join("X'" + key.hex() + "'" for key in keys[start : start + 1000])
            self._table.delete(f"key IN ({literals})")

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        """Remove one tenant namespace's vectors. Found by key, not by a filter on the names:
        a filter holds only plain tokens (storage.lance_tables.literal), and a tenant's name
        may hold a quote, a comma or any letter."""
        stored = self.keys(with_scopes=True)
        mine = pc.and_(pc.equal(stored["tenant"], tenant), pc.equal(stored["namespace"], namespace))
        self.delete_keys(stored.filter(mine)["key"].to_pylist())

    def count(self) -> int:
        return self._table.count_rows()
