"""Exact top-k over a scope: bfloat16 candidates re-scored in float32 give the float32 answer."""

import numpy as np
import pyarrow as pa

from storage.scope_search import BFLOAT16_MIN_ROWS, ScopeMatrix, nearest_columns, top_k


def _unit(matrix):
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def _clustered_scope(rng, rows=BFLOAT16_MIN_ROWS + 904, dimension=48):
    """Half the vectors are near copies of the other half: many close ties, as paraphrases give."""
    base = _unit(rng.normal(size=(rows // 2, dimension)))
    return _unit(np.vstack([base, base + 0.03 * rng.normal(size=base.shape)]))


def test_nearest_columns_are_the_largest_of_each_row():
    similarities = np.random.default_rng(0).normal(size=(50, 300)).astype(np.float32)
    for limit in (1, 4, 300, 500):
        found = nearest_columns(similarities, limit)
        expected = np.argsort(-similarities, axis=1)[:, : min(limit, 300)]
        assert [set(row) for row in found] == [set(row) for row in expected]


def test_bfloat16_candidates_give_the_exact_float32_top_k_and_similarities():
    rng = np.random.default_rng(4)
    vectors = _clustered_scope(rng)
    keys = pa.array([i.to_bytes(4, "big") for i in range(len(vectors))])
    queries = _unit(vectors[:400] + 0.05 * rng.normal(size=(400, vectors.shape[1])))
    exact_scope = ScopeMatrix.build(keys, vectors, low_precision=False)
    low_scope = ScopeMatrix.build(keys, vectors, low_precision=True)
    assert exact_scope.bfloat16_vectors is None and low_scope.bfloat16_vectors is not None
    assert low_scope.nbytes == vectors.nbytes * 3 // 2
    for limit in (1, 4):
        exact_columns, exact_similarities = top_k(queries, exact_scope, limit)
        low_columns, low_similarities = top_k(queries, low_scope, limit)
        assert [set(row) for row in low_columns] == [set(row) for row in exact_columns]
        # Similarities are re-scored in float32: the served value is the exact one, not bfloat16's.
        float32_similarities = np.take_along_axis(queries @ vectors.T, low_columns, axis=1)
        np.testing.assert_allclose(low_similarities, float32_similarities, atol=1e-6)


def test_small_scopes_stay_in_float32():
    vectors = _unit(np.random.default_rng(5).normal(size=(BFLOAT16_MIN_ROWS - 1, 8)))
    keys = pa.array([i.to_bytes(4, "big") for i in range(len(vectors))])
    assert ScopeMatrix.build(keys, vectors, low_precision=True).bfloat16_vectors is None


def test_near_duplicates_crowding_the_bfloat16_cut_still_give_the_exact_top_1():
    """40 vectors at cosine 0.9982 to 0.9995 of the query all read 1.0 in bfloat16, more than
    the cut takes: whatever order they were written in, the exact best is returned."""
    rng = np.random.default_rng(2)
    dimension = 384
    query = _unit(rng.normal(size=(1, dimension)))[0]

    def at_cosine(cosine):
        other = rng.normal(size=dimension)
        other -= (other @ query) * query
        return cosine * query + np.sqrt(1 - cosine**2) * other / np.linalg.norm(other)

    near = _unit(np.stack([at_cosine(c) for c in np.linspace(0.9982, 0.9995, 40)]))
    stored = np.vstack([_unit(rng.normal(size=(BFLOAT16_MIN_ROWS, dimension))), near])
    best = int(np.argmax(stored @ query))
    for trial in range(10):
        order = np.random.default_rng(trial).permutation(len(stored))
        keys = pa.array([int(i).to_bytes(4, "big") for i in order])
        scope = ScopeMatrix.build(keys, np.ascontiguousarray(stored[order]), low_precision=True)
        columns, similarities = top_k(query[None], scope, 16)
        top = columns[0][np.argmax(similarities[0])]
        assert int.from_bytes(keys[int(top)].as_py(), "big") == best


def test_queries_go_a_bounded_product_at_a_time_with_the_same_answers(monkeypatch):
    import storage.scope_search

    rng = np.random.default_rng(5)
    vectors = _clustered_scope(rng)
    keys = pa.array([i.to_bytes(4, "big") for i in range(len(vectors))])
    queries = _unit(vectors[:300] + 0.05 * rng.normal(size=(300, vectors.shape[1])))
    for low_precision in (False, True):
        scope = ScopeMatrix.build(keys, vectors, low_precision=low_precision)
        whole = top_k(queries, scope, 4)
        # 7 queries' similarities at a time.
        monkeypatch.setattr(storage.scope_search, "PRODUCT_BYTES", 7 * 4 * len(vectors))
        chunked = top_k(queries, scope, 4)
        monkeypatch.undo()
        assert [set(row) for row in chunked[0]] == [set(row) for row in whole[0]]
        np.testing.assert_allclose(np.sort(chunked[1], axis=1), np.sort(whole[1], axis=1))


def test_the_exact_top_k_holds_for_queries_that_are_not_unit_length():
    """4,200 near copies of one vector, searched by a query of length 1 and of length 100: the
    bfloat16 error grows with the lengths, and so does the margin that sends a query to float32."""
    rng = np.random.default_rng(0)
    for length in (1, 100):
        for _ in range(10):
            base = _unit(rng.normal(size=(1, 384)))
            vectors = _unit(base + 0.003 * rng.normal(size=(4200, 384)))
            query = length * _unit(base + 0.003 * rng.normal(size=(1, 384)))
            keys = pa.array([i.to_bytes(4, "big") for i in range(len(vectors))])
            _, similarities = top_k(query, ScopeMatrix.build(keys, vectors, low_precision=True), 4)
            exact = np.sort(query @ vectors.T, axis=1)[:, ::-1][:, :4]
            np.testing.assert_allclose(np.sort(similarities, axis=1)[:, ::-1], exact, rtol=1e-6, atol=0)


def test_the_bfloat16_path_bounds_the_candidates_it_gathers_too(monkeypatch):
    """4,200 vectors of 384 and 16 candidates a query: a query's 28 gathered candidate vectors
    (10,752 floats) outweigh its 4,200 similarities, so they set how many queries go at once."""
    import storage.scope_search

    rng = np.random.default_rng(11)
    vectors = _unit(rng.normal(size=(4200, 384)))
    queries = _unit(rng.normal(size=(95, 384)))
    scope = ScopeMatrix.build(
        pa.array([i.to_bytes(4, "big") for i in range(4200)]), vectors, low_precision=True
    )
    whole = top_k(queries, scope, 16)
    sizes = []
    real = storage.scope_search._top_k
    monkeypatch.setattr(storage.scope_search, "_top_k", lambda q, s, k: sizes.append(len(q)) or real(q, s, k))
    monkeypatch.setattr(storage.scope_search, "PRODUCT_BYTES", 4 * 28 * 384 * 10)  # ten queries' candidates
    chunked = top_k(queries, scope, 16)
    assert sizes == [10] * 9 + [5]
    assert [set(row) for row in chunked[0]] == [set(row) for row in whole[0]]
