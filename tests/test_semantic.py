"""The semantic tier: real MiniLM embeddings, a real LanceDB folder, a real DuckDB file."""

import unicodedata
from datetime import timedelta

import numpy as np
import polars as pl
import pytest

from storage.embedding_cache import EmbeddingCache
from storage.exact_store import open_store, write_entries
from storage.semantic_index import SemanticIndex
from storage.semantic_lookup import lookup_semantic
from tests.helpers import EMBEDDER, entry_rows, identity, request_rows

pytestmark = pytest.mark.slow

CACHED = "How do I speed up LLM inference?"
PARAPHRASE = "how to make LLM inference faster"


@pytest.fixture
def stores(tmp_path, minilm):
    index = SemanticIndex(tmp_path / "lance", EMBEDDER, minilm.dimension)
    cache = EmbeddingCache(tmp_path / "lance", EMBEDDER, minilm.dimension)
    return tmp_path / "cache.duckdb", index, cache


def _store(con, index, cache, minilm, identities, now, ttl_seconds=3600, commit=True):
    rows = request_rows(identities)
    if commit:
        write_entries(con, entry_rows(identities, ['{"a":1}'] * len(identities), now, ttl_seconds))
    vectors, _ = cache.embed([x.input for x in identities], minilm)
    index.add(rows, vectors, partition=None)


def _lookup(con, index, cache, minilm, identities, now, threshold=0.7, verify=None):
    rows = request_rows(identities, threshold=threshold, verify=verify is not None)
    vectors, _ = cache.embed([x.input for x in identities], minilm)
    return lookup_semantic(con, index, rows, vectors, now, verify=verify)


def test_paraphrase_is_served_from_the_same_scope(stores, minilm, now):
    path, index, cache = stores
    with open_store(path) as con:
        _store(con, index, cache, minilm, [identity(CACHED)], now)
        found = _lookup(con, index, cache, minilm, [identity(PARAPHRASE)], now)
    assert found["hit"].to_list() == [True]
    assert found["answer_json"][0] == '{"a":1}'
    assert 0.7 <= found["best_similarity"][0] < 1.0


def test_below_threshold_misses_but_reports_the_similarity(stores, minilm, now):
    path, index, cache = stores
    with open_store(path) as con:
        _store(con, index, cache, minilm, [identity(CACHED)], now)
        found = _lookup(con, index, cache, minilm, [identity(PARAPHRASE)], now, threshold=0.999)
    assert found["hit"].to_list() == [False]
    assert found["best_similarity"][0] is not None
    assert found["served_key"][0] is None


def test_other_tenant_never_receives_the_answer(stores, minilm, now):
    path, index, cache = stores
    with open_store(path) as con:
        _store(con, index, cache, minilm, [identity(CACHED, tenant="acme")], now)
        found = _lookup(
            con,
            index,
            cache,
            minilm,
            [identity(CACHED, tenant="globex"), identity(PARAPHRASE, tenant="globex")],
            now,
        )
    assert found["hit"].to_list() == [False, False]
    assert found["best_similarity"].to_list() == [None, None]


@pytest.mark.parametrize(
    "change", [{"model_version": "2"}, {"params": {"temperature": 0.7}}, {"prefix": "Be terse.\n"}]
)
def test_anything_but_the_input_must_match(stores, minilm, now, change):
    path, index, cache = stores
    with open_store(path) as con:
        _store(con, index, cache, minilm, [identity(CACHED)], now)
        found = _lookup(con, index, cache, minilm, [identity(PARAPHRASE, **change)], now)
    assert found["hit"].to_list() == [False]


def test_vector_without_committed_entry_is_never_served(stores, minilm, now):
    path, index, cache = stores
    with open_store(path) as con:
        _store(con, index, cache, minilm, [identity(CACHED)], now, commit=False)
        found = _lookup(con, index, cache, minilm, [identity(CACHED)], now)
    assert found["hit"].to_list() == [False]


def test_expired_entry_is_not_served_semantically(stores, minilm, now):
    path, index, cache = stores
    with open_store(path) as con:
        _store(con, index, cache, minilm, [identity(CACHED)], now, ttl_seconds=60)
        found = _lookup(con, index, cache, minilm, [identity(PARAPHRASE)], now + timedelta(seconds=61))
    assert found["hit"].to_list() == [False]


