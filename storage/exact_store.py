"""The exact tier on DuckDB: set-at-a-time look-ups and writes of cache entries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl

from storage.schema import TABLES, migrate


@contextmanager
def open_store(
    path: Path, read_only: bool = False, migrated: bool = False
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the cache file briefly: DuckDB allows one writer process at a time. The schema
    is brought up to date on every writable open unless the caller knows it is (`migrated`:
    it opened this file before)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path), read_only=read_only)
    try:
        if not read_only and not migrated:
            migrate(con)
        yield con
    finally:
        con.close()


def replace_partition(
    con: duckdb.DuckDBPyConnection, table: str, partition: str, frame: pl.DataFrame
) -> None:
    """Delete-then-insert one partition's rows, so a re-run leaves the same state."""
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}")
    with transaction(con):
        con.execute(f"DELETE FROM {table} WHERE partition = ?", [partition])
        if frame.height:
            con.register("incoming_rows", frame.to_arrow())
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM incoming_rows")
            con.unregister("incoming_rows")


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """All of the block's statements, or none of them."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def read_partition(con: duckdb.DuckDBPyConnection, table: str, partition: str) -> pl.DataFrame:
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}")
    return con.sql(f"SELECT * FROM {table} WHERE partition = ?", params=[partition]).pl()


def lookup_exact(
    con: duckdb.DuckDBPyConnection,
    requests: pl.DataFrame,
    now: datetime,
    before_partition: str | None = None,
) -> pl.DataFrame:
    """Join requests (request_id, key, canonical_request) against the cache in one statement.

    A row is served only if its stored canonical request equals the new one (the
    collision guard) and it has not expired; expired rows among the keys read are
    deleted here (lazy expiry). With `before_partition`, only entries written by
    earlier partitions (or warmed, with no partition) are visible, so re-running a
    partition sees the cache as it stood before that day.
    Returns request_id, hit, served_key, answer_json.
    """
    con.register("lookup_requests", requests.select("request_id", "key", "canonical_request"))
    try:
        con.execute(
            """
            DELETE FROM cache_entries
            WHERE expires_at <= ? AND key IN (SELECT key FROM lookup_requests)
            """,
            [now],
        )
        found = con.sql(
            """
            SELECT r.request_id,
                   e.key IS NOT NULL AS hit,
                   e.key AS served_key,
                   e.answer_json
            FROM lookup_requests r
            LEFT JOIN cache_entries e
              ON e.key = r.key
             AND e.canonical_request = r.canonical_request
             AND e.expires_at > ?
             AND (?::VARCHAR IS NULL OR e.source_partition IS NULL OR e.source_partition < ?)
            """,
            params=[now, before_partition, before_partition],
        ).pl()
    finally:
        con.unregister("lookup_requests")
    return found


def record_hits(con: duckdb.DuckDBPyConnection, served_keys: list[bytes], now: datetime) -> None:
    """Count hits and touch last_hit_at (LRU/LFU eviction and cost reports read these)."""
    if not served_keys:
        return
    counts = pl.DataFrame({"key": served_keys}, schema={"key": pl.Binary}).group_by("key").len()
    con.register("served_counts", counts)
    try:
        con.execute(
            """
            UPDATE cache_entries e
            SET hit_count = e.hit_count + s.len, last_hit_at = ?
            FROM served_counts s
            WHERE e.key = s.key
            """,
            [now],
        )
    finally:
        con.unregister("served_counts")


def write_entries(con: duckdb.DuckDBPyConnection, entries: pl.DataFrame, partition: str | None) -> int:
    """Store new entries: replace any row with the same key, and (for a partition)
    every row that partition wrote before, so a re-run gives the same state."""
    with transaction(con):
        if partition is not None:
            con.execute("DELETE FROM cache_entries WHERE source_partition = ?", [partition])
        if entries.height:
            con.register("new_entries", entries.to_arrow())
            con.execute("DELETE FROM cache_entries WHERE key IN (SELECT key FROM new_entries)")
            con.execute("INSERT INTO cache_entries BY NAME SELECT * FROM new_entries")
            con.unregister("new_entries")
    return entries.height


def clear_namespace(con: duckdb.DuckDBPyConnection, tenant: str, namespace: str) -> int:
    """Delete every entry of one tenant's namespace; returns how many were deleted."""
    rows = con.execute(
        "DELETE FROM cache_entries WHERE tenant = ? AND namespace = ? RETURNING 1",
        [tenant, namespace],
    ).fetchall()
    return len(rows)


def sweep_expired(con: duckdb.DuckDBPyConnection, now: datetime) -> int:
    """The scheduled half of expiry: delete every entry past its expires_at."""
    rows = con.execute("DELETE FROM cache_entries WHERE expires_at <= ? RETURNING 1", [now]).fetchall()
    return len(rows)


def committed_live_keys(
    con: duckdb.DuckDBPyConnection,
    keys: list[bytes],
    now: datetime,
    before_partition: str | None = None,
) -> pl.DataFrame:
    """Entries among `keys` that are committed, unexpired and visible: a vector found in
    the semantic index is served only if its entry is here. Returns key, canonical_request,
    input_text, answer_json, tenant."""
    frame = pl.DataFrame({"key": keys}, schema={"key": pl.Binary}).unique()
    con.register("candidate_keys", frame)
    try:
        return con.sql(
            """
            SELECT e.key, e.canonical_request, e.input_text, e.answer_json, e.tenant
            FROM cache_entries e
            WHERE e.key IN (SELECT key FROM candidate_keys) AND e.expires_at > ?
              AND (?::VARCHAR IS NULL OR e.source_partition IS NULL OR e.source_partition < ?)
            """,
            params=[now, before_partition, before_partition],
        ).pl()
    finally:
        con.unregister("candidate_keys")
