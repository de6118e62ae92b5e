"""The semantic index kept in step with the exact store (a real DuckDB file, a real LanceDB
folder): dead vectors never crowd out live entries, one vector a key, exact similarities
from the ANN path, indices refreshed as the table grows, ties served the same whatever the
order of writing. Vectors are made by hand: what is tested is where they sit, not the model."""

from datetime import timedelta

import numpy as np
import polars as pl
import pytest

from storage import semantic_index
from storage.exact_store import open_store, write_entries
from storage.semantic_index import SemanticIndex
from storage.semantic_lookup import lookup_semantic
from storage.write_back import keys_without_live_entry
from tests.helpers import entry_rows, identity, request_rows

DIMENSION = 16


def _unit(matrix):
    matrix = np.atleast_2d(np.asarray(matrix, dtype=np.float32))
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def _near(query, spread, count, rng):
    return _unit(query + spread * rng.normal(size=(count, DIMENSION)))


def _store(con, index, texts, vectors, now, ttl_seconds=3600, partition=None):
    identities = [identity(text) for text in texts]
    write_entries(con, entry_rows(identities, [f'"{t}"' for t in texts], now, ttl_seconds, partition))
    index.add(request_rows(identities), vectors, partition)
    return request_rows(identities)["key"].to_list()


def _lookup(con, index, vector, now, threshold=0.8):
    rows = request_rows([identity("a new request")], threshold=threshold)
    return lookup_semantic(con, index, rows, _unit(vector), now, verify=None).row(0, named=True)


def test_expired_entries_nearer_the_request_do_not_hide_a_live_one(tmp_path, now):
    rng = np.random.default_rng(0)
    query = _unit(rng.normal(size=DIMENSION))[0]
    index = SemanticIndex(tmp_path / "lance", "m", DIMENSION)
    with open_store(tmp_path / "cache.duckdb") as con:
        # More expiring entries than a look-up keeps candidates, all nearer than the live one.
        _store(con, index, [f"old {i}" for i in range(6)], _near(query, 0.05, 6, rng), now, ttl_seconds=60)
        live_vector = _near(query, 0.25, 1, rng)
        (live_key,) = _store(con, index, ["live"], live_vector, now, ttl_seconds=86_400)
        later = now + timedelta(seconds=61)
        assert float(live_vector[0] @ query) >= 0.8
        found = _lookup(con, index, query, later)
    assert found["hit"] and found["served_key"] == live_key
    assert found["best_similarity"] == pytest.approx(float(live_vector[0] @ query), abs=1e-5)


def test_a_key_written_again_keeps_one_vector_its_latest(tmp_path, now):
    rng = np.random.default_rng(1)
    index = SemanticIndex(tmp_path / "lance", "m", DIMENSION)
    first, second = _unit(rng.normal(size=(2, DIMENSION)))
    with open_store(tmp_path / "cache.duckdb") as con:
        (key,) = _store(con, index, ["same request"], first[None], now, partition="2026-01-01")
        _store(con, index, ["same request"], second[None], now, partition="2026-01-02")
        assert index.keys()["key"].to_pylist() == [key]
        assert _lookup(con, index, second, now, threshold=0.999)["hit"]
        assert not _lookup(con, index, first, now, threshold=0.999)["hit"]


def test_write_back_finds_every_vector_without_a_live_entry(tmp_path, now):
    """Evicted, expired, or left behind by a write-back that stopped between the stores."""
    rng = np.random.default_rng(2)
    index = SemanticIndex(tmp_path / "lance", "m", DIMENSION)
    with open_store(tmp_path / "cache.duckdb") as con:
        kept = _store(con, index, ["kept"], _unit(rng.normal(size=(1, DIMENSION))), now)
        expiring = _store(
            con, index, ["expiring"], _unit(rng.normal(size=(1, DIMENSION))), now, ttl_seconds=60
        )
        evicted = _store(con, index, ["evicted"], _unit(rng.normal(size=(1, DIMENSION))), now)
        con.execute("DELETE FROM cache_entries WHERE key = ?", evicted)  # the vector stays
        dead = keys_without_live_entry(con, index.keys(), now + timedelta(seconds=61))
        assert sorted(dead) == sorted(expiring + evicted)
        index.delete_keys(dead)
        assert index.keys()["key"].to_pylist() == kept


