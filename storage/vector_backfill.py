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

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import NamedTuple

import duckdb
import polars as pl
import pyarrow as pa

from storage.exact_store import transaction
from storage.keys import semantic_scopes_of_stored
from storage.languages import unplaced_label

_MISSING = """
SELECT e.*, w.verify, w.decided_under
FROM cache_entries e
JOIN backfill_scopes w USING (tenant, namespace, model, model_version)
ANTI JOIN backfill_indexed_keys i USING (key)
WHERE e.expires_at > $now
  AND (e.source_partition IS NULL OR $before_partition IS NULL OR e.source_partition < $before_partition)
  AND NOT EXISTS (
      SELECT 1 FROM exact_only_entries x
      WHERE x.key = e.key AND x.embedding_model = $embedding_model
        AND x.decided_under = w.decided_under
  )
"""
# Most recently hit or written first: the entries the next requests are likeliest to need.
_MISSING_QUERY = f"""
SELECT key, tenant, namespace, model, model_version, canonical_request, input_text,
       source_partition, verify, decided_under
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
    "decided_under": pl.String,
}


def entries_missing_vectors(
    con: duckdb.DuckDBPyConnection,
    scopes: list[tuple[str, str, str, str, bool, str]],
    indexed_keys: pa.Table,
    embedding_model: str,
    now: datetime,
    limit: int,
    before_partition: str | None = None,
) -> tuple[pl.DataFrame, int]:
    """Up to `limit` live entries of the (tenant, namespace, model, model_version, verify,
    decided_under) a partition requests (entries of a model version no request asks for
    are never searched), with no key in `indexed_keys` (the model's index), not recorded
    exact-only under the same coverage (storage.semantic_coverage.coverage_signature), and
    seen by `before_partition` (written before it, or warmed); and how many such entries
    there are in all (the rest wait for a later run)."""
    if not scopes:
        return pl.DataFrame(schema=_ROW_SCHEMA), 0
    wanted = pl.DataFrame(
        scopes,
        schema={
            "tenant": pl.String,
            "namespace": pl.String,
            "model": pl.String,
            "model_version": pl.String,
            "verify": pl.Boolean,
            "decided_under": pl.String,
        },
        orient="row",
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
    scopes = semantic_scopes_of_stored(rows["canonical_request"].to_list(), embedding_model, languages)
    return rows.with_columns(semantic_scope=pl.Series(scopes, dtype=pl.String))


def record_exact_only(
    con: duckdb.DuckDBPyConnection, rows: pl.DataFrame, embedding_model: str, now: datetime
) -> int:
    """Record entries (key, verify, decided_under, reason) that stay exact-only under the
    embedding model, so later runs do not read them again; returns how many were recorded."""
    if not rows.height:
        return 0
    marked = (
        rows.select("key", "verify", "decided_under", "reason")
        .unique("key")
        .with_columns(embedding_model=pl.lit(embedding_model), checked_at=pl.lit(now))
    )
    con.register("exact_only_new", marked.to_arrow())
    try:
        con.execute(
            """
            DELETE FROM exact_only_entries x USING exact_only_new n
            WHERE x.key = n.key AND x.embedding_model = n.embedding_model
            """
        )
        con.execute("INSERT INTO exact_only_entries BY NAME SELECT * FROM exact_only_new")
    finally:
        con.unregister("exact_only_new")
    return rows.height


def forget_exact_only(con: duckdb.DuckDBPyConnection, keys: list[bytes], embedding_model: str) -> None:
    """Drop the exact-only records of keys now indexed under the embedding model: a record
    left behind would hide the key from the backfill when its settings come back, and keep
    a vector under the wrong kind of scope from being indexed again."""
    if not keys:
        return
    with _registered(con, indexed_now=_key_table(keys)):
        con.execute(
            "DELETE FROM exact_only_entries"
            " WHERE embedding_model = ? AND key IN (SELECT key FROM indexed_now)",
            [embedding_model],
        )


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


class StaleVector(NamedTuple):
    """A vector stored under the other kind of scope than its namespace's requests search."""

    key: bytes
    tenant: str
    namespace: str
    model: str
    model_version: str
    visible: bool  # whether the partition checking sees its entry (written before it, or warmed)


def keys_scoped_otherwise(
    con: duckdb.DuckDBPyConnection,
    indexed: pa.Table,
    embedding_model: str,
    language_in_scope: dict[tuple[str, str], bool],
    now: datetime,
    before_partition: str | None = None,
) -> list[StaleVector]:
    """Vectors (`indexed`: key, tenant, namespace, semantic_scope) of the (tenant, namespace)
    given that were stored with the text's language in their scope where the namespace now
    keeps none, or the other way round (semantic.cross_language turned on or off, vectors
    stored before the language entered the scope, an older partition's write-back run
    again): their requests search other scopes, so they are never found. Told apart without
    reading the texts again: a vector stored without the language has the scope its
    canonical request gives without one. Only live entries (an expired one's vector goes at
    the next write-back). The backfill indexes those again, or drops those of a superseded
    model version (storage/vector_backfill_run.py)."""
    if not indexed.num_rows or not language_in_scope:
        return []
    checked = pl.DataFrame(
        [(tenant, namespace, keeps) for (tenant, namespace), keeps in language_in_scope.items()],
        schema={"tenant": pl.String, "namespace": pl.String, "language_in_scope": pl.Boolean},
        orient="row",
    )
    rows = live_vectors_of(con, indexed, checked, now, before_partition)
    without_language = semantic_scopes_of_stored(rows["canonical_request"].to_list(), embedding_model)
    stored_without_language = rows["semantic_scope"] == pl.Series(without_language, dtype=pl.String)
    stale = rows.filter(stored_without_language == rows["language_in_scope"])
    return [StaleVector(*row) for row in stale.select(StaleVector._fields).iter_rows()]


def keys_under_unplaced_scopes(
    con: duckdb.DuckDBPyConnection,
    indexed: pa.Table,
    embedding_model: str,
    namespaces: set[tuple[str, str]],
    now: datetime,
    before_partition: str | None = None,
) -> list[StaleVector]:
    """Vectors (`indexed`: key, tenant, namespace, semantic_scope) of the (tenant, namespace)
    given, which keep the text's language in their scopes, stored under the scope of a text
    nothing places (storage.languages.unplaced_label: "latin", "cyrillic"). Coverage rule 1
    scoped Cyrillic, Arabic and Devanagari text, and Latin-script text read unsure, by its
    script; the current rule reads such text among the languages that write it and gives a
    text still unplaced exact matching only, so no request searches those scopes and their
    entries would answer no rewording. Told apart from the scripts alone, without the
    detector; live entries only. The backfill decides them again under the current rule."""
    if not indexed.num_rows or not namespaces:
        return []
    checked = pl.DataFrame(
        sorted(namespaces), schema={"tenant": pl.String, "namespace": pl.String}, orient="row"
    )
    rows = live_vectors_of(con, indexed, checked, now, before_partition)
    labels = [unplaced_label(text) for text in rows["input_text"].to_list()]
    rows = rows.with_columns(label=pl.Series(labels, dtype=pl.String)).filter(pl.col("label").is_not_null())
    unplaced = semantic_scopes_of_stored(
        rows["canonical_request"].to_list(), embedding_model, rows["label"].to_list()
    )
    stale = rows.filter(rows["semantic_scope"] == pl.Series(unplaced, dtype=pl.String))
    return [StaleVector(*row) for row in stale.select(StaleVector._fields).iter_rows()]


def live_vectors_of(
    con: duckdb.DuckDBPyConnection,
    indexed: pa.Table,
    namespaces: pl.DataFrame,
    now: datetime,
    before_partition: str | None = None,
) -> pl.DataFrame:
    """The vectors of `indexed` whose entries are live, in the (tenant, namespace) rows of
    `namespaces` (their other columns kept), with what StaleVector holds, the stored scope and
    the entry's canonical request and text."""
    scoped_vectors = indexed.select(["key", "tenant", "namespace", "semantic_scope"])
    with _registered(con, scoped_vectors=scoped_vectors, checked_namespaces=namespaces.to_arrow()):
        return con.sql(
            """
            SELECT v.key, v.tenant, v.namespace, e.model, e.model_version,
                   e.source_partition IS NULL OR $before_partition IS NULL
                   OR e.source_partition < $before_partition AS visible,
                   v.semantic_scope, e.canonical_request, e.input_text,
                   c.* EXCLUDE (tenant, namespace)
            FROM scoped_vectors v
            JOIN checked_namespaces c USING (tenant, namespace)
            JOIN cache_entries e USING (key)
            WHERE e.expires_at > $now
            """,
            params={"before_partition": before_partition, "now": now},
        ).pl()


# The once-a-rule checks of a namespace's stored vectors, and the table recording each.
CHECK_TABLES = {
    # Vectors stored under the scope of a text the rule leaves unplaced (multilingual models).
    "unplaced": "unplaced_vector_checks",
    # Vectors of texts the rule gives exact matching only (every model).
    "covered": "covered_vector_checks",
}


def namespaces_unchecked(
    con: duckdb.DuckDBPyConnection,
    check: str,
    embedding_model: str,
    namespaces: list[tuple[str, str]],
    rule: int,
) -> set[tuple[str, str]]:
    """Of the (tenant, namespace) given, those whose vectors under the embedding model were
    not yet found clean by `check` (CHECK_TABLES) under coverage rule `rule`."""
    if not namespaces:
        return set()
    done = con.execute(
        f"""
        SELECT DISTINCT tenant, namespace FROM {CHECK_TABLES[check]}
        WHERE embedding_model = ? AND coverage_rule = ?
        """,
        [embedding_model, rule],
    ).fetchall()
    return set(namespaces) - set(done)


def note_checked(
    con: duckdb.DuckDBPyConnection,
    check: str,
    embedding_model: str,
    namespaces: set[tuple[str, str]],
    rule: int,
    now: datetime,
) -> None:
    """Record that these namespaces' vectors passed `check` under `rule` (vectors written from
    now on are decided by it): the check stops until the rule changes."""
    if namespaces:
        con.executemany(
            f"INSERT INTO {CHECK_TABLES[check]} VALUES (?, ?, ?, ?, ?)",
            [[embedding_model, tenant, namespace, rule, now] for tenant, namespace in sorted(namespaces)],
        )


def forget_checked(
    con: duckdb.DuckDBPyConnection,
    check: str,
    embedding_model: str,
    namespaces: set[tuple[str, str]],
    rule: int,
) -> None:
    """Reopen `check` for these namespaces: a partition keyed under an older rule writes
    vectors that rule decided again."""
    if namespaces:
        con.executemany(
            f"""
            DELETE FROM {CHECK_TABLES[check]}
            WHERE embedding_model = ? AND tenant = ? AND namespace = ? AND coverage_rule = ?
            """,
            [[embedding_model, tenant, namespace, rule] for tenant, namespace in sorted(namespaces)],
        )


def namespaces_to_recheck(
    con: duckdb.DuckDBPyConnection, embedding_model: str, signatures: dict[tuple[str, str], str]
) -> set[tuple[str, str]]:
    """Of the (tenant, namespace) given with what decides their coverage now
    (storage.semantic_coverage.covered_check_signature), those whose stored vectors were not
    yet decided again under it."""
    if not signatures:
        return set()
    done = con.execute(
        "SELECT DISTINCT tenant, namespace, decided_under FROM covered_vector_checks"
        " WHERE embedding_model = ?",
        [embedding_model],
    ).fetchall()
    checked = set(done)
    return {scope for scope, signature in signatures.items() if (*scope, signature) not in checked}


def note_rechecked(
    con: duckdb.DuckDBPyConnection,
    embedding_model: str,
    signatures: dict[tuple[str, str], str],
    rule: int,
    now: datetime,
) -> None:
    """Record that these namespaces' stored vectors were decided again under their signatures,
    in place of what was recorded before: vectors indexed under other settings since an
    earlier check (verification off for a while, then on again) may not pass it, so a return
    to those settings decides again."""
    if signatures:
        rows = [
            [embedding_model, tenant, namespace, rule, signature, now]
            for (tenant, namespace), signature in sorted(signatures.items())
        ]
        with transaction(con):
            con.executemany(
                "DELETE FROM covered_vector_checks"
                " WHERE embedding_model = ? AND tenant = ? AND namespace = ?",
                [row[:3] for row in rows],
            )
            con.executemany(
                "INSERT INTO covered_vector_checks BY NAME SELECT ? AS embedding_model, ? AS tenant,"
                " ? AS namespace, ? AS coverage_rule, ? AS decided_under, ? AS checked_at",
                rows,
            )


def keys_recorded_exact_only(
    con: duckdb.DuckDBPyConnection, keys: list[bytes], embedding_model: str
) -> set[bytes]:
    """Those of `keys` whose entries are recorded exact-only under the embedding model."""
    if not keys:
        return set()
    with _registered(con, asked_keys=_key_table(keys)):
        rows = con.execute(
            "SELECT DISTINCT key FROM exact_only_entries"
            " WHERE embedding_model = ? AND key IN (SELECT key FROM asked_keys)",
            [embedding_model],
        ).fetchall()
    return {key for (key,) in rows}


def _key_table(keys: list[bytes]) -> pa.Table:
    return pa.table({"key": pa.array(keys, pa.binary())})


@contextmanager
def _registered(con: duckdb.DuckDBPyConnection, **tables: pa.Table) -> Iterator[None]:
    """The tables registered under their names for the queries inside, then unregistered."""
    for name, table in tables.items():
        con.register(name, table)
    try:
        yield
    finally:
        for name in tables:
            con.unregister(name)


# Which kinds of scope (with or without the text's language) a tenant namespace's vectors
# under a multilingual model may have, and the latest partition that keyed or wrote each:
# the per-vector check above runs only where a kind other than the keyed one may be present.
_KINDS_QUERY = """
SELECT k.embedding_model, k.tenant, k.namespace,
       count(r.language_in_scope) AS recorded,
       max(r.latest_partition) FILTER (r.language_in_scope <> k.language_in_scope) AS other_latest,
       count(*) FILTER (r.language_in_scope <> k.language_in_scope) AS other_recorded
FROM keyed_kinds k
LEFT JOIN vector_scope_kinds r USING (embedding_model, tenant, namespace)
GROUP BY ALL ORDER BY ALL
"""


def namespaces_to_check(
    con: duckdb.DuckDBPyConnection, keyed: list[tuple[str, str, str, bool]], partition: str
) -> list[tuple[str, str, str]]:
    """Of the (embedding model, tenant, namespace, language in scope) a partition was keyed
    with, those whose vectors may be scoped the other way: nothing recorded yet (vectors
    stored before the language could enter a scope), or the other kind recorded by this
    partition or an earlier one. Where a later partition keyed the other way, its vectors
    are left as they are: a recompute of an older partition does not undo a newer one."""
    if not keyed:
        return []
    con.register("keyed_kinds", _kinds(keyed).to_arrow())
    try:
        rows = con.execute(_KINDS_QUERY).fetchall()
    finally:
        con.unregister("keyed_kinds")
    return [
        (model, tenant, namespace)
        for model, tenant, namespace, recorded, other_latest, other_recorded in rows
        if not recorded or (other_recorded and (other_latest is None or other_latest <= partition))
    ]


def note_vector_kinds(
    con: duckdb.DuckDBPyConnection, kinds: list[tuple[str, str, str, bool]], partition: str, now: datetime
) -> None:
    """Record that vectors of these (embedding model, tenant, namespace, language in scope)
    may be present, keyed or written by `partition` (the latest such partition is kept)."""
    if not kinds:
        return
    con.register("noted_kinds", _kinds(kinds).unique().to_arrow())
    try:
        merged = con.sql(
            """
            SELECT n.embedding_model, n.tenant, n.namespace, n.language_in_scope,
                   greatest(max(r.latest_partition), $partition) AS latest_partition, $now AS recorded_at
            FROM noted_kinds n
            LEFT JOIN vector_scope_kinds r USING (embedding_model, tenant, namespace, language_in_scope)
            GROUP BY ALL
            """,
            params={"partition": partition, "now": now},
        ).pl()
        con.execute(
            """
            DELETE FROM vector_scope_kinds r USING noted_kinds n
            WHERE r.embedding_model = n.embedding_model AND r.tenant = n.tenant
              AND r.namespace = n.namespace AND r.language_in_scope = n.language_in_scope
            """
        )
        con.register("merged_kinds", merged.to_arrow())
        con.execute("INSERT INTO vector_scope_kinds BY NAME SELECT * FROM merged_kinds")
        con.unregister("merged_kinds")
    finally:
        con.unregister("noted_kinds")


def forget_vector_kind(
    con: duckdb.DuckDBPyConnection, embedding_model: str, tenant: str, namespace: str, language_in_scope: bool
) -> None:
    """No vector of this kind is left (every one was indexed again): the check can stop."""
    con.execute(
        """
        DELETE FROM vector_scope_kinds
        WHERE embedding_model = ? AND tenant = ? AND namespace = ? AND language_in_scope = ?
        """,
        [embedding_model, tenant, namespace, language_in_scope],
    )


def _kinds(rows: list[tuple[str, str, str, bool]]) -> pl.DataFrame:
    schema = {
        "embedding_model": pl.String,
        "tenant": pl.String,
        "namespace": pl.String,
        "language_in_scope": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")
