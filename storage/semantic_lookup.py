"""The semantic half of a look-up: vector search, then a served answer only after checks.

A neighbour is served only if (1) its similarity is at or above the namespace's
threshold, (2) its entry is committed in the exact store, unexpired and visible,
and (3) its stored canonical request agrees with the new one on everything but
the input. (3) re-checks the vector store's prefilter, so tenant isolation does
not rest on one mechanism.
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
import numpy as np
import polars as pl

from storage.exact_store import committed_live_keys
from storage.semantic_index import SemanticIndex

RESULT_SCHEMA = {
    "request_id": pl.String,
    "hit": pl.Boolean,
    "best_similarity": pl.Float64,
    "served_key": pl.Binary,
    "answer_json": pl.String,
}


def _context(canonical_request: str) -> list:
    """Everything but the input (the canonical array's last element)."""
    return json.loads(canonical_request)[:-1]


def lookup_semantic(
    con: duckdb.DuckDBPyConnection,
    index: SemanticIndex,
    requests: pl.DataFrame,
    vectors: np.ndarray,
    now: datetime,
    before_partition: str | None = None,
) -> pl.DataFrame:
    """requests: request_id, canonical_request, semantic_scope, semantic_threshold, one row
    per vector. Returns request_id, hit, best_similarity, served_key, answer_json."""
    if not requests.height:
        return pl.DataFrame(schema=RESULT_SCHEMA)
    neighbours = index.search(
        requests["semantic_scope"].to_list(), vectors, before_partition=before_partition
    )
    live = committed_live_keys(con, [n.key for n in neighbours], now, before_partition=before_partition)
    entries = {
        row["key"]: (_context(row["canonical_request"]), row["answer_json"])
        for row in live.iter_rows(named=True)
    }
    best: dict[int, tuple[float, bytes]] = {}
    for neighbour in neighbours:
        entry = entries.get(neighbour.key)
        if entry is None:
            continue  # a vector whose entry is not committed (or expired) is never served
        canonical = requests["canonical_request"][neighbour.query_row]
        if entry[0] != _context(canonical):
            continue
        current = best.get(neighbour.query_row)
        if current is None or neighbour.similarity > current[0]:
            best[neighbour.query_row] = (neighbour.similarity, neighbour.key)
    rows = []
    thresholds = requests["semantic_threshold"].to_list()
    for row, request_id in enumerate(requests["request_id"].to_list()):
        similarity, key = best.get(row, (None, None))
        hit = similarity is not None and similarity >= thresholds[row]
        rows.append(
            {
                "request_id": request_id,
                "hit": hit,
                "best_similarity": similarity,
                "served_key": key if hit else None,
                "answer_json": entries[key][1] if hit else None,
            }
        )
    return pl.DataFrame(rows, schema=RESULT_SCHEMA, orient="row")
