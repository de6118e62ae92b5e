"""Wrong answers reported by reviewers: a reported pairing is never served again.

The verifier is not perfect (README, "How good it is"): now and then a request is
answered by an entry, or folded into a look-alike's call, that means something else.
A reviewer who finds one reports it by partition and request id. The report keeps
the request's text, scope and vector, and the key of the entry (or folding leader)
that answered it.

From then on that key does not answer a request that is *like the reported one*:
the same text, or a request the reported one would itself answer under the
namespace's settings (similar at its threshold and, where verification is on,
accepted by the verifier). The reported request and the entry differ, so whatever
means the same as the reported request differs from the entry too; other requests
are still served by the entry. Re-materializing the partition recomputes the
reported request's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import polars as pl

from storage.keys import normalized_text
from storage.lookalikes import Verify

# Paths whose answer came from another request; only those can be reported.
REPORTABLE_PATHS = ("semantic", "folded")

_REPORTED_REQUEST = """
SELECT o.partition, o.request_id, o.tenant, o.namespace, o.path, o.served_key,
       r.input AS request_text, r.semantic_scope, m.vector AS request_vector,
       coalesce(
           (SELECT e.input_text FROM cache_entries e WHERE e.key = o.served_key),
           (SELECT any_value(l.input) FROM model_requests l WHERE l.key = o.served_key)
       ) AS served_text
FROM request_outcomes o
JOIN model_requests r USING (partition, request_id)
LEFT JOIN request_embeddings m USING (partition, request_id)
WHERE o.partition = ? AND o.request_id = ?
"""


@dataclass(frozen=True)
class Reports:
    """Reported requests, grouped by the key that must not answer requests like them."""

    by_key: dict[bytes, list[dict]]

    def __bool__(self) -> bool:
        return bool(self.by_key)


def report_wrong_answer(
    con: duckdb.DuckDBPyConnection, partition: str, request_id: str, note: str | None, now: datetime
) -> dict:
    """Record that the answer of one request was wrong; reporting it again changes nothing.

    Returns what was recorded. Raises ValueError, saying what to do, for a request that
    is not in the partition or whose answer did not come from another request."""
    found = con.execute(_REPORTED_REQUEST, [partition, request_id]).fetchall()
    if not found:
        raise ValueError(
            f"no request {request_id!r} in partition {partition}: its requests and how each was "
            f"answered are in request_outcomes (SELECT request_id, path FROM request_outcomes "
            f"WHERE partition = '{partition}')"
        )
    columns = [d[0] for d in con.description]
    row = dict(zip(columns, found[0], strict=True))
    if row["path"] not in REPORTABLE_PATHS:
        raise ValueError(
            f"request {request_id!r} of {partition} was answered by path {row['path']!r}, not by "
            f"another request: only {' and '.join(REPORTABLE_PATHS)} answers can be reported "
            "(an exact hit is the same request: clear its namespace to recompute it)"
        )
    if row["request_vector"] is None:
        raise ValueError(f"request {request_id!r} of {partition} has no embedding to report it by")
    report = {
        **row,
        "note": note,
        "reported_at": now,
    }
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            "DELETE FROM wrong_answer_reports WHERE partition = ? AND request_id = ?", [partition, request_id]
        )
        frame = pl.DataFrame([report], schema_overrides={"served_key": pl.Binary})
        con.register("incoming_report", frame.to_arrow())
        con.execute("INSERT INTO wrong_answer_reports BY NAME SELECT * FROM incoming_report")
        con.unregister("incoming_report")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return {name: value for name, value in report.items() if name != "request_vector"}


def reports_against(con: duckdb.DuckDBPyConnection, keys: Sequence[bytes]) -> Reports:
    """The reports whose served key is one of `keys`, in one query."""
    if not keys:
        return Reports({})
    found = con.execute(
        """
        SELECT served_key, request_text, semantic_scope, request_vector
        FROM wrong_answer_reports
        WHERE served_key IN (SELECT unnest(?::BLOB[]))
        """,
        [list(dict.fromkeys(keys))],
    ).fetchall()
    by_key: dict[bytes, list[dict]] = {}
    for key, text, scope, vector in found:
        by_key.setdefault(key, []).append(
            {"text": text, "scope": scope, "vector": np.asarray(vector, dtype=np.float32)}
        )
    return Reports(by_key)


@dataclass(frozen=True)
class Asker:
    """A request that may be answered by a reported key, with its namespace's settings."""

    text: str
    scope: str
    vector: np.ndarray
    threshold: float
    verify: bool
    verify_threshold: float


