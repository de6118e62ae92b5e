"""The exact tier on DuckDB: set-at-a-time look-ups and writes of cache entries."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl

from storage.schema import TABLES, migrate

# How long an open waits for another process to let go of the cache file. Runs' steps take
# turns in Dagster's store pool, but a command (report-wrong, a `dagster` command run without
# the instance's DAGSTER_HOME) is outside it: waiting a while beats failing at once, as a step
# that held the file through a look-up's embedding and verifier made both fail (a review).
LOCK_WAIT_SECONDS = 300.0
_LOCK_RETRY_FIRST, _LOCK_RETRY_MOST = 0.05, 2.0
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in .*?\(PID (\d+)\)")


class StoreBusyError(RuntimeError):
    """Another process held the cache file for longer than LOCK_WAIT_SECONDS."""


@contextmanager
def open_store(
    path: Path, read_only: bool = False, migrated: bool = False
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Open the cache file briefly: DuckDB allows one writer process at a time, so an open
    waits (up to LOCK_WAIT_SECONDS) while another process holds the file. The schema is
    brought up to date on every writable open unless the caller knows it is (`migrated`:
    it opened this file before)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = _connect_when_free(path, read_only)
    try:
        if not read_only and not migrated:
            migrate(con)
        yield con
    finally:
        con.close()


def _connect_when_free(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    pause = _LOCK_RETRY_FIRST
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as error:
            # DuckDB says so in words only: "Could not set lock on file ...: Conflicting lock
            # is held in PROGRAM (PID 1234) ...". Only a holder it names is waited for: a
            # filesystem that cannot lock at all gives the same words with PID 0 (a review),
            # and no wait would help there.
            holder = _LOCK_HOLDER.search(str(error))
            if holder is None or int(holder.group(1)) in (0, os.getpid()):
                raise
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreBusyError(
                    f"the cache file {path} stayed held by another process for "
                    f"{LOCK_WAIT_SECONDS:.0f} s ({holder.group(0)}: a run's step or another "
                    "infercache command): run this again when it has finished. Runs launched "
                    "from `infercache ui` take turns; a `dagster` command run without that "
                    "instance's DAGSTER_HOME does not"
                ) from error
            time.sleep(min(pause, left))
            pause = min(pause * 2, _LOCK_RETRY_MOST)


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


def record_hits(
    con: duckdb.DuckDBPyConnection,
    served_keys: list[bytes],
    now: datetime,
    replacing: list[bytes] | None = None,
) -> None:
    """Count hits and touch last_hit_at (LRU/LFU eviction and cost reports read these).

    replacing: the hits an earlier run of the same look-up recorded (`served_keys_of`),
    taken back first, so a partition run again counts each of its hits once.
    """
    if not served_keys and not replacing:
        return
    counts = pl.concat(
        [
            pl.DataFrame({"key": served_keys, "hits": 1}, schema={"key": pl.Binary, "hits": pl.Int64}),
            pl.DataFrame({"key": replacing or [], "hits": -1}, schema={"key": pl.Binary, "hits": pl.Int64}),
        ]
    )
    net = counts.group_by("key").agg(change=pl.col("hits").sum(), served_now=(pl.col("hits") > 0).any())
    con.register("served_counts", net)
    try:
        con.execute(
            """
            UPDATE cache_entries e
            SET hit_count = greatest(e.hit_count + s.change, 0),
                last_hit_at = CASE WHEN s.served_now THEN ? ELSE e.last_hit_at END
            FROM served_counts s
            WHERE e.key = s.key
            """,
            [now],
        )
    finally:
        con.unregister("served_counts")


def served_keys_of(con: duckdb.DuckDBPyConnection, table: str, partition: str) -> list[bytes]:
    """The entries a look-up table's partition served (one key a hit), as its last run recorded."""
    if table not in ("exact_lookups", "semantic_lookups"):
        raise ValueError(f"{table!r} records no hits")
    rows = con.execute(f"SELECT served_key FROM {table} WHERE partition = ? AND hit", [partition]).fetchall()
    return [key for (key,) in rows]


