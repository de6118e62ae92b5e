"""Capacity limits per tenant namespace, enforced by a policy chosen in configuration.

Policy as data: each policy is the order in which entries are worth keeping;
entries past the capacity in that order are deleted. Adding a policy is adding a row.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

KEEP_ORDER = {
    # Least recently used goes first: keep the most recently hit (or written).
    "lru": "coalesce(e.last_hit_at, e.created_at) DESC, e.key",
    # Least frequently used goes first; recency breaks ties.
    "lfu": "e.hit_count DESC, coalesce(e.last_hit_at, e.created_at) DESC, e.key",
}


def enforce_capacity(
    con: duckdb.DuckDBPyConnection,
    tenant: str,
    namespace: str,
    policy: str,
    max_entries: int | None,
    max_bytes: int | None,
    admitted_at: datetime | None = None,
    current_versions: dict[str, str] | None = None,
) -> list[bytes]:
    """Delete what the tenant's namespace holds beyond its limits; returns the deleted keys.

    Before the policy's order, two ranks:
    - current_versions (model -> the registry's version): entries of another version of a
      registered model, or of a model it no longer lists, go first. The version is in the
      key (and an unknown model is quarantined at intake), so no request reaches them
      while the registry names another; under LFU their old hits would otherwise keep them
      and push out every entry of the new version. They are not deleted while there is
      room: a model rolled back to its earlier version finds them.
    - admitted_at: entries written at or after it (this write-back's) are kept before the
      others, as a cache admits what it was just asked to store: under LFU a new entry has
      no hits yet, and ranked with the rest it would be evicted by the write-back that
      stored it, every time.
    An entry larger than max_bytes on its own never fits and goes; it takes no room from
    the entries ranked after it.
    """
    if max_entries is None and max_bytes is None:
        return []
    if policy not in KEEP_ORDER:
        raise ValueError(f"unknown eviction policy {policy!r}: use one of {', '.join(KEEP_ORDER)}")
    versions = current_versions or {}
    registered = pl.DataFrame(
        {"model": list(versions), "current_version": list(versions.values())},
        schema={"model": pl.String, "current_version": pl.String},
    )
    # Without current_versions every entry counts as current; with them, an entry of a
    # model the registry no longer lists is as unreachable as one of an older version.
    unlisted = "true" if current_versions is None else "false"
    order = (
        f"coalesce(e.model_version = v.current_version, {unlisted}) DESC, "
        f"(e.created_at >= $admitted_at) DESC NULLS LAST, {KEEP_ORDER[policy]}"
    )
    con.register("registered_versions", registered)
    try:
        rows = con.execute(
            f"""
            WITH ranked AS (
                SELECT e.key, e.size_bytes,
                       -- An entry that cannot fit on its own takes neither a place nor bytes.
                       sum(CASE WHEN $max_bytes IS NULL OR e.size_bytes <= $max_bytes THEN 1 ELSE 0 END)
                           OVER (ORDER BY {order} ROWS UNBOUNDED PRECEDING) AS keep_rank,
                       sum(CASE WHEN e.size_bytes <= $max_bytes THEN e.size_bytes ELSE 0 END)
                           OVER (ORDER BY {order} ROWS UNBOUNDED PRECEDING) AS kept_bytes
                FROM cache_entries e LEFT JOIN registered_versions v USING (model)
                WHERE e.tenant = $tenant AND e.namespace = $namespace
            )
            DELETE FROM cache_entries
            WHERE tenant = $tenant AND namespace = $namespace
              AND key IN (
                  SELECT key FROM ranked
                  WHERE ($max_entries IS NOT NULL AND keep_rank > $max_entries)
                     OR ($max_bytes IS NOT NULL AND (size_bytes > $max_bytes OR kept_bytes > $max_bytes))
              )
            RETURNING key
            """,
            {
                "tenant": tenant,
                "namespace": namespace,
                "max_entries": max_entries,
                "max_bytes": max_bytes,
                "admitted_at": admitted_at,
            },
        ).fetchall()
    finally:
        con.unregister("registered_versions")
    return [key for (key,) in rows]
