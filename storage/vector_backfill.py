"""Vectors for live entries that have none in an embedding model's index.

Write-back indexes the answers of its own model calls. Entries written while their
namespace had semantic reuse off, or under another embedding model (or before its
index table was deleted to start afresh), have no vector there, and would
serve exact hits only until they expire. Before its semantic search, a partition
therefore indexes the live entries of its namespaces that reuse semantically and still
miss a vector: most recently used first, up to a limit per run, the rest on later runs.

An entry whose text the model cannot cover (another language or script, too long, or
not read by the verifier where the namespace verifies) stays exact-only; it is recorded
in `exact_only_entries` under the settings that decided it, so it is not read again
every day. A change of those settings (another embedding model, verification on or off)
decides it afresh.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl
import pyarrow as pa

from storage.keys import semantic_scope_of_stored

_MISSING = """
SELECT e.*, w.verify
FROM cache_entries e
JOIN backfill_scopes w USING (tenant, namespace)
ANTI JOIN backfill_indexed_keys i USING (key)
WHERE e.expires_at > $now
  AND (e.source_partition IS NULL OR $before_partition IS NULL OR e.source_partition < $before_partition)
  AND NOT EXISTS (
      SELECT 1 FROM exact_only_entries x
      WHERE x.key = e.key AND x.embedding_model = $embedding_model AND x.verify = w.verify
  )
"""
# Most recently hit or written first: the entries the next requests are likeliest to need.
_MISSING_QUERY = f"""
SELECT key, tenant, namespace, model, model_version, canonical_request, input_text,
       source_partition, verify