def test_embedding_cache_embeds_each_text_once(stores, minilm):
    _, _, cache = stores
    calls: list[list[str]] = []

    def counting_embed(texts):
        calls.append(list(texts))
        return minilm(texts)

    first, embedded = cache.embed(["a question", "another question", "a question"], counting_embed)
    assert embedded == 2
    again, embedded_again = cache.embed(["another question", "a question"], counting_embed)
    assert embedded_again == 0
    assert calls == [["a question", "another question"]]
    np.testing.assert_allclose(again[1], first[0])


def test_the_embedding_cache_embeds_the_text_its_key_is_made_of(stores, minilm):
    """Two spellings of one key (combining marks or not) get the vector of the normalised
    text, whichever arrives first: a model that does not normalise reads them apart."""
    _, _, cache = stores
    calls: list[list[str]] = []

    def recording_embed(texts):
        calls.append(list(texts))
        return minilm(texts)

    decomposed, composed = unicodedata.normalize("NFD", "Café opening hours"), "Café opening hours"
    assert decomposed != composed
    vectors, embedded = cache.embed([composed, decomposed], recording_embed)
    assert embedded == 1 and calls == [[composed]]
    np.testing.assert_array_equal(vectors[0], vectors[1])


def test_batched_search_answers_each_query_in_its_own_scope(stores, minilm, now):
    path, index, cache = stores
    with open_store(path) as con:
        _store(
            con,
            index,
            cache,
            minilm,
            [identity(CACHED, tenant="acme"), identity("What is the capital of France?", tenant="globex")],
            now,
        )
        queries = [
            identity(PARAPHRASE, tenant="acme"),
            identity("which city is the capital of France", tenant="globex"),
            identity("which city is the capital of France", tenant="acme"),
        ]
        found = _lookup(con, index, cache, minilm, queries, now)
    assert found["hit"].to_list() == [True, True, False]
    keys = request_rows([identity(CACHED, tenant="acme")])["key"][0]
    assert found["served_key"][0] == keys
    assert isinstance(found, pl.DataFrame)


@pytest.mark.parametrize("crowd", ["expired", "rewritten later"])
def test_vectors_that_cannot_serve_never_crowd_out_a_live_entry(tmp_path, now, crowd):
    """300 vectors lie nearer the request than the live entry that should serve it, more than
    the search's first depth. Expired entries' (a day's near-duplicates of a templated request,
    indexed until the next write-back): the look-up deletes its scope's dead vectors and
    searches again. Entries a later partition wrote again (a recompute of an older day cannot
    see them, yet they are live): it searches deeper and deletes nothing. Made-up unit
    vectors: what matters is their order, not the model."""
    rng = np.random.default_rng(7)
    asked = rng.normal(size=384)
    asked /= np.linalg.norm(asked)

    def at_cosine(cosine):
        other = rng.normal(size=384)
        other -= (other @ asked) * asked
        other /= np.linalg.norm(other)
        return cosine * asked + np.sqrt(1 - cosine**2) * other

    crowding = [identity(f"order status question {i}") for i in range(300)]
    live = identity("where is my order")
    index = SemanticIndex(tmp_path / "lance", EMBEDDER, 384)
    with open_store(tmp_path / "cache.duckdb") as con:
        if crowd == "expired":
            entries = entry_rows(crowding, ['{"old":1}'] * 300, now - timedelta(days=2), ttl_seconds=60)
        else:
            entries = entry_rows(crowding, ['{"new":1}'] * 300, now, partition="2026-01-09")
        write_entries(con, entries)
        write_entries(con, entry_rows([live], ['{"a":1}'], now))
        vectors = np.array([at_cosine(0.99) for _ in crowding] + [at_cosine(0.93)], dtype=np.float32)
        index.add(request_rows([*crowding, live]), vectors, partition=None)
        rows = request_rows([identity("where's my order?")], threshold=0.9)
        found = lookup_semantic(
            con,
            index,
            rows,
            asked[None, :].astype(np.float32),
            now,
            verify=None,
            before_partition="2026-01-05",
        )
    assert found["hit"].to_list() == [True] and found["answer_json"].to_list() == ['{"a":1}']
    assert found["best_similarity"][0] == pytest.approx(0.93, abs=1e-4)
    assert index.count() == {"expired": 1, "rewritten later": 301}[crowd]
