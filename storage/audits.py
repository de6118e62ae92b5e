"""Auditing answers served from another request, on the partition's own traffic.

`evaluate` measures the verifier on labelled workloads; an audit measures it where it
matters, on a namespace's real requests. A share of the answers that came from another
request (paths semantic and folded; `semantic.audit_rate` per namespace) is recomputed
with the model and compared with what was served. Which requests are audited follows
from the partition and the key alone, so a re-run audits the same ones and other days
other texts. An audit that found a different answer is kept when the partition is
re-run (the re-run recomputes that answer, so the request is no longer audited): a
fixed partition still counts what its audit found.

Only answers that say one thing can be compared: a label. Generated text differs
between two wordings of one question even when both answers are right, so such
answers are recorded as not comparable rather than guessed at.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable

import duckdb
import polars as pl

from storage.wrong_answers import REPORTABLE_PATHS

# Every answer from another request, with what the model needs to recompute it.
_ANSWERED_BY_ANOTHER = """
SELECT o.request_id, o.tenant, o.namespace, o.path, o.served_key, o.answer_json AS served_answer_json,
       r.key, r.model, r.model_version, r.params_json, r.prefix, r.input
FROM request_outcomes o JOIN model_requests r USING (partition, request_id)
WHERE o.partition = ? AND o.path IN (SELECT unnest(?::VARCHAR[]))
    AND o.served_key <> r.key  -- an identical request folded into one call got the model's own answer
ORDER BY o.request_id
"""


def audited_share(partition: str, key: bytes) -> float:
    """Where a request falls in [0, 1) on its day: it is audited when this is below the rate."""
    digest = hashlib.sha256(partition.encode() + key).digest()
    # 53 bits: a float holds them exactly, so the share stays below 1.
    return (int.from_bytes(digest[:8], "big") >> 11) / 2**53


def audit_sample(
    con: duckdb.DuckDBPyConnection, partition: str, audit_rate: Callable[[str, str], float]
) -> pl.DataFrame:
    """The partition's answers from another request chosen for audit; `audit_rate(tenant,
    namespace)` is the share to audit in that namespace. Raises ValueError for a partition
    whose outcomes are not built yet."""
    answered = con.sql(_ANSWERED_BY_ANOTHER, params=[partition, list(REPORTABLE_PATHS)]).pl()
    if not answered.height and _outcomes_missing(con, partition):
        raise ValueError(
            f"partition {partition} has requests but no request_outcomes: materialize cache_report "
            "for it before auditing it"
        )
    rates = functools.lru_cache(maxsize=None)(audit_rate)
    chosen = [
        audited_share(partition, key) < rates(tenant, namespace)
        for key, tenant, namespace in answered.select("key", "tenant", "namespace").iter_rows()
    ]
    return answered.filter(pl.Series(chosen, dtype=pl.Boolean))


def _outcomes_missing(con: duckdb.DuckDBPyConnection, partition: str) -> bool:
    (requests, outcomes), *_ = con.execute(
        "SELECT (SELECT count(*) FROM model_requests WHERE partition = ?), "
        "(SELECT count(*) FROM request_outcomes WHERE partition = ?)",
        [partition, partition],
    ).fetchall()
    return requests > 0 and outcomes == 0


def record_audits(con: duckdb.DuckDBPyConnection, partition: str, audits: pl.DataFrame) -> pl.DataFrame:
    """Replace the partition's audit rows, except those that found a different answer (the
    re-run they ask for no longer audits them); returns the partition's rows after."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            "DELETE FROM semantic_audits WHERE partition = ? AND agreed IS DISTINCT FROM false", [partition]
        )
        if audits.height:
            con.register("new_audits", audits.with_columns(partition=pl.lit(partition)).to_arrow())
            con.execute(
                """
                INSERT INTO semantic_audits BY NAME
                SELECT * FROM new_audits n
                WHERE NOT EXISTS (
                    SELECT 1 FROM semantic_audits s
                    WHERE s.partition = n.partition AND s.request_id = n.request_id
                        AND s.served_key = n.served_key
                )
                """
            )
            con.unregister("new_audits")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return con.sql(
        "SELECT * FROM semantic_audits WHERE partition = ? ORDER BY request_id", params=[partition]
    ).pl()


def comparable_answer(answer_json: str | None) -> str | None:
    """What two answers must share to agree: the label, where the answer has one."""
    if answer_json is None:
        return None
    answer = json.loads(answer_json)
    label = answer.get("label") if isinstance(answer, dict) else None
    return None if label is None else str(label)


def compared(sample: pl.DataFrame, recomputed: pl.DataFrame) -> pl.DataFrame:
    """One audit row per sampled request: sample as audit_sample gives it, recomputed as
    inference.miss_runner.answer_misses gives it (request_id, answer_json, error,
    device_seconds). `agreed` is null where the answers cannot be compared or the call failed."""
    joined = sample.join(
        recomputed.select(
            "request_id", pl.col("answer_json").alias("audit_answer_json"), "error", "device_seconds"
        ),
        on="request_id",
        how="left",
    )
    agreed = []
    for served, fresh in joined.select("served_answer_json", "audit_answer_json").iter_rows():
        served_label, fresh_label = comparable_answer(served), comparable_answer(fresh)
        agreed.append(None if served_label is None or fresh_label is None else served_label == fresh_label)
    return joined.select(
        "request_id",
        "tenant",
        "namespace",
        "path",
        "served_key",
        "served_answer_json",
        "audit_answer_json",
        pl.Series("agreed", agreed, dtype=pl.Boolean),
        "error",
        pl.col("device_seconds").fill_null(0.0),
    )


def audit_figures(audits: pl.DataFrame) -> dict:
    """The audit's counts, for the materialization's metadata."""
    comparable = audits.filter(pl.col("agreed").is_not_null())
    disagreed = comparable.filter(~pl.col("agreed")).height
    return {
        "audited": audits.height,
        "comparable": comparable.height,
        "not_recomputed": audits.filter(pl.col("error").is_not_null()).height,
        "disagreed": disagreed,
        "agreement_rate": (comparable.height - disagreed) / comparable.height if comparable.height else None,
        "audit_device_seconds": float(audits["device_seconds"].sum()) if audits.height else 0.0,
    }
