"""Semantic index speed: `python -m benchmarks semantic --vectors 130000 --queries 5000 --json`.

Real MiniLM embeddings of QQP questions; the indexed vectors spread evenly over
tenants, the queries are other questions, each searched under its tenant's hard
prefilter. The project's path (SemanticIndex on LanceDB: one read of the scopes, one
matrix product per scope, storage/scope_search.py) is timed beside numpy brute force over the
whole table with the tenant mask, in the same run; recall@1 is against exact
search under the same filter. `--ann-min-scope-rows` lowers the scope size from which
the project searches through its LanceDB IVF-HNSW-SQ index instead (default: the
project's own, ANN_MIN_SCOPE_ROWS), so the ANN path can be measured too.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from benchmarks.common import (
    embed_through_cache,
    median_seconds,
    peak_rss_mb,
    qqp_questions,
    quiet_environment,
)

MODEL = "all-MiniLM-L6-v2"


def _scope(tenant: int) -> str:
    return f"{tenant:064x}"


def _bruteforce(queries: np.ndarray, query_tenants: np.ndarray, table: np.ndarray, table_tenants: np.ndarray):
    """Top-1 per query over the whole table, other tenants masked out (chunked to bound memory)."""
    best = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), 500):
        similarities = queries[start : start + 500] @ table.T
        similarities[query_tenants[start : start + 500, None] != table_tenants[None, :]] = -np.inf
        best[start : start + 500] = similarities.argmax(axis=1)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks semantic", description=__doc__)
    parser.add_argument("--vectors", type=int, default=130000)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ann-min-scope-rows", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    quiet_environment()
    from storage.scope_search import BFLOAT16_MIN_ROWS, bfloat16_is_fast
    from storage.semantic_index import ANN_MIN_SCOPE_ROWS, SemanticIndex

    ann_min = ANN_MIN_SCOPE_ROWS if args.ann_min_scope_rows is None else args.ann_min_scope_rows

    questions = qqp_questions()
    if args.vectors + args.queries > len(questions):
        parser.error(f"only {len(questions)} distinct questions: lower --vectors or --queries")
    texts = questions[: args.vectors + args.queries]
    vectors, embedded_now = embed_through_cache(texts)
    table, queries = vectors[: args.vectors], vectors[args.vectors :]
    table_tenants = np.arange(args.vectors) % args.tenants
    query_tenants = np.arange(args.queries) % args.tenants
    keys = [i.to_bytes(8, "big") for i in range(args.vectors)]

    with tempfile.TemporaryDirectory(prefix="infercache-bench-") as folder:
        rows = pl.DataFrame(
            {
                "key": keys,
                "semantic_scope": [_scope(t) for t in table_tenants],
                "tenant": [f"tenant-{t}" for t in table_tenants],
                "namespace": "bench",
                "model": "bench-model",
                "model_version": "1",
            },
            schema_overrides={"key": pl.Binary},
        )
        index = SemanticIndex(Path(folder), MODEL, table.shape[1], ann_min_scope_rows=ann_min)
        build_seconds, _ = median_seconds(lambda: index.add(rows, table, partition=None), 1)
        scopes = [_scope(t) for t in query_tenants]

        def project_search():
            # A fresh index object: nothing cached, the vectors are read from LanceDB.
            fresh = SemanticIndex(Path(folder), MODEL, table.shape[1], ann_min_scope_rows=ann_min)
            return fresh.search(scopes, queries, limit=1)

        project_seconds, found = median_seconds(project_search, args.repeats)
        brute_seconds, brute_best = median_seconds(
            lambda: _bruteforce(queries, query_tenants, table, table_tenants), args.repeats
        )
    top1 = {n.query_row: int.from_bytes(n.key, "big") for n in found}
    # Exact search under the same filter is what brute force with the mask computes.
    agree = sum(top1.get(q) == int(brute_best[q]) for q in range(args.queries))
    largest_scope = int(np.bincount(table_tenants).max())
    report = {
        "vectors": args.vectors,
        "queries": args.queries,
        "tenants": args.tenants,
        "queries_per_s": args.queries / project_seconds,
        "recall_at_1": agree / args.queries,
        "bruteforce_queries_per_s": args.queries / brute_seconds,
        "speedup_vs_bruteforce": brute_seconds / project_seconds,
        "project_seconds_median": project_seconds,
        "bruteforce_seconds_median": brute_seconds,
        "repeats": args.repeats,
        "texts_embedded_now": embedded_now,
        "peak_rss_mb": peak_rss_mb(),
        "ann_min_scope_rows": ann_min,
        "largest_scope_rows": largest_scope,
        "add_and_index_seconds": build_seconds,
        "method": "LanceDB IVF-HNSW-SQ index (cosine, ef 200) under the scope prefilter"
        if largest_scope >= ann_min
        else "LanceDB table read once (whole, as the scopes hold most of it), split by scope, "
        + (
            "candidates per scope from one bfloat16 matrix product, re-scored exactly in float32"
            if bfloat16_is_fast() and largest_scope >= BFLOAT16_MIN_ROWS
            else "exact float32 matrix product per scope"
        ),
    }
    print(json.dumps(report, indent=2) if args.json else report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
