"""Capacity limits per tenant namespace, enforced by a policy chosen in configuration.

Policy as data: each policy is the order in which entries are worth keeping;
entries past the capacity in that order are deleted. Adding a policy is adding a row.
"""

from __future__ import annotations

import duckdb

KEEP_ORDER = {
    # Least recently used goes first: keep the most recently hit (or written).
    "lru": "coalesce(last_hit_at, created_at) DESC, key",
    # Least frequently used goes first; recency breaks ties.
    "lfu": "hit_count DESC, coalesce(last_hit_at, created_at) DESC, key",
}


def enforce_capacity(
    con: duckdb.DuckDBPyConnection,
    tenant: str,
    namespace: str,
    policy: str,
    max_entries: int | None,
    max_bytes: int | None,
) -> list[bytes]:
    """Delete what the tenant's namespace holds beyond its limits; returns the deleted keys."""
    if max_entries is None and max_bytes is None:
        return []
    if policy not in KEEP_ORDER:
        raise ValueError(f"unknown eviction policy {policy!r}: use one of {', '.join(KEEP_ORDER)}")
    order = KEEP_ORDER[policy]
    rows = con.execute(
        f"""
        WITH ranked AS (
            SELECT key,
                   row_number() OVER (ORDER BY {order}) AS keep_rank,
                   sum(size_bytes) OVER (ORDER BY {order} ROWS UNBOUNDED PRECEDING) AS kept_bytes
            FROM cache_entries
            WHERE tenant = $tenant AND namespace = $namespace
        )
        DELETE FROM cache_entries
        WHERE tenant = $tenant AND namespace = $namespace
          AND key IN (
              SELECT key FROM ranked
              WHERE ($max_entries IS NOT NULL AND keep_rank > $max_entries)
                 OR ($max_bytes IS NOT NULL AND kept_bytes > $max_bytes)
          )
        RETURNING key
        """,
        {
            "tenant": tenant,
            "namespace": namespace,
            "max_entries": max_entries,
            "max_bytes": max_bytes,
        },
    ).fetchall()
    return [key for (key,) in rows]
