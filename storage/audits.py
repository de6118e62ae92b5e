"""Auditing answers served from another request, on the partition's own traffic.

`evaluate` measures the verifier on labelled workloads; an audit measures it where it
matters, on a namespace's real requests. A share of the answers that came from another
request (paths semantic and folded; `semantic.audit_rate` per namespace) is recomputed
with the model and compared with what was served. Which requests are audited follows
from the partition and the key alone, so a re-run audits the same ones and other days
other texts. An audit that found a different answer is kept when the partition is
re-run (the re-run recomputes that answer, so the request is no longer audited): a
fixed partition still counts what its audit found.

Answers that say one thing are compared exactly: a label. Generated text differs
between two wordings of one question even when both answers are right, so the audit
records how alike the two texts are (the cosine of their vectors under the namespace's
embedding model) and counts them as different only below the namespace's
`semantic.audit_min_text_similarity`, where one is set; otherwise it stays not compared.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence

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
    re-run they ask for no longer audits them); returns the partition's rows after. Runs
    inside the caller's transaction: the audit files its reports in the same one, so a
    failure leaves neither (a report filed by a failed audit would read as old on the
    retry, and its recompute would never be asked for)."""
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


def generated_text(answer_json: str | None) -> str | None:
    """The text of an answer that has no label (a causal LM's), where it has one."""
    if answer_json is None:
        return None
    answer = json.loads(answer_json)
    if not isinstance(answer, dict) or answer.get("label") is not None:
        return None
    text = answer.get("text")
    return text if isinstance(text, str) else None


# (tenant, namespace, served texts, recomputed texts) -> the cosine of each pair of texts
TextSimilarity = Callable[[str, str, list[str], list[str]], Sequence[float]]


def compared(
    sample: pl.DataFrame,
    recomputed: pl.DataFrame,
    text_similarity: TextSimilarity | None = None,
    min_text_similarity: Callable[[str, str], float | None] = lambda tenant, namespace: None,
) -> pl.DataFrame:
    """One audit row per sampled request: sample as audit_sample gives it, recomputed as
    inference.miss_runner.answer_misses gives it (request_id, answer_json, error,
    device_seconds). Labels are compared as they are; generated texts by
    `text_similarity`, against `min_text_similarity(tenant, namespace)` where that is not
    None. `agreed` is null where the answers are not compared or the call failed."""
    joined = sample.join(
        recomputed.select(
            "request_id", pl.col("answer_json").alias("audit_answer_json"), "error", "device_seconds"
        ),
        on="request_id",
        how="left",
    )
    similarity = _text_similarities(joined, text_similarity)
    agreed = []
    for (tenant, namespace, served, fresh), text_similar in zip(
        joined.select("tenant", "namespace", "served_answer_json", "audit_answer_json").iter_rows(),
        similarity,
        strict=True,
    ):
        served_label, fresh_label = comparable_answer(served), comparable_answer(fresh)
        minimum = None if text_similar is None else min_text_similarity(tenant, namespace)
        if served_label is not None and fresh_label is not None:
            agreed.append(served_label == fresh_label)
        elif minimum is not None:
            agreed.append(text_similar >= minimum)
        else:
            agreed.append(None)
    return joined.with_columns(pl.Series("answer_similarity", similarity, dtype=pl.Float64)).select(
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
        "answer_similarity",
    )


def _text_similarities(joined: pl.DataFrame, text_similarity: TextSimilarity | None) -> list[float | None]:
    """Per row, the similarity of the served and the recomputed text; None where either is
    not generated text. One call per namespace (each may have its own embedding model).
    Semantic reuse is off for text its embedding model does not cover, so what is audited
    is covered."""
    similarity: list[float | None] = [None] * joined.height
    if text_similarity is None:
        return similarity
    rows_of: dict[tuple[str, str], list[tuple[int, str, str]]] = {}
    for i, (tenant, namespace, served, fresh) in enumerate(
        joined.select("tenant", "namespace", "served_answer_json", "audit_answer_json").iter_rows()
    ):
        served_text, fresh_text = generated_text(served), generated_text(fresh)
        if served_text is not None and fresh_text is not None:
            rows_of.setdefault((tenant, namespace), []).append((i, served_text, fresh_text))
    for (tenant, namespace), rows in rows_of.items():
        values = text_similarity(tenant, namespace, [r[1] for r in rows], [r[2] for r in rows])
        for (i, _, _), value in zip(rows, values, strict=True):
            similarity[i] = float(value)
    return similarity


def disagreement_note(served_answer_json: str, audit_answer_json: str, similarity: float | None) -> str:
    """Why the audit reports a served answer, in the report's note."""
    fresh_label, served_label = comparable_answer(audit_answer_json), comparable_answer(served_answer_json)
    if fresh_label is not None and served_label is not None:
        return f"audit: the model answers {fresh_label!r}, the cache served {served_label!r}"
    return (
        f"audit: the recomputed text is {similarity:.2f} similar to the served one, below the "
        "namespace's semantic.audit_min_text_similarity"
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
        # Generated text: how alike the served and the recomputed texts were (null: none).
        "median_answer_similarity": audits["answer_similarity"].median() if audits.height else None,
    }