def test_vectors_with_nan_are_refused_and_the_rest_indexed(tmp_path, now):
    rng = np.random.default_rng(3)
    index = SemanticIndex(tmp_path / "lance", "m", DIMENSION)
    vectors = _unit(rng.normal(size=(3, DIMENSION)))
    vectors[1, 4] = np.nan
    with open_store(tmp_path / "cache.duckdb") as con:
        identities = [identity(t) for t in ("one", "two", "three")]
        write_entries(con, entry_rows(identities, ['"x"'] * 3, now))
        assert index.add(request_rows(identities), vectors, None) == 2
    keys = request_rows(identities)["key"].to_list()
    assert sorted(index.keys()["key"].to_pylist()) == sorted([keys[0], keys[2]])


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_equally_near_entries_are_served_the_same_whatever_the_order_written(tmp_path, now, order):
    rng = np.random.default_rng(4)
    vector = _unit(rng.normal(size=DIMENSION))
    texts = ["Reset password", "reset password!"]
    index = SemanticIndex(tmp_path / "lance", "m", DIMENSION)
    with open_store(tmp_path / "cache.duckdb") as con:
        for i in order:
            _store(con, index, [texts[i]], vector, now)
        found = _lookup(con, index, vector[0], now)
    keys = request_rows([identity(t) for t in texts])["key"].to_list()
    assert found["served_key"] == min(keys)


def test_the_ann_path_reports_exact_cosines_before_and_after_the_index_is_refreshed(tmp_path):
    rng = np.random.default_rng(5)
    index = SemanticIndex(tmp_path / "lance", "m", DIMENSION, ann_min_scope_rows=500)
    stored = _unit(rng.normal(size=(600, DIMENSION)))
    keys = [i.to_bytes(4, "big") for i in range(600)]
    scope = "a" * 64
    rows = pl.DataFrame(
        {
            "key": keys,
            "semantic_scope": scope,
            "tenant": "t",
            "namespace": "n",
            "model": "m",
            "model_version": "1",
        },
        schema_overrides={"key": pl.Binary},
    )
    index.add(rows, stored, None)
    queries = _unit(stored[:50] + 0.1 * rng.normal(size=(50, DIMENSION)))
    by_key = dict(zip(keys, stored, strict=True))

    def largest_error():
        found = index.search([scope] * 50, queries, limit=3)
        assert len(found) == 150
        return max(abs(n.similarity - float(queries[n.query_row] @ by_key[n.key])) for n in found)

    assert index._large_scopes([scope]) == [scope]
    assert largest_error() < 1e-5  # fully indexed
    index.add(
        rows.head(1).with_columns(key=pl.lit(b"new"), semantic_scope=pl.lit("b" * 64)), stored[:1], None
    )
    by_key[b"new"] = stored[0]
    assert largest_error() < 1e-5  # one row not yet indexed

    assert index.search([scope], queries[:1], limit=0) == []  # as the exact path answers it
    # A scope that grows past the ANN size is seen as large at the table's next version.
    assert index._large_scopes(["b" * 64]) == []
    grown = rows.with_columns(key=pl.Series([b"g" + k for k in keys]), semantic_scope=pl.lit("b" * 64))
    index.add(grown, stored, None)
    assert index._large_scopes(["b" * 64, scope]) == ["b" * 64, scope]


def test_a_namespace_is_cleared_whatever_its_tenant_is_called(tmp_path):
    """Names are never put into a vector-store filter: a tenant called "o'brien", "acme,inc"
    or "日本" is cleared like any other, and only its namespace."""
    index = SemanticIndex(tmp_path / "lance", "m", DIMENSION)
    tenants = ["o'brien", "acme,inc", "100%", "日本", "x' OR '1'='1", "plain"]
    rows = pl.DataFrame(
        {
            "key": [f"{t}|{n}".encode() for t in tenants for n in ("faq", "other")],
            "semantic_scope": "a" * 64,
            "tenant": [t for t in tenants for _ in range(2)],
            "namespace": ["faq", "other"] * len(tenants),
            "model": "m",
            "model_version": "1",
        },
        schema_overrides={"key": pl.Binary},
    )
    index.add(rows, _unit(np.ones((rows.height, DIMENSION))), None)
    for tenant in tenants[:-1]:
        index.delete_namespace(tenant, "faq")
    left = sorted(index.keys()["key"].to_pylist())
    assert left == sorted([f"{t}|other".encode() for t in tenants] + [b"plain|faq"])


def test_the_scope_index_takes_in_rows_added_after_it_was_built(tmp_path, monkeypatch):
    monkeypatch.setattr(semantic_index, "SCOPE_INDEX_MIN_ROWS", 300)
    rng = np.random.default_rng(6)
    index = SemanticIndex(tmp_path / "lance", "m", DIMENSION)
    for start in range(0, 600, 100):
        keys = [(start + i).to_bytes(4, "big") for i in range(100)]
        rows = pl.DataFrame(
            {
                "key": keys,
                "semantic_scope": "a" * 64,
                "tenant": "t",
                "namespace": "n",
                "model": "m",
                "model_version": "1",
            },
            schema_overrides={"key": pl.Binary},
        )
        index.add(rows, _unit(rng.normal(size=(100, DIMENSION))), None)
    (scope_index,) = [i for i in index._table.list_indices() if i.columns == ["semantic_scope"]]
    assert scope_index.num_unindexed_rows <= 600 // 10
