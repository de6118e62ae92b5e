"""The semantic index on a real LanceDB folder: exact per-scope search, and ANN for large scopes."""

import numpy as np
import polars as pl

from storage.semantic_index import SemanticIndex


def _unit(matrix):
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def _rows(keys, scopes):
    return pl.DataFrame(
        {
            "key": keys,
            "semantic_scope": scopes,
            "tenant": "t",
            "namespace": "n",
            "model": "m",
            "model_version": "1",
        },
        schema_overrides={"key": pl.Binary},
    )


def _fill(index, count, rng, scope_of):
    vectors = _unit(rng.normal(size=(count, 16)))
    keys = [i.to_bytes(4, "big") for i in range(count)]
    index.add(_rows(keys, [scope_of(i) for i in range(count)]), vectors, partition=None)
    return vectors


def test_exact_search_stays_inside_each_scope(tmp_path):
    rng = np.random.default_rng(1)
    index = SemanticIndex(tmp_path, "m", 16)
    vectors = _fill(index, 200, rng, lambda i: "a" * 64 if i % 2 else "b" * 64)
    found = index.search(["a" * 64, "b" * 64], vectors[[2, 2]], limit=3)
    by_query = {0: [], 1: []}
    for n in found:
        by_query[n.query_row].append(int.from_bytes(n.key, "big"))
    assert all(k % 2 == 1 for k in by_query[0])  # scope "a" holds the odd keys only
    assert 2 in by_query[1] and all(k % 2 == 0 for k in by_query[1])


def test_large_scopes_go_through_the_ann_index_with_the_same_answers(tmp_path):
    rng = np.random.default_rng(2)
    ann = SemanticIndex(tmp_path / "ann", "m", 16, ann_min_scope_rows=500)
    exact = SemanticIndex(tmp_path / "exact", "m", 16)
    scope_of = lambda i: "a" * 64 if i < 900 else "b" * 64  # noqa: E731 - 900 large, 100 small
    vectors = _fill(ann, 1000, rng, scope_of)
    _fill(exact, 1000, np.random.default_rng(2), scope_of)
    assert any(i.columns == ["vector"] for i in ann._table.list_indices())
    assert ann._large_scopes(["a" * 64, "b" * 64]) == ["a" * 64]
    queries = _unit(vectors[:300] + 0.05 * rng.normal(size=(300, 16)))
    scopes = [scope_of(i) for i in range(300)]

    def top1(index):
        best = {}
        for n in index.search(scopes, queries, limit=1):
            best[n.query_row] = n.key
        return best

    via_ann, via_exact = top1(ann), top1(exact)
    agree = sum(via_ann.get(q) == via_exact[q] for q in range(300))
    assert agree / 300 >= 0.99


def test_a_growing_table_folds_new_rows_into_the_ann_index(tmp_path):
    rng = np.random.default_rng(3)
    index = SemanticIndex(tmp_path, "m", 16, ann_min_scope_rows=300)
    _fill(index, 400, rng, lambda i: "a" * 64)
    more = _unit(rng.normal(size=(100, 16)))
    index.add(_rows([(1000 + i).to_bytes(4, "big") for i in range(100)], ["a" * 64] * 100), more, None)
    vector_index = [i for i in index._table.list_indices() if i.columns == ["vector"]][0]
    assert vector_index.num_unindexed_rows == 0  # 100 of 500 unindexed was over a tenth: optimized


def test_bfloat16_candidates_find_what_float32_search_finds_through_lancedb(tmp_path):
    rng = np.random.default_rng(6)
    low = SemanticIndex(tmp_path / "low", "m", 16, low_precision=True)
    exact = SemanticIndex(tmp_path / "exact", "m", 16, low_precision=False)
    scope_of = lambda i: "a" * 64 if i % 4 else "b" * 64  # noqa: E731 - "a" past the bfloat16 size
    vectors = _fill(low, 6000, rng, scope_of)
    _fill(exact, 6000, np.random.default_rng(6), scope_of)
    queries = _unit(vectors[:200] + 0.05 * rng.normal(size=(200, 16)))
    scopes = [scope_of(i) for i in range(200)]

    def neighbours(index):
        return sorted((n.query_row, n.key, n.similarity) for n in index.search(scopes, queries, limit=4))

    assert low.scope_vectors(["a" * 64])["a" * 64].bfloat16_vectors is not None
    via_low, via_exact = neighbours(low), neighbours(exact)
    assert [(row, key) for row, key, _ in via_low] == [(row, key) for row, key, _ in via_exact]
    np.testing.assert_allclose([s for *_, s in via_low], [s for *_, s in via_exact], atol=1e-6)
