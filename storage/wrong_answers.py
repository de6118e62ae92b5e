"""Wrong answers reported by reviewers or the audit: a reported pairing is not served again.

The verifier is not perfect (README, "How good it is"): now and then a request is
answered by an entry, or folded into a look-alike's call, that means something else.
A reviewer who finds one reports it by partition and request id, and so does the
partition's audit when the model labels the request otherwise (storage/audits.py); a
reviewer can withdraw a report, and the audit does not file it again. The report keeps
both sides: the request (text, key, vector) and what answered it (the entry's or
folding leader's key, text and vector), in one semantic scope.

From then on, neither side answers a request *like the other side*: the served key
does not answer requests like the reported one, and the reported request's own key
(the entry it gets once recomputed) does not answer requests like the served text.
"Like" means the same text, or close enough for that side to answer it under the
namespace's settings: similar at its threshold and, where the namespace verifies,
accepted by the verifier. The two sides differ, so whatever means the same as one
differs from the other; every other request is served as before. Re-materializing the
partition recomputes the reported request's answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import duckdb
import numpy as np
import polars as pl

from storage.keys import normalized_text
from storage.lookalikes import Verify, unread_pairs
from storage.scope_search import cosines

# Paths whose answer came from another request; only those can be reported.
REPORTABLE_PATHS = ("semantic", "folded")
_NOT_REPORTABLE = {
    "quarantined": "was quarantined (its reason is in the quarantine table): nothing was served to it",
    "exact": (
        "was an exact hit: it got the model's own answer to this very request, so a wrong answer "
        "there is the model's, not the cache's"
    ),
    "model": "was answered by its own model call (recomputed already, if it was reported before)",
    "failed": "failed in its model call: nothing was served to it",
}

# The reported request and what answered it, with both vectors where they are stored (the
# served side's comes from the partition that computed it, and may be gone).
_REPORTED_REQUEST = """
SELECT o.partition, o.request_id, o.tenant, o.namespace, o.path, o.served_key,
       r.key AS request_key, r.input AS request_text, r.semantic_scope, m.vector AS request_vector,
       r.embedding_model,
       coalesce(
           (SELECT e.input_text FROM cache_entries e WHERE e.key = o.served_key),
           (SELECT any_value(l.input) FROM model_requests l WHERE l.key = o.served_key)
       ) AS served_text,
       (SELECT any_value(v.vector)
        FROM model_requests l JOIN request_embeddings v USING (partition, request_id)
        WHERE l.key = o.served_key AND l.embedding_model = r.embedding_model
            AND v.model_fingerprint IS NOT DISTINCT FROM m.model_fingerprint) AS served_vector
FROM request_outcomes o
JOIN model_requests r USING (partition, request_id)
LEFT JOIN request_embeddings m USING (partition, request_id)
WHERE o.partition = ? AND o.request_id = ? AND o.path <> 'quarantined'
"""


@dataclass(frozen=True)
class Side:
    """One side of a report: the other side's key must not answer requests like it."""

    text: str
    scope: str
    vector: np.ndarray | None  # None where it is no longer stored: then only the same text
    embedding_model: str | None = None  # None in reports recorded before it was kept


@dataclass(frozen=True)
class Reports:
    """By key, the sides of reports that key must not answer requests like."""

    by_key: dict[bytes, list[Side]]

    def __bool__(self) -> bool:
        return bool(self.by_key)


@dataclass(frozen=True)
class Asker:
    """A request that a reported key may answer, with its namespace's settings."""

    text: str
    scope: str
    vector: np.ndarray
    threshold: float
    verify: bool
    verify_threshold: float
    embedding_model: str | None = None


