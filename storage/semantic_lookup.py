"""The semantic half of a look-up: vector search, then a served answer only after checks.

A neighbour is served only if (1) its similarity is at or above the namespace's
threshold, (2) its entry is committed in the exact store, unexpired and visible,
(3) its stored canonical request agrees with the new one on everything but the
input (this re-checks the vector store's prefilter, so tenant isolation does not
rest on one mechanism), and (4) where verification is on, the pair verifier
accepts the two inputs as meaning the same, and (5) no reviewer reported the entry
as a wrong answer to a request like this one (storage/wrong_answers.py). Among the
neighbours that pass, the one the verifier is surest of is served (the most similar
where it does not verify).
"""

from __future__ import annotations

import json
from datetime import datetime

import duckdb
import numpy as np
import polars as pl

from storage.exact_store import committed_live_keys
from storage.lookalikes import External, Verify, resolve_lookalikes
from storage.semantic_index import CANDIDATES_PER_QUERY, SemanticIndex
from storage.write_back import keys_without_live_entry
from storage.wrong_answers import without_reported

# How many neighbours a query asks the index for, of which the first CANDIDATES_PER_QUERY
# live ones are kept: vectors of entries that expired since the last write-back, or were
# removed without their vector, are skipped rather than let crowd out live entries. Where
# such vectors fill every place of a request left short of live ones, its scope's dead
# vectors are deleted there and then (an expired entry is deleted lazily, on read: the
# write-back would delete them after the look-up) and it searches again; where what fills
# them is not dead (entries a later partition rewrote, during a recompute of an older one),
# it searches SEARCH_GROWTH times deeper, up to MAX_SEARCH_DEPTH.
SEARCH_DEPTH = 4 * CANDIDATES_PER_QUERY
SEARCH_GROWTH = 8
MAX_SEARCH_DEPTH = 1024

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


def cached_candidates(
    con: duckdb.DuckDBPyConnection,
    index: SemanticIndex,
    requests: pl.DataFrame,
    vectors: np.ndarray,
    now: datetime,
    before_partition: str | None = None,
) -> list[list[External]]:
    """For each request row, the committed, live, same-context entries nearest it (any
    similarity), at most CANDIDATES_PER_QUERY, the most similar first (ties by key, so that
    the order the vectors were written in decides nothing).

    The index is asked for more than that: a vector whose entry expired or was removed since
    the last write-back would otherwise take the place of a live entry further down.
    External.ref is (key, answer_json).
    """
    scopes = requests["semantic_scope"].to_list()
    contexts = [_context(c) for c in requests["canonical_request"].to_list()]
    found: list[list[External]] = [[] for _ in range(requests.height)]
    rows, depth, swept = list(range(requests.height)), SEARCH_DEPTH, False
    while rows:
        neighbours = index.search(
            [scopes[r] for r in rows], vectors[rows], before_partition=before_partition, limit=depth
        )
        live = committed_live_keys(con, [n.key for n in neighbours], now, before_partition=before_partition)
        entries = {row["key"]: row for row in live.iter_rows(named=True)}
        returned = [0] * len(rows)
        for neighbour in sorted(neighbours, key=lambda n: (n.query_row, -n.similarity, n.key)):
            returned[neighbour.query_row] += 1
            row = rows[neighbour.query_row]
            entry = entries.get(neighbour.key)
            if entry is None:
                continue  # a vector whose entry is not committed (or expired) is never served
            if _context(entry["canonical_request"]) != contexts[row]:
                continue
            if len(found[row]) < CANDIDATES_PER_QUERY:
                found[row].append(
                    External(
                        entry["input_text"],
                        neighbour.similarity,
                        (entry["key"], entry["answer_json"]),
                        key=entry["key"],
                    )
                )
        # Rows short of candidates whose every returned place was taken: the scope may hold
        # live entries further down. Their scopes' dead vectors are deleted once and they
        # search again; after that, deeper, up to the limit.
        short = [
            i for i, row in enumerate(rows) if len(found[row]) < CANDIDATES_PER_QUERY and returned[i] == depth
        ]
        if not short or (swept and depth >= MAX_SEARCH_DEPTH):
            break
        rows = [rows[i] for i in short]
        if swept:
            depth = min(depth * SEARCH_GROWTH, MAX_SEARCH_DEPTH)
        else:
            index.delete_keys(
                keys_without_live_entry(con, index.keys_in_scopes(sorted({scopes[r] for r in rows})), now)
            )
            swept = True
        for row in rows:
            found[row] = []
    return found


def lookup_semantic(
    con: duckdb.DuckDBPyConnection,
    index: SemanticIndex,
    requests: pl.DataFrame,
    vectors: np.ndarray,
    now: datetime,
    verify: Verify | None,
    before_partition: str | None = None,
) -> pl.DataFrame:
    """requests: request_id, input, canonical_request, semantic_scope, semantic_threshold,
    semantic_verify, semantic_verify_threshold; one row per vector. `verify` scores input
    pairs; rows with semantic_verify false are not verified.
    Returns request_id, hit, best_similarity, served_key, answer_json."""
    if not requests.height:
        return pl.DataFrame(schema=RESULT_SCHEMA)
    candidates = cached_candidates(con, index, requests, vectors, now, before_partition)
    candidates = without_reported(con, requests, vectors, candidates, verify)
    results: dict[int, dict] = {}
    for verify_on, part in requests.with_row_index("row").group_by("semantic_verify", maintain_order=True):
        rows = part["row"].to_list()
        resolved = resolve_lookalikes(
            vectors[rows],
            part["input"].to_list(),
            part["semantic_threshold"].to_list(),
            verify if verify_on[0] else None,
            part["semantic_verify_threshold"].to_list(),
            externals=[candidates[r] for r in rows],
            fold_within=False,
        )
        for row, request_id, resolution in zip(rows, part["request_id"].to_list(), resolved, strict=True):
            served = resolution.external.ref if resolution.external else (None, None)
            results[row] = {
                "request_id": request_id,
                "hit": resolution.external is not None,
                "best_similarity": resolution.best_similarity,
                "served_key": served[0],
                "answer_json": served[1],
            }
    ordered = [results[row] for row in range(requests.height)]
    return pl.DataFrame(ordered, schema=RESULT_SCHEMA, orient="row")