def write_entries(con: duckdb.DuckDBPyConnection, entries: pl.DataFrame) -> list[bytes]:
    """Store new entries, each replacing any row with the same key, except a live row an
    earlier partition wrote for the same request; returns the keys of the entries written.

    A replaced row's hit count and last hit carry over: a partition run again recomputes
    its answers but not the hits later days recorded on them (eviction ranks by those).
    Entries a run does not write again stay: a re-run whose landing files are gone or
    unreadable must not take answers already paid for.

    A live row of an earlier partition (or one warmed with none) for the same request
    stays as it is: the later partition asked the model only because its look-up ran
    before that partition's write-back (two runs in turns, as Dagster's step pool lets
    them). Taking the row over would move it to the later day, which then could never
    see it again, not even when run again (a review's case); kept, a re-run of the later
    day is served by it, as it would have been in order.
    """
    if not entries.height:
        return []
    with transaction(con):
        con.register("new_entries", entries.to_arrow())
        try:
            con.execute(
                """
                CREATE OR REPLACE TEMP TABLE writing AS
                SELECT n.* FROM new_entries n
                WHERE NOT EXISTS (
                    SELECT 1 FROM cache_entries e
                    WHERE e.key = n.key
                      AND e.canonical_request = n.canonical_request
                      AND e.expires_at > n.created_at
                      AND n.source_partition IS NOT NULL
                      AND (e.source_partition IS NULL OR e.source_partition < n.source_partition)
                )
                """
            )
            con.execute(
                """
                CREATE OR REPLACE TEMP TABLE replaced_hits AS
                SELECT key, hit_count, last_hit_at FROM cache_entries
                WHERE key IN (SELECT key FROM writing)
                """
            )
            con.execute("DELETE FROM cache_entries WHERE key IN (SELECT key FROM writing)")
            con.execute(
                """
                INSERT INTO cache_entries BY NAME
                SELECT n.* REPLACE (
                    n.hit_count + coalesce(r.hit_count, 0) AS hit_count,
                    coalesce(n.last_hit_at, r.last_hit_at) AS last_hit_at
                )
                FROM writing n LEFT JOIN replaced_hits r USING (key)
                """
            )
            written = [key for (key,) in con.execute("SELECT key FROM writing").fetchall()]
            con.execute("DROP TABLE replaced_hits")
            con.execute("DROP TABLE writing")
        finally:
            con.unregister("new_entries")
    return written


def clear_namespace(con: duckdb.DuckDBPyConnection, tenant: str, namespace: str) -> int:
    """Delete every entry of one tenant's namespace; returns how many were deleted."""
    rows = con.execute(
        "DELETE FROM cache_entries WHERE tenant = ? AND namespace = ? RETURNING 1",
        [tenant, namespace],
    ).fetchall()
    return len(rows)


def set_vector_bytes(con: duckdb.DuckDBPyConnection, keys: list[bytes], vector_bytes: int) -> None:
    """The entries' size_bytes, their row as write-back counts it plus `vector_bytes` (their
    vector in the index; 0 where it was dropped), after the backfill indexed or dropped them."""
    if not keys:
        return
    frame = pl.DataFrame({"key": keys}, schema={"key": pl.Binary}).unique()
    con.register("sized_keys", frame)
    try:
        con.execute(
            """
            UPDATE cache_entries
            SET size_bytes = octet_length(key) + strlen(canonical_request) + strlen(answer_json) + ?
            WHERE key IN (SELECT key FROM sized_keys)
            """,
            [vector_bytes],
        )
    finally:
        con.unregister("sized_keys")


def ttl_frame(ttl_by_scope: dict[tuple[str, str], int]) -> pl.DataFrame:
    """(tenant, namespace) -> TTL seconds as rows: tenant, namespace, ttl_seconds."""
    return pl.DataFrame(
        [(tenant, namespace, seconds) for (tenant, namespace), seconds in ttl_by_scope.items()],
        schema={"tenant": pl.String, "namespace": pl.String, "ttl_seconds": pl.Int64},
        orient="row",
    )


def apply_ttl(con: duckdb.DuckDBPyConnection, ttl_by_scope: dict[tuple[str, str], int]) -> int:
    """Each stored entry of a (tenant, namespace) expires its TTL now after it was written:
    a TTL lowered in the configuration applies to the answers already stored (they stop
    serving), and a raised one lengthens their life. Returns how many expiries changed."""
    if not ttl_by_scope:
        return 0
    con.register("current_ttl", ttl_frame(ttl_by_scope))
    try:
        rows = con.execute(
            """
            UPDATE cache_entries e
            SET expires_at = e.created_at + to_seconds(t.ttl_seconds)
            FROM current_ttl t
            WHERE e.tenant = t.tenant AND e.namespace = t.namespace
              AND e.expires_at <> e.created_at + to_seconds(t.ttl_seconds)
            RETURNING 1
            """
        ).fetchall()
    finally:
        con.unregister("current_ttl")
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