def _within_threshold(asker: Asker, report: dict) -> bool:
    """Close enough for the reported request to answer the asker (same scope, so the same
    embedding model and namespace)."""
    return report["scope"] == asker.scope and float(asker.vector @ report["vector"]) >= asker.threshold


def like_a_reported_request(
    askers: Sequence[Asker], keys: Sequence[Sequence[bytes]], reports: Reports, verify: Verify | None
) -> list[set[bytes]]:
    """For each asker, which of its candidate keys must not answer it: those with a report
    by a request the asker is like. The verifier reads every pair it needs in one call."""
    blocked: list[set[bytes]] = [set() for _ in askers]
    to_verify: list[tuple[int, bytes, str]] = []
    for row, (asker, candidate_keys) in enumerate(zip(askers, keys, strict=True)):
        for key in dict.fromkeys(candidate_keys):
            for report in reports.by_key.get(key, ()):
                if normalized_text(report["text"]) == normalized_text(asker.text):
                    blocked[row].add(key)
                elif not _within_threshold(asker, report):
                    continue
                elif asker.verify and verify is not None:
                    to_verify.append((row, key, report["text"]))
                else:
                    blocked[row].add(key)
    if to_verify:
        scores = verify([(askers[row].text, text) for row, _, text in to_verify])
        for (row, key, _), score in zip(to_verify, scores, strict=True):
            if score >= askers[row].verify_threshold:
                blocked[row].add(key)
    return blocked


def _askers(requests: pl.DataFrame, vectors: np.ndarray) -> list[Asker]:
    """requests: input, semantic_scope, semantic_threshold, semantic_verify,
    semantic_verify_threshold; one row per vector."""
    return [
        Asker(text, scope, vector, threshold, bool(verify_on), verify_threshold or 0.0)
        for text, scope, threshold, verify_on, verify_threshold, vector in zip(
            requests["input"].to_list(),
            requests["semantic_scope"].to_list(),
            requests["semantic_threshold"].to_list(),
            requests["semantic_verify"].to_list(),
            requests["semantic_verify_threshold"].to_list(),
            vectors,
            strict=True,
        )
    ]


def without_reported(
    con: duckdb.DuckDBPyConnection,
    requests: pl.DataFrame,
    vectors: np.ndarray,
    candidates: list[list],
    verify: Verify | None,
) -> list[list]:
    """Each request's cached candidates (storage.lookalikes.External, ref = (key, answer))
    less the entries reported as a wrong answer to a request like it."""
    reports = reports_against(con, [candidate.ref[0] for found in candidates for candidate in found])
    if not reports:
        return candidates
    keys = [[candidate.ref[0] for candidate in found] for found in candidates]
    blocked = like_a_reported_request(_askers(requests, vectors), keys, reports, verify)
    return [
        [candidate for candidate in found if candidate.ref[0] not in blocked_keys]
        for found, blocked_keys in zip(candidates, blocked, strict=True)
    ]


def blocked_within(
    group: pl.DataFrame, vectors: np.ndarray, reports: Reports, verify: Verify | None
) -> frozenset[tuple[int, int]]:
    """(row, earlier row) pairs of one scope's misses (key, input, semantic_* settings) where
    the earlier row's key was reported as a wrong answer to a request like the row."""
    keys = group["key"].to_list()
    reported_rows = [row for row, key in enumerate(keys) if key in reports.by_key]
    if not reported_rows:
        return frozenset()
    candidate_keys = [[keys[j] for j in reported_rows if j < row] for row in range(len(keys))]
    blocked = like_a_reported_request(_askers(group, vectors), candidate_keys, reports, verify)
    return frozenset(
        (row, j) for row, blocked_keys in enumerate(blocked) for j in reported_rows if keys[j] in blocked_keys
    )