def report_wrong_answer(
    con: duckdb.DuckDBPyConnection,
    partition: str,
    request_id: str,
    note: str | None,
    now: datetime,
    reported_by: str = "reviewer",
) -> dict | None:
    """Record that the answer a request got was wrong. A different wrong answer to the same
    request (after a re-run) is a report of its own, and both hold. Reporting the same answer
    again keeps the first report's time; a reviewer's note replaces the old one and puts a
    withdrawn report back in force. The audit (`reported_by="audit"`) never overrules a
    reviewer: it reports nothing where a reviewer withdrew the same pairing, and returns None.

    Returns what was recorded (less the vectors), with `already_reported` true where this
    answer to this request had been reported before. Raises ValueError, saying what to do,
    for a request that did not get its answer from another request."""
    row = _reportable(con, partition, request_id)
    if reported_by == "audit" and _overruled(con, row["request_key"], row["served_key"]):
        return None
    report = {**row, "note": note, "reported_by": reported_by, "reported_at": now, "withdrawn_at": None}
    names = list(report)
    (inserted,) = con.execute(
        f"INSERT INTO wrong_answer_reports ({', '.join(names)}) "
        f"SELECT {', '.join('?' * len(names))} WHERE NOT EXISTS ("
        "    SELECT 1 FROM wrong_answer_reports WHERE partition = ? AND request_id = ? AND served_key = ?)",
        [*(report[name] for name in names), partition, request_id, row["served_key"]],
    ).fetchone()
    if reported_by != "audit":
        con.execute(
            """
            UPDATE wrong_answer_reports
            SET note = coalesce(?, note), reported_by = ?, withdrawn_at = NULL
            WHERE partition = ? AND request_id = ? AND served_key = ?
            """,
            [note, reported_by, partition, request_id, row["served_key"]],
        )
    stored = con.execute(
        "SELECT note, reported_by, reported_at FROM wrong_answer_reports "
        "WHERE partition = ? AND request_id = ? AND served_key = ?",
        [partition, request_id, row["served_key"]],
    ).fetchall()[0]
    report.update(zip(("note", "reported_by", "reported_at"), stored, strict=True))
    # Whoever acts on new reports (the audit's recompute) must not act twice on one.
    report["already_reported"] = inserted == 0
    return {name: value for name, value in report.items() if not name.endswith("_vector")}


def report_summary(report: dict) -> str:
    """What a recorded report (as report_wrong_answer returns it) means, in one sentence."""
    return (
        f"reported: {report['request_text']!r} was answered ({report['path']}) by {report['served_text']!r}; "
        f"in {report['tenant']}/{report['namespace']} neither answers requests like the other any more"
    )


def _overruled(con: duckdb.DuckDBPyConnection, request_key: bytes, served_key: bytes) -> bool:
    """A reviewer withdrew a report of this very pairing (on any day)."""
    found = con.execute(
        "SELECT count(*) FROM wrong_answer_reports "
        "WHERE request_key = ? AND served_key = ? AND withdrawn_at IS NOT NULL",
        [request_key, served_key],
    ).fetchall()
    return found[0][0] > 0


def withdraw_reports(con: duckdb.DuckDBPyConnection, partition: str, request_id: str, now: datetime) -> int:
    """Take back the reports made on one request's answers (made by mistake, or an audit a
    reviewer overrules). They stay in the table, withdrawn, so the audit does not file them
    again. Returns how many were withdrawn; raises ValueError where none was in force."""
    withdrawn = con.execute(
        "UPDATE wrong_answer_reports SET withdrawn_at = ? "
        "WHERE partition = ? AND request_id = ? AND withdrawn_at IS NULL RETURNING 1",
        [now, partition, request_id],
    ).fetchall()
    if not withdrawn:
        raise ValueError(
            f"no report in force on request {request_id!r} of {partition}: nothing to withdraw "
            "(wrong_answer_reports lists what was reported, withdrawn_at what was taken back)"
        )
    return len(withdrawn)