FROM ({_MISSING})
ORDER BY coalesce(last_hit_at, created_at) DESC, key
LIMIT $limit
"""
_MISSING_COUNT_QUERY = f"SELECT count(*) FROM ({_MISSING})"

_ROW_SCHEMA = {
    "key": pl.Binary,
    "tenant": pl.String,
    "namespace": pl.String,
    "model": pl.String,
    "model_version": pl.String,
    "canonical_request": pl.String,
    "input_text": pl.String,
    "source_partition": pl.String,
    "verify": pl.Boolean,
}


def entries_missing_vectors(
    con: duckdb.DuckDBPyConnection,
    scopes: list[tuple[str, str, bool]],
    indexed_keys: pa.Table,
    embedding_model: str,
    now: datetime,
    limit: int,
    before_partition: str | None = None,
) -> tuple[pl.DataFrame, int]:
    """Up to `limit` live entries of the (tenant, namespace, verify) scopes with no key in
    `indexed_keys` (the model's index) and not recorded exact-only under these settings,
    of those `before_partition` sees (written before it, or warmed); and how many such
    entries there are in all (the rest wait for a later run)."""
    if not scopes:
        return pl.DataFrame(schema=_ROW_SCHEMA), 0
    wanted = pl.DataFrame(
        scopes, schema={"tenant": pl.String, "namespace": pl.String, "verify": pl.Boolean}, orient="row"
    )
    con.register("backfill_scopes", wanted.to_arrow())
    con.register("backfill_indexed_keys", indexed_keys.select(["key"]))
    try:
        params = {"now": now, "embedding_model": embedding_model, "before_partition": before_partition}
        rows = con.sql(_MISSING_QUERY, params={**params, "limit": max(limit, 0)}).pl()
        # Counted apart only when the limit may have cut the list short.
        missing = rows.height
        if rows.height >= limit:
            missing = con.execute(_MISSING_COUNT_QUERY, params).fetchall()[0][0]
    finally:
        con.unregister("backfill_scopes")
        con.unregister("backfill_indexed_keys")
    return rows.cast(_ROW_SCHEMA), missing


def with_scopes(rows: pl.DataFrame, embedding_model: str, languages: list[str | None]) -> pl.DataFrame:
    """`rows` (with canonical_request) with the semantic scope their requests search under
    the embedding model, each text's language in it where the namespace keeps one
    (storage.semantic_coverage.semantic_decisions)."""
    scopes = [
        semantic_scope_of_stored(canonical, embedding_model, language)
        for canonical, language in zip(rows["canonical_request"], languages, strict=True)
    ]
    return rows.with_columns(semantic_scope=pl.Series(scopes, dtype=pl.String))


def record_exact_only(
    con: duckdb.DuckDBPyConnection, rows: pl.DataFrame, embedding_model: str, now: datetime
) -> int:
    """Record entries (key, verify, reason) that stay exact-only under the embedding model,
    so later runs do not read them again; returns how many were recorded."""
    if not rows.height:
        return 0
    marked = rows.select("key", "verify", "reason").with_columns(
        embedding_model=pl.lit(embedding_model), checked_at=pl.lit(now)
    )
    con.register("exact_only_new", marked.to_arrow())
    try:
        con.execute(
            """
            DELETE FROM exact_only_entries x USING exact_only_new n
            WHERE x.key = n.key AND x.embedding_model = n.embedding_model AND x.verify = n.verify
            """
        )
        con.execute(
            """
            INSERT INTO exact_only_entries (key, embedding_model, verify, reason, checked_at)
            SELECT key, embedding_model, verify, reason, checked_at FROM exact_only_new
            """
        )
    finally:
        con.unregister("exact_only_new")
    return rows.height


def forget_exact_only_without_entry(con: duckdb.DuckDBPyConnection, now: datetime) -> int:
    """Drop the records of entries that are gone or expired (evicted, cleared, swept)."""
    rows = con.execute(
        """
        DELETE FROM exact_only_entries
        WHERE key NOT IN (SELECT key FROM cache_entries WHERE expires_at > ?)
        RETURNING key
        """,
        [now],
    ).fetchall()
    return len(rows)


def scopes_to_reindex(
    con: duckdb.DuckDBPyConnection, keyed: list[tuple[str, str, str, bool]]
) -> list[tuple[str, str, str]]:
    """Of the (embedding model, tenant, namespace, language in scope) a partition was keyed
    with, those whose stored vectors were scoped the other way (a namespace that turned
    semantic.cross_language on or off, or vectors stored before the language entered the
    scope, which recorded nothing and were scoped without it): their vectors are never
    found again and must be indexed afresh, then the new way recorded (record_scope_kinds)."""
    if not keyed:
        return []
    con.register("keyed_scope_kinds", _scope_kinds(keyed).to_arrow())
    try:
        changed = con.execute(
            """
            SELECT k.embedding_model, k.tenant, k.namespace
            FROM keyed_scope_kinds k
            LEFT JOIN semantic_scope_kinds r USING (embedding_model, tenant, namespace)
            WHERE k.language_in_scope <> coalesce(r.language_in_scope, false)
            ORDER BY ALL
            """
        ).fetchall()
    finally:
        con.unregister("keyed_scope_kinds")
    return [tuple(row) for row in changed]


def record_scope_kinds(
    con: duckdb.DuckDBPyConnection, keyed: list[tuple[str, str, str, bool]], now: datetime
) -> None:
    """Record how each (embedding model, tenant, namespace)'s vectors are scoped now; after
    their re-indexing, so that a step stopped in between indexes them again next time."""
    if not keyed:
        return
    con.register("keyed_scope_kinds", _scope_kinds(keyed).to_arrow())
    try:
        con.execute(
            """
            DELETE FROM semantic_scope_kinds r USING keyed_scope_kinds k
            WHERE r.embedding_model = k.embedding_model AND r.tenant = k.tenant
              AND r.namespace = k.namespace
            """
        )
        con.execute(
            """
            INSERT INTO semantic_scope_kinds BY NAME
            SELECT tenant, namespace, embedding_model, language_in_scope, ? AS recorded_at
            FROM keyed_scope_kinds
            """,
            [now],
        )
    finally:
        con.unregister("keyed_scope_kinds")


def _scope_kinds(keyed: list[tuple[str, str, str, bool]]) -> pl.DataFrame:
    schema = {
        "embedding_model": pl.String,
        "tenant": pl.String,
        "namespace": pl.String,
        "language_in_scope": pl.Boolean,
    }
    return pl.DataFrame(keyed, schema=schema, orient="row")
