"""Writing a partition's new answers back: entries to DuckDB first, then their vectors.

An entry is visible once its DuckDB row commits; its vector goes in after, and a
vector without a committed entry is never served (see semantic_lookup).
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl
import pyarrow as pa

from storage.exact_store import ttl_frame, write_entries
from storage.lance_tables import VECTOR_VALUE_BYTES
from storage.semantic_coverage import SEMANTIC_OFF

_NEW_ENTRIES_QUERY = """
SELECT k.key, k.tenant, k.namespace, k.model, k.model_version, k.canonical_request,
       k.input AS input_text, i.answer_json, k.semantic_scope, k.embedding_model,
       k.semantic_enabled, i.device_seconds,
       octet_length(k.key) + strlen(k.canonical_request) + strlen(i.answer_json) AS size_bytes
FROM inference_outputs i JOIN model_requests k USING (partition, request_id)
WHERE i.partition = ? AND i.path = 'model'
ORDER BY k.request_id
"""


_NEW_EXACT_ONLY_QUERY = """
SELECT DISTINCT k.key, k.embedding_model, coalesce(k.semantic_verify, false) AS verify,
       k.semantic_skip_reason AS reason, k.semantic_decided_under AS decided_under
FROM inference_outputs i JOIN model_requests k USING (partition, request_id)
WHERE i.partition = ? AND i.path = 'model' AND NOT k.semantic_enabled AND k.semantic_skip_reason <> ?
ORDER BY k.key
"""


def new_exact_only_entries(con: duckdb.DuckDBPyConnection, partition: str) -> pl.DataFrame:
    """The partition's new entries whose text its namespace's embedding model (or verifier)
    cannot read, with the keyed reason and what decided it (key, embedding_model, verify,
    reason, decided_under): recorded as exact-only at once, so the next look-up's backfill
    does not read them again. Entries of namespaces with semantic reuse off are not:
    turning it on must index them."""
    return con.sql(_NEW_EXACT_ONLY_QUERY, params=[partition, SEMANTIC_OFF]).pl()


def new_entries(
    con: duckdb.DuckDBPyConnection,
    partition: str,
    now: datetime,
    ttl_by_scope: dict[tuple[str, str], int],
    vectors: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The partition's answered model calls as cache entries, with their expiry.

    ttl_by_scope: (tenant, namespace) -> TTL seconds, so a tenant's own override applies.
    vectors (key, vector): the vectors the write-back will index; an entry's size_bytes
    counts its vector as LanceDB stores it (float32), so capacity.max_bytes bounds both
    stores (384 dimensions: 1,536 bytes, more than most short answers).
    """
    rows = con.sql(_NEW_ENTRIES_QUERY, params=[partition]).pl()
    if vectors is not None and vectors.height:
        vector_bytes = vectors.unique("key").select(
            "key", vector_bytes=pl.col("vector").list.len().cast(pl.Int64) * VECTOR_VALUE_BYTES
        )
        rows = (
            rows.join(vector_bytes, on="key", how="left", maintain_order="left")
            .with_columns(size_bytes=pl.col("size_bytes") + pl.col("vector_bytes").fill_null(0))
            .drop("vector_bytes")
        )
    with_ttl = rows.join(
        ttl_frame(ttl_by_scope), on=["tenant", "namespace"], how="left", maintain_order="left"
    )
    missing = with_ttl.filter(pl.col("ttl_seconds").is_null())
    if missing.height:
        scope = missing.row(0, named=True)
        raise ValueError(f"no TTL given for tenant {scope['tenant']!r} namespace {scope['namespace']!r}")
    return with_ttl.with_columns(
        created_at=pl.lit(now),
        expires_at=pl.lit(now) + pl.duration(seconds=pl.col("ttl_seconds")),
        last_hit_at=pl.lit(None, dtype=pl.Datetime("us")),
        hit_count=pl.lit(0, dtype=pl.Int64),
        source_partition=pl.lit(partition),
    ).drop("ttl_seconds")


def commit_entries(con: duckdb.DuckDBPyConnection, entries: pl.DataFrame) -> pl.DataFrame:
    """Store the entries (storage.exact_store.write_entries); returns those written: not
    the ones a live entry of an earlier partition already answers, whose vectors stay too."""
    columns = [
        "key",
        "tenant",
        "namespace",
        "model",
        "model_version",
        "canonical_request",
        "input_text",
        "answer_json",
        "created_at",
        "expires_at",
        "last_hit_at",
        "hit_count",
        "size_bytes",
        "device_seconds",
        "source_partition",
    ]
    written = write_entries(con, entries.select(columns))
    return entries.filter(pl.col("key").is_in(pl.Series(written, dtype=pl.Binary)))


def keys_without_live_entry(
    con: duckdb.DuckDBPyConnection, indexed_keys: pa.Table, now: datetime
) -> list[bytes]:
    """Indexed keys whose entry is gone or expired: evicted, cleared, replaced by a re-run,
    or left behind by a write-back that stopped between the two stores. Their vectors can
    never be served, and would take search places from live ones."""
    con.register("indexed_keys", indexed_keys.select(["key"]))
    try:
        rows = con.execute(
            """
            SELECT key FROM indexed_keys
            EXCEPT
            SELECT key FROM cache_entries WHERE expires_at > ?
            """,
            [now],
        ).fetchall()
    finally:
        con.unregister("indexed_keys")
    return [key for (key,) in rows]