def withdraw_namespace_reports(con: duckdb.DuckDBPyConnection, tenant: str, namespace: str) -> int:
    """Delete every report of one tenant's namespace. Clearing a namespace keeps its reports
    (they say which requests differ, whatever is cached); a demo that starts afresh does not."""
    deleted = con.execute(
        "DELETE FROM wrong_answer_reports WHERE tenant = ? AND namespace = ? RETURNING 1", [tenant, namespace]
    ).fetchall()
    return len(deleted)


def _reportable(con: duckdb.DuckDBPyConnection, partition: str, request_id: str) -> dict:
    # A landed row that repeated an id is quarantined under that id: the request that was
    # served is the one to report.
    outcome = con.execute(
        "SELECT path FROM request_outcomes WHERE partition = ? AND request_id = ? "
        "ORDER BY path = 'quarantined'",
        [partition, request_id],
    ).fetchall()
    if not outcome:
        materialized = con.execute(
            "SELECT count(*) FROM request_outcomes WHERE partition = ?", [partition]
        ).fetchall()[0][0]
        if not materialized:
            raise ValueError(f"partition {partition} has no request outcomes: materialize it first")
        raise ValueError(
            f"no request {request_id!r} in partition {partition}: its requests and how each was "
            f"answered are in request_outcomes (SELECT request_id, path FROM request_outcomes "
            f"WHERE partition = '{partition}')"
        )
    path = outcome[0][0]
    if path not in REPORTABLE_PATHS:
        reason = _NOT_REPORTABLE.get(path, f"has path {path!r}")
        raise ValueError(
            f"request {request_id!r} of {partition} {reason}; only answers that came from another "
            f"request ({' or '.join(REPORTABLE_PATHS)}) can be reported"
        )
    found = con.execute(_REPORTED_REQUEST, [partition, request_id]).fetchall()
    row = dict(zip([d[0] for d in con.description], found[0], strict=True))
    if row["served_key"] == row["request_key"]:
        raise ValueError(
            f"request {request_id!r} of {partition} was folded into the call of an identical request: "
            "it got the model's own answer to this very request, so a wrong answer there is the model's"
        )
    if row["request_vector"] is None:
        raise ValueError(
            f"request {request_id!r} of {partition} has no stored embedding: re-materialize the "
            "partition's request_embeddings, then report it"
        )
    return row


def reports_against(con: duckdb.DuckDBPyConnection, keys: Sequence[bytes]) -> Reports:
    """The report sides that any of `keys` must not answer requests like, in one query."""
    if not keys:
        return Reports({})
    found = con.execute(
        """
        SELECT served_key AS key, request_text AS text, semantic_scope, request_vector AS vector,
               embedding_model
        FROM wrong_answer_reports WHERE served_key IN (SELECT unnest(?::BLOB[])) AND withdrawn_at IS NULL
        UNION ALL
        SELECT request_key, served_text, semantic_scope, served_vector, embedding_model
        FROM wrong_answer_reports WHERE request_key IN (SELECT unnest(?::BLOB[]))
            AND served_text IS NOT NULL AND withdrawn_at IS NULL
        """,
        [list(dict.fromkeys(keys))] * 2,
    ).fetchall()
    by_key: dict[bytes, list[Side]] = {}
    for key, text, scope, vector, embedding_model in found:
        stored = None if vector is None else np.asarray(vector, dtype=np.float32)
        by_key.setdefault(key, []).append(Side(text, scope, stored, embedding_model))
    return Reports(by_key)


def _within_threshold(asker: Asker, side: Side) -> bool:
    """Close enough for the reported side to answer the asker. The key both are answered by
    pins tenant, namespace, model, version, params and prefix; what must also agree for two
    vectors to compare is the embedding model. Not the whole scope: a namespace that starts
    or stops keeping languages apart, or a new rule placing languages, moves the asker's
    scope, and the report then blocked only its very text (a review's finding). A report
    recorded before its embedding model was kept compares by scope, as it did."""
    if side.vector is None:
        return False
    if side.embedding_model is None or asker.embedding_model is None:
        comparable = side.scope == asker.scope
    else:
        comparable = side.embedding_model == asker.embedding_model
    return comparable and float(cosines(asker.vector[None, :], side.vector[None, :])[0, 0]) >= asker.threshold


