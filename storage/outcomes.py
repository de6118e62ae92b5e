"""The per-request outcome table and the partition report computed from it.

Every request of a partition, quarantined ones included, ends in exactly one row;
every figure of the report is a query over these rows, so they always agree.
"""

from __future__ import annotations

from typing import Any

import duckdb
import polars as pl

from storage.exact_store import replace_partition

_OUTCOMES_QUERY = """
WITH call_costs AS (
    -- Mean measured device seconds of one model call, per model version, over this partition
    -- and the ones before it, so a day's savings stay as reported when later days run (over
    -- every partition, a backfill of later days rewrote them); over all partitions only for a
    -- version with no call measured up to this one (a day answered wholly from a warm cache).
    SELECT k.model, k.model_version,
           coalesce(avg(o.device_seconds) FILTER (k.partition <= $partition), avg(o.device_seconds))
               AS mean_call_seconds
    FROM inference_outputs o JOIN model_requests k USING (partition, request_id)
    WHERE o.path = 'model'
    GROUP BY ALL
),
resolved AS (
    SELECT k.partition, k.request_id, k.tenant, k.namespace, k.model, k.model_version, k.key,
           CASE WHEN e.hit THEN 'exact' WHEN s.hit THEN 'semantic' ELSE i.path END AS path,
           CASE WHEN e.hit THEN e.served_key WHEN s.hit THEN s.served_key ELSE i.served_key END
               AS served_key,
           s.best_similarity,
           coalesce(e.lookup_seconds, 0) + coalesce(m.lookup_seconds, 0)
               + coalesce(s.lookup_seconds, 0) AS lookup_seconds,
           CASE WHEN e.hit OR s.hit THEN 0 ELSE coalesce(i.device_seconds, 0) END
               AS device_seconds,
           CASE WHEN e.hit THEN e.answer_json WHEN s.hit THEN s.answer_json ELSE i.answer_json END
               AS answer_json,
           CASE WHEN e.hit OR s.hit THEN NULL ELSE i.error END AS error,
           c.mean_call_seconds
    FROM model_requests k
    LEFT JOIN exact_lookups e USING (partition, request_id)
    LEFT JOIN request_embeddings m USING (partition, request_id)
    LEFT JOIN semantic_lookups s USING (partition, request_id)
    LEFT JOIN inference_outputs i USING (partition, request_id)
    LEFT JOIN call_costs c ON c.model = k.model AND c.model_version = k.model_version
    WHERE k.partition = $partition
)
SELECT partition, request_id, tenant, namespace, model, model_version, key, path, served_key,
       best_similarity, lookup_seconds, device_seconds,
       -- Served without a call of its own: it saved one mean call of its model version.
       CASE WHEN path IN ('exact', 'semantic', 'folded') THEN coalesce(mean_call_seconds, 0)
            ELSE 0 END AS device_seconds_saved,
       answer_json, error
FROM resolved
UNION ALL
SELECT partition, request_id, NULL, NULL, NULL, NULL, NULL, 'quarantined', NULL, NULL,
       0, 0, 0, NULL, reason
FROM quarantine WHERE partition = $partition
"""

_REPORT_QUERY = """
SELECT count(*) AS requests,
       count(*) FILTER (path = 'quarantined') AS quarantined,
       count(*) FILTER (path = 'exact') AS exact_hits,
       count(*) FILTER (path = 'semantic') AS semantic_hits,
       count(*) FILTER (path = 'folded') AS folded,
       count(*) FILTER (path = 'model') AS model_calls,
       count(*) FILTER (path = 'failed') AS failed,
       count(*) FILTER (path = 'exact') / nullif(count(*) FILTER (path <> 'quarantined'), 0)
           AS exact_hit_rate,
       count(*) FILTER (path = 'semantic') / nullif(count(*) FILTER (path <> 'quarantined'), 0)
           AS semantic_hit_rate,
       count(*) FILTER (path IN ('exact', 'semantic'))
           / nullif(count(*) FILTER (path <> 'quarantined'), 0) AS hit_rate,
       coalesce(sum(device_seconds), 0) AS device_seconds_used,
       coalesce(sum(device_seconds_saved), 0) AS device_seconds_saved,
       coalesce(sum(lookup_seconds), 0) AS lookup_seconds
FROM request_outcomes WHERE partition = ?
"""


def build_outcomes(con: duckdb.DuckDBPyConnection, partition: str) -> pl.DataFrame:
    """Resolve every request of the partition into its outcome row and store them."""
    outcomes = con.sql(_OUTCOMES_QUERY, params={"partition": partition}).pl()
    unresolved = outcomes.filter(pl.col("path").is_null())
    if unresolved.height:
        raise RuntimeError(
            f"{unresolved.height} requests of {partition} have no outcome (e.g. "
            f"{unresolved['request_id'][0]!r}): materialize inference_outputs for this partition"
        )
    replace_partition(con, "request_outcomes", partition, outcomes)
    return outcomes


def partition_report(
    con: duckdb.DuckDBPyConnection, partition: str, price_by_model: dict[str, float]
) -> dict[str, Any]:
    """The partition's figures; ratios are None when their denominator is zero.

    price_by_model: the registry's price per device-hour of each model. A partition run
    under an earlier version is priced at it too: the registry names only the current
    version, and a device-hour of the old one was not free.
    """
    row = con.sql(_REPORT_QUERY, params=[partition]).pl().to_dicts()[0]
    money = con.execute(
        """
        SELECT model, sum(device_seconds) AS used, sum(device_seconds_saved) AS saved
        FROM request_outcomes WHERE partition = ? AND model IS NOT NULL GROUP BY ALL
        """,
        [partition],
    ).fetchall()
    cost_used = cost_saved = 0.0
    for model, used, saved in money:
        price_per_second = price_by_model.get(model, 0.0) / 3600.0
        cost_used += used * price_per_second
        cost_saved += saved * price_per_second
    return {
        "partition": partition,
        **{key: (float(value) if isinstance(value, float) else value) for key, value in row.items()},
        "device_cost_usd": cost_used,
        "money_saved_usd": cost_saved,
    }