def blocked_by_reports(
    askers: Sequence[Asker], keys: Sequence[Sequence[bytes]], reports: Reports, verify: Verify | None
) -> list[set[bytes]]:
    """For each asker, the keys among its candidates that must not answer it: those with a
    report side the asker is like. The verifier reads every pair it needs in one call."""
    blocked: list[set[bytes]] = [set() for _ in askers]
    to_verify: list[tuple[int, bytes, str]] = []
    for row, (asker, candidate_keys) in enumerate(zip(askers, keys, strict=True)):
        for key in dict.fromkeys(candidate_keys):
            for side in reports.by_key.get(key, ()):
                if normalized_text(side.text) == normalized_text(asker.text):
                    blocked[row].add(key)
                elif not _within_threshold(asker, side):
                    continue
                elif asker.verify and verify is not None:
                    to_verify.append((row, key, side.text))
                else:
                    blocked[row].add(key)
    if to_verify:
        pairs = [(askers[row].text, text) for row, _, text in to_verify]
        scores = verify(pairs, at_least=[askers[row].verify_threshold for row, _, _ in to_verify])
        # A pair too long for the verifier to read scores 0, which here would let the reported
        # answer through: it counts as alike, so the report blocks.
        unread = unread_pairs(verify, pairs)
        for (row, key, _), score, too_long in zip(to_verify, scores, unread, strict=True):
            if too_long or score >= askers[row].verify_threshold:
                blocked[row].add(key)
    return blocked


def _askers(requests: pl.DataFrame, vectors: np.ndarray) -> list[Asker]:
    """requests: input, semantic_scope, semantic_threshold, semantic_verify,
    semantic_verify_threshold and, where known, embedding_model; one row per vector."""
    if "embedding_model" in requests.columns:
        embedding_models = requests["embedding_model"].to_list()
    else:
        embedding_models = [None] * requests.height
    return [
        Asker(text, scope, vector, threshold, bool(verify_on), verify_threshold or 0.0, embedding_model)
        for text, scope, threshold, verify_on, verify_threshold, embedding_model, vector in zip(
            requests["input"].to_list(),
            requests["semantic_scope"].to_list(),
            requests["semantic_threshold"].to_list(),
            requests["semantic_verify"].to_list(),
            requests["semantic_verify_threshold"].to_list(),
            embedding_models,
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
    less those a report keeps from answering it."""
    reports = reports_against(con, [candidate.ref[0] for found in candidates for candidate in found])
    if not reports:
        return candidates
    keys = [[candidate.ref[0] for candidate in found] for found in candidates]
    blocked = blocked_by_reports(_askers(requests, vectors), keys, reports, verify)
    return [
        [candidate for candidate in found if candidate.ref[0] not in blocked_keys]
        for found, blocked_keys in zip(candidates, blocked, strict=True)
    ]


def blocked_within(
    group: pl.DataFrame, vectors: np.ndarray, verify: Verify | None, reports: Reports
) -> frozenset[tuple[int, int]]:
    """(row, earlier row) pairs of one scope's misses (key, input, semantic_* settings) where
    a report keeps the earlier row's key from answering the row (for folding)."""
    keys = group["key"].to_list()
    reported_rows = [row for row, key in enumerate(keys) if key in reports.by_key]
    if not reported_rows:
        return frozenset()
    candidate_keys = [[keys[j] for j in reported_rows if j < row] for row in range(len(keys))]
    blocked = blocked_by_reports(_askers(group, vectors), candidate_keys, reports, verify)
    return frozenset(
        (row, j) for row, blocked_keys in enumerate(blocked) for j in reported_rows if keys[j] in blocked_keys
    )
