"""Which stored entries still need a vector, on a real DuckDB file."""

from datetime import timedelta

import polars as pl
import pyarrow as pa

from storage.exact_store import open_store, write_entries
from storage.keys import cache_key, canonical_request, semantic_scope
from storage.vector_backfill import (
    entries_missing_vectors,
    forget_exact_only_without_entry,
    forget_vector_kind,
    keys_scoped_otherwise,
    namespaces_to_check,
    note_vector_kinds,
    record_exact_only,
    with_scopes,
)
from tests.helpers import EMBEDDER, entry_rows, identity

WORDINGS = ["reset my password", "opening hours", "ship abroad", "gift cards"]


def _keys(*identities) -> pa.Table:
    return pa.table({"key": pa.array([cache_key(canonical_request(x)) for x in identities], pa.binary())})


def _store(con, now):
    identities = [identity(text) for text in WORDINGS]
    entries = entry_rows(identities, ["{}"] * len(identities), now, partition="2026-01-01")
    # "opening hours" was hit last, "ship abroad" expired, and one entry is another tenant's.
    entries = entries.with_columns(
        last_hit_at=pl.when(pl.col("input_text") == "opening hours").then(pl.lit(now + timedelta(minutes=5))),
        expires_at=pl.when(pl.col("input_text") == "ship abroad")
        .then(pl.lit(now - timedelta(seconds=1)))
        .otherwise(pl.col("expires_at")),
    )
    write_entries(con, entries)
    write_entries(con, entry_rows([identity("gift cards", tenant="globex")], ["{}"], now))
    return identities


def test_live_entries_of_the_scopes_without_a_vector_come_most_recently_used_first(tmp_path, now):
    with open_store(tmp_path / "cache.duckdb") as con:
        identities = _store(con, now)
        rows, missing = entries_missing_vectors(
            con,
            [("acme", "faq", "tiny-llm", "1", True, "rule A")],
            _keys(identities[3]),
            EMBEDDER,
            now,
            limit=10,
        )
    # Indexed ("gift cards"), expired ("ship abroad") and globex's entry are left out.
    assert rows["input_text"].to_list() == ["opening hours", "reset my password"]
    assert missing == 2
    # Each row gets the scope its requests search, and carries the partition that wrote it.
    scoped = with_scopes(rows, EMBEDDER, [None, None])
    assert scoped["semantic_scope"].to_list() == [
        semantic_scope(identities[1], EMBEDDER),
        semantic_scope(identities[0], EMBEDDER),
    ]
    assert set(rows["source_partition"]) == {"2026-01-01"}


def test_a_limit_takes_the_most_recent_and_still_counts_them_all(tmp_path, now):
    with open_store(tmp_path / "cache.duckdb") as con:
        _store(con, now)
        rows, missing = entries_missing_vectors(
            con, [("acme", "faq", "tiny-llm", "1", True, "rule A")], _keys(), EMBEDDER, now, limit=1
        )
        none, counted = entries_missing_vectors(
            con, [("acme", "faq", "tiny-llm", "1", True, "rule A")], _keys(), EMBEDDER, now, limit=0
        )
    assert rows["input_text"].to_list() == ["opening hours"] and missing == 3
    assert none.height == 0 and counted == 3


def test_an_entry_recorded_exact_only_is_left_out_under_the_same_coverage_only(tmp_path, now):
    """Recorded under what decided it (storage.semantic_coverage.coverage_signature): another
    verification setting, declared languages or rule version reads the text again."""
    with open_store(tmp_path / "cache.duckdb") as con:
        _store(con, now)
        rows, _ = entries_missing_vectors(
            con, [("acme", "faq", "tiny-llm", "1", True, "rule A")], _keys(), EMBEDDER, now, limit=10
        )
        exact_only = rows.filter(pl.col("input_text") == "opening hours").with_columns(reason=pl.lit("why"))
        assert record_exact_only(con, exact_only, EMBEDDER, now) == 1
        verified, _ = entries_missing_vectors(
            con, [("acme", "faq", "tiny-llm", "1", True, "rule A")], _keys(), EMBEDDER, now, limit=10
        )
        unverified, _ = entries_missing_vectors(
            con, [("acme", "faq", "tiny-llm", "1", False, "rule B")], _keys(), EMBEDDER, now, limit=10
        )
        other_model, _ = entries_missing_vectors(
            con, [("acme", "faq", "tiny-llm", "1", True, "rule A")], _keys(), "other", now, limit=10
        )
        # Recorded twice, kept once; gone with its entry.
        record_exact_only(con, exact_only, EMBEDDER, now)
        assert con.execute("SELECT count(*) FROM exact_only_entries").fetchall() == [(1,)]
        con.execute("DELETE FROM cache_entries WHERE input_text = 'opening hours'")
        assert forget_exact_only_without_entry(con, now) == 1
    assert "opening hours" not in verified["input_text"].to_list()
    assert "opening hours" in unverified["input_text"].to_list()  # decided under another rule
    assert "opening hours" in other_model["input_text"].to_list()


def test_a_partition_backfills_only_the_entries_it_sees(tmp_path, now):
    """Entries written by a later partition (run out of order) are not its to index: its
    look-ups would not see them, and they would take the places of those they would."""
    with open_store(tmp_path / "cache.duckdb") as con:
        _store(con, now)  # acme's entries were written by 2026-01-01
        seen = {
            partition: entries_missing_vectors(
                con,
                [("acme", "faq", "tiny-llm", "1", True, "rule A")],
                _keys(),
                EMBEDDER,
                now,
                10,
                before_partition=partition,
            )
            for partition in ("2026-01-01", "2026-01-02")
        }
    assert seen["2026-01-01"][0].height == 0
    assert seen["2026-01-02"][0].height == seen["2026-01-02"][1] == 3


def test_vectors_stored_under_the_other_kind_of_scope_are_told_apart_without_the_texts(tmp_path, now):
    """A vector stored without the language has the scope its canonical request gives without
    one; where the namespace now keeps the language that vector is never found, and the
    other way round."""
    with open_store(tmp_path / "cache.duckdb") as con:
        identities = _store(con, now)
        reset, hours, expired, gifts = identities
        indexed = pa.table(
            {
                "key": pa.array(
                    [cache_key(canonical_request(x)) for x in (reset, hours, gifts, expired)], pa.binary()
                ),
                "tenant": ["acme"] * 4,
                "namespace": ["faq"] * 4,
                "semantic_scope": [
                    semantic_scope(reset, EMBEDDER),  # no language
                    semantic_scope(hours, EMBEDDER, "en"),
                    semantic_scope(gifts, EMBEDDER, "en"),
                    semantic_scope(expired, EMBEDDER),  # its entry expired: its vector goes anyway
                ],
            }
        )
        keyed_with_language = keys_scoped_otherwise(con, indexed, EMBEDDER, {("acme", "faq"): True}, now)
        keyed_without = keys_scoped_otherwise(con, indexed, EMBEDDER, {("acme", "faq"): False}, now)
        other_namespace = keys_scoped_otherwise(con, indexed, EMBEDDER, {("acme", "other"): True}, now)
        unseen = keys_scoped_otherwise(con, indexed, EMBEDDER, {("acme", "faq"): False}, now, "2026-01-01")
    assert keyed_with_language == [
        (cache_key(canonical_request(reset)), "acme", "faq", "tiny-llm", "1", True)
    ]
    assert sorted(keyed_without) == sorted(
        (cache_key(canonical_request(x)), "acme", "faq", "tiny-llm", "1", True) for x in (hours, gifts)
    )
    assert other_namespace == []
    # Written by 2026-01-01: found, but not seen by it (not its to index).
    assert {vector.visible for vector in unseen} == {False} and len(unseen) == 2


def test_only_namespaces_where_the_other_kind_of_scope_may_be_present_are_read(tmp_path, now):
    """Nothing recorded (vectors stored before the language could enter a scope): read. The
    keyed kind alone: not read. The other kind, written by this partition or an earlier one:
    read; by a later one: left alone, so a recompute does not undo a newer partition."""
    keyed = [("e5", "acme", "faq", True)]
    with open_store(tmp_path / "cache.duckdb") as con:
        assert namespaces_to_check(con, keyed, "2026-01-02") == [("e5", "acme", "faq")]
        note_vector_kinds(con, keyed, "2026-01-02", now)
        assert namespaces_to_check(con, keyed, "2026-01-02") == []
        note_vector_kinds(con, [("e5", "acme", "faq", False)], "2026-01-03", now)
        assert namespaces_to_check(con, keyed, "2026-01-02") == []  # a later partition keyed it so
        assert namespaces_to_check(con, keyed, "2026-01-04") == [("e5", "acme", "faq")]
        note_vector_kinds(con, [("e5", "acme", "faq", False)], "2026-01-01", now)  # keeps the latest
        latest = con.execute("SELECT latest_partition FROM vector_scope_kinds WHERE NOT language_in_scope")
        assert latest.fetchall() == [("2026-01-03",)]
        forget_vector_kind(con, "e5", "acme", "faq", False)
        assert namespaces_to_check(con, keyed, "2026-01-04") == []


def test_entries_of_a_model_version_no_request_asks_for_are_left_alone(tmp_path, now):
    """After an upgrade no request searches the old version's scopes: indexing its entries
    would spend the limit on vectors that are never read."""
    with open_store(tmp_path / "cache.duckdb") as con:
        _store(con, now)  # written by tiny-llm version 1
        upgraded, missing = entries_missing_vectors(
            con, [("acme", "faq", "tiny-llm", "2", True, "rule A")], _keys(), EMBEDDER, now, limit=10
        )
    assert upgraded.height == missing == 0


# One run of the backfill, driven directly (storage/vector_backfill_run.py): requests keyed
# by the real keying path, entries and vectors in a real DuckDB file and LanceDB folder,
# texts embedded by the real multilingual-e5-small.
E5 = "multilingual-e5-small"
P1, P2 = "2026-02-01", "2026-02-02"


class _Store:
    def __init__(self, home, now, embedding_model=E5):
        from storage.config import load_settings, write_namespace_override
        from storage.semantic_index import SemanticIndex

        write_namespace_override(
            home, "faq", {"semantic": {"embedding_model": embedding_model, "verify": False}}
        )
        self.home, self.now, self.model = home, now, embedding_model
        self.settings = load_settings(home=home)
        self.index = SemanticIndex(home / "lance", embedding_model, 384)
        self.embedded: list[str] = []

    def embed(self, embedding_model, texts):
        from inference.embedder import load_embedder

        spec = self.settings.embedding_model(embedding_model)
        self.embedded += texts
        return load_embedder(spec.engine, spec.model_folder, spec.dtype)(texts)

    def written(self, identities, partition, languages=None):
        """Entries a partition wrote, their vectors stored without the language (cross-language
        reuse was on then), or with the `languages` given."""
        from storage.vector_backfill import note_vector_kinds

        languages = [None] * len(identities) if languages is None else languages
        with open_store(self.home / "cache.duckdb") as con:
            write_entries(
                con, entry_rows(identities, ["{}"] * len(identities), self.now, partition=partition)
            )
            kind = any(language is not None for language in languages)
            note_vector_kinds(con, [(self.model, "acme", "faq", kind)], partition, self.now)
        rows = pl.DataFrame(
            {
                "key": [cache_key(canonical_request(x)) for x in identities],
                "semantic_scope": [
                    semantic_scope(x, self.model, language)
                    for x, language in zip(identities, languages, strict=True)
                ],
                "tenant": [x.tenant for x in identities],
                "namespace": [x.namespace for x in identities],
                "model": [x.model for x in identities],
                "model_version": [x.model_version for x in identities],
                "source_partition": [partition] * len(identities),
            },
            schema_overrides={"key": pl.Binary},
        )
        self.index.add_stored(rows, self.embed(self.model, [x.input for x in identities]))

    def keyed(self, partition, requests):
        """A partition's requests keyed now (the language in their scopes), as model_requests holds them."""
        from storage.exact_store import replace_partition
        from storage.keying import key_requests
        from storage.landing import ACCEPTED_SCHEMA

        rows = [
            (f"{partition}-{i}", "acme", "faq", model, "{}", "", text, None)
            for i, (model, text) in enumerate(requests)
        ]
        accepted = pl.DataFrame(rows, schema=ACCEPTED_SCHEMA, orient="row")
        keyed = key_requests(accepted, self.settings)
        with open_store(self.home / "cache.duckdb") as con:
            replace_partition(
                con, "model_requests", partition, keyed.with_columns(partition=pl.lit(partition))
            )

    def run(self, partition, limit=50_000):
        from storage.vector_backfill_run import index_entries_without_vectors

        with open_store(self.home / "cache.duckdb") as con:
            return index_entries_without_vectors(
                con,
                self.settings,
                partition,
                self.now,
                index_of=lambda _: self.index,
                embed=self.embed,
                limit=limit,
            )

    def kinds(self):
        with open_store(self.home / "cache.duckdb") as con:
            return con.sql("SELECT language_in_scope FROM vector_scope_kinds ORDER BY ALL").fetchall()

    def indexed(self):
        return sorted(self.index.keys()["key"].to_pylist())

    def scopes(self):
        found = self.index.keys(with_scopes=True)
        return dict(zip(found["key"].to_pylist(), found["semantic_scope"].to_pylist(), strict=True))


def test_a_stale_vector_is_dropped_only_where_its_model_version_is_superseded(tmp_path, now):
    """Vectors stored without the language, the namespace now keeping it: the partition's
    own model version is indexed again; a current version with no request that day is
    kept (the check goes on); a superseded version no request asks for is dropped."""
    store = _Store(tmp_path, now)
    current = identity("How do I reset my password?", namespace="faq")
    absent_today = identity(
        "I was charged twice", namespace="faq", model="intent-classifier", model_version="2026.01"
    )
    superseded = identity("What are your opening hours?", namespace="faq", model_version="0")
    store.written([current, absent_today, superseded], P1)
    store.keyed(P2, [("tiny-llm", "How can I reset my password?")])
    counts = store.run(P2)
    assert (counts.vectors_rescoped, counts.vectors_dropped) == (1, 1)
    assert store.indexed() == sorted(cache_key(canonical_request(x)) for x in (current, absent_today))
    # intent-classifier's vector is still of the other kind: the next partition checks again.
    assert store.kinds() == [(False,), (True,)]


def test_once_no_stale_vector_is_left_the_check_stops(tmp_path, now):
    """A superseded version's vector is dropped and the current one's indexed again within
    the limit: the other kind is forgotten only when the last is done, and a re-run reads
    nothing again."""
    store = _Store(tmp_path, now)
    current = [identity(t, namespace="faq") for t in ("How do I reset my password?", "Opening hours?")]
    store.written(
        [*current, identity("What are your opening hours?", namespace="faq", model_version="0")], P1
    )
    store.keyed(P2, [("tiny-llm", "How can I reset my password?")])
    first = store.run(P2, limit=1)
    assert (first.vectors_rescoped, first.vectors_dropped, first.entries_awaiting_vectors) == (1, 1, 1)
    assert store.kinds() == [(False,), (True,)]
    second = store.run(P2, limit=1)
    assert (second.vectors_rescoped, second.vectors_dropped, second.entries_awaiting_vectors) == (1, 0, 0)
    assert store.kinds() == [(True,)]
    store.embedded.clear()
    assert store.run(P2).vectors_rescoped == 0 and store.embedded == []


def test_vectors_an_older_coverage_rule_scoped_by_script_are_decided_again(tmp_path, now):
    """Coverage rule 1 scoped Cyrillic text, and Latin text read unsure, by its script: no
    request searches such a scope under rule 2, so the entry answered no rewording. The
    backfill decides each again: the Russian entry moves to the scope a Russian rewording
    searches, a one-word entry nothing places is kept exact-only and its vector deleted, an
    entry placed before is left alone; the check is recorded done and a re-run reads nothing."""
    from storage.semantic_coverage import COVERAGE_RULE_VERSION

    store = _Store(tmp_path, now)
    russian = identity("Как изменить пароль от моей учётной записи?", namespace="faq")
    one_word = identity("Precio", namespace="faq")
    english = identity("How do I reset my password?", namespace="faq")
    store.written([russian, one_word, english], P1, languages=["cyrillic", "latin", "en"])
    store.keyed(P2, [("tiny-llm", "Как поменять пароль от учётной записи?")])
    counts = store.run(P2)
    assert (counts.vectors_rescoped, counts.entries_kept_exact_only) == (1, 1)
    scopes = store.scopes()
    key = {x.input: cache_key(canonical_request(x)) for x in (russian, one_word, english)}
    assert scopes[key[russian.input]] == semantic_scope(russian, E5, "ru")
    assert key[one_word.input] not in scopes
    assert scopes[key[english.input]] == semantic_scope(english, E5, "en")
    with open_store(tmp_path / "cache.duckdb") as con:
        # The rewording is keyed with its language in its scope: the entry's, now.
        [(searched,)] = con.execute(
            "SELECT semantic_language FROM model_requests WHERE partition = ?", [P2]
        ).fetchall()
        checks = con.execute(
            "SELECT embedding_model, tenant, namespace, coverage_rule FROM unplaced_vector_checks"
        )
        assert checks.fetchall() == [(E5, "acme", "faq", COVERAGE_RULE_VERSION)]
    assert searched == "ru"
    store.embedded.clear()
    again = store.run(P2)
    assert (again.vectors_rescoped, again.entries_kept_exact_only) == (0, 0) and store.embedded == []
    assert store.scopes() == scopes


def test_a_stale_vector_of_an_entry_recorded_exact_only_is_dropped_and_the_check_ends(tmp_path, now):
    """The entry expired and was asked again: write-back recorded it exact-only under the
    current rule and left its old vector, which the backfill never takes (it skips entries
    recorded exact-only). The vector is dropped, counted, and the check recorded done."""
    from storage.vector_backfill import record_exact_only

    store = _Store(tmp_path, now)
    one_word = identity("Precio", namespace="faq")
    key = cache_key(canonical_request(one_word))
    store.written([one_word], P1, languages=["latin"])
    store.keyed(P2, [("tiny-llm", "Precio"), ("tiny-llm", "How can I reset my password?")])
    with open_store(tmp_path / "cache.duckdb") as con:
        [(reason, decided)] = con.execute(
            "SELECT semantic_skip_reason, semantic_decided_under FROM model_requests WHERE input = 'Precio'"
        ).fetchall()
        recorded = pl.DataFrame(
            {"key": [key], "verify": [False], "decided_under": [decided], "reason": [reason]},
            schema_overrides={"key": pl.Binary},
        )
        record_exact_only(con, recorded, E5, now)
    counts = store.run(P2)
    assert (counts.vectors_dropped, counts.entries_kept_exact_only) == (1, 0)
    assert key not in store.scopes()
    with open_store(tmp_path / "cache.duckdb") as con:
        assert con.execute("SELECT count(*) FROM unplaced_vector_checks").fetchall() == [(1,)]


def test_a_partition_keyed_under_an_older_rule_reopens_the_check(tmp_path, now):
    """A re-run of a partition keyed before the upgrade holds script-named languages: its
    write-back stores vectors under them again, so its look-up does not record the check
    done (and reopens a recorded one); the next partition, keyed under the current rule,
    finds those vectors and records it."""
    store = _Store(tmp_path, now)
    first = identity("Как изменить пароль от моей учётной записи?", namespace="faq")
    store.written([first], P1, languages=["cyrillic"])
    store.keyed(P2, [("tiny-llm", "Как изменить пароль от моей учётной записи?")])
    assert store.run(P2).vectors_rescoped == 1

    def checks():
        with open_store(tmp_path / "cache.duckdb") as con:
            return con.execute("SELECT count(*) FROM unplaced_vector_checks").fetchall()[0][0]

    assert checks() == 1
    older, after = "2026-02-03", "2026-02-04"
    store.keyed(older, [("tiny-llm", "Как удалить учётную запись навсегда?")])
    with open_store(tmp_path / "cache.duckdb") as con:  # as coverage rule 1 keyed it
        con.execute("UPDATE model_requests SET semantic_language = 'cyrillic' WHERE partition = ?", [older])
    store.run(older)
    assert checks() == 0
    late = identity("Как удалить мою учётную запись навсегда?", namespace="faq")
    store.written([late], older, languages=["cyrillic"])  # its write-back
    store.keyed(after, [("tiny-llm", "Как удалить учётную запись навсегда?")])
    assert store.run(after).vectors_rescoped == 1
    assert store.scopes()[cache_key(canonical_request(late))] == semantic_scope(late, E5, "ru")
    assert checks() == 1


def test_vectors_of_texts_the_current_rule_leaves_uncovered_are_dropped_once_a_rule(tmp_path, now):
    """Rule 2 let an English request with a Chinese word keep semantic reuse on MiniLM, where
    "续订 subscription" and "取消 subscription" (renew / cancel) are one vector: the vector
    stored then is dropped and its entry recorded exact-only; the English entry keeps its
    vector, and once the namespace is checked under the rule a re-run reads nothing."""
    from storage.semantic_coverage import COVERAGE_RULE_VERSION

    minilm = "all-MiniLM-L6-v2"
    store = _Store(tmp_path, now, embedding_model=minilm)
    renew = identity("续订 subscription", namespace="faq")
    english = identity("How do I reset my password?", namespace="faq")
    store.written([renew, english], P1)
    store.keyed(P2, [("tiny-llm", "How can I reset my password?")])
    counts = store.run(P2)
    assert (counts.vectors_dropped, counts.entries_kept_exact_only) == (1, 1)
    key = {x.input: cache_key(canonical_request(x)) for x in (renew, english)}
    assert store.indexed() == [key[english.input]]
    with open_store(tmp_path / "cache.duckdb") as con:
        [(reason,)] = con.execute("SELECT reason FROM exact_only_entries").fetchall()
        checks = con.execute("SELECT embedding_model, namespace, coverage_rule FROM covered_vector_checks")
        assert checks.fetchall() == [(minilm, "faq", COVERAGE_RULE_VERSION)]
    assert reason.startswith("text in Cjk script")
    again = store.run(P2)
    assert (again.vectors_dropped, again.entries_kept_exact_only) == (0, 0)


def test_stored_vectors_are_decided_again_under_the_settings_of_now_by_a_partition_keyed_under_them(
    tmp_path, now
):
    """On multilingual-e5-small a Chinese entry is covered while the namespace does not verify;
    once it verifies (the verifier reads English), it is not. A recompute of the older
    partition, keyed without verification, leaves the vector alone and records nothing; the
    next partition keyed with verification drops it."""
    from storage.config import load_settings, write_namespace_override

    store = _Store(tmp_path, now)
    chinese = identity("我怎么重置我的密码？", namespace="faq")
    store.written([chinese], P1, languages=["zh"])
    store.keyed(P1, [("tiny-llm", "How do I reset my password?")])
    assert store.run(P1).vectors_dropped == 0  # covered without verification

    def checks():
        with open_store(tmp_path / "cache.duckdb") as con:
            rows = con.execute("SELECT decided_under FROM covered_vector_checks").fetchall()
        return [signature for (signature,) in rows]

    [signature] = checks()
    assert signature.startswith(f"rule 3; {E5}: ") and signature.endswith("; verifier: off; languages apart")
    write_namespace_override(tmp_path, "faq", {"semantic": {"verify": True}})
    store.settings = load_settings(home=tmp_path)
    # Keyed without verification, the recompute is not the one to decide: it reopens the check.
    assert store.run(P1).vectors_dropped == 0 and checks() == []
    store.keyed(P2, [("tiny-llm", "How can I reset my password?")])
    counts = store.run(P2)
    assert (counts.vectors_dropped, counts.entries_kept_exact_only) == (1, 1)
    assert cache_key(canonical_request(chinese)) not in store.indexed()
    assert checks()[0].endswith("; verifier: en; languages apart")


def test_a_write_back_keyed_under_an_older_rule_reopens_the_check_a_later_look_up_recorded(tmp_path, now):
    """Steps of two runs take turns in the store's pool: a re-run of a partition keyed under
    rule 2 looks up (reopening the check), a partition keyed now looks up (recording it done),
    then the re-run writes back a vector rule 2 let through. Its write-back reopens the check,
    so the next partition keyed now drops that vector instead of keeping it for good."""
    from storage.vector_backfill_run import reopen_checks_after_write_back

    minilm = "all-MiniLM-L6-v2"
    store = _Store(tmp_path, now, embedding_model=minilm)
    store.written([identity("How do I reset my password?", namespace="faq")], P1)
    older, newer, next_day = "2026-02-03", "2026-02-04", "2026-02-05"
    store.keyed(older, [("tiny-llm", "How do I renew my subscription?")])
    with open_store(tmp_path / "cache.duckdb") as con:  # as coverage rule 2 keyed it
        con.execute(
            "UPDATE model_requests SET semantic_decided_under = 'rule 2' WHERE partition = ?", [older]
        )

    def checks():
        with open_store(tmp_path / "cache.duckdb") as con:
            return con.execute("SELECT count(*) FROM covered_vector_checks").fetchall()[0][0]

    store.run(older)
    store.keyed(newer, [("tiny-llm", "How can I reset my password?")])
    store.run(newer)
    assert checks() == 1
    renew = identity("续订 subscription", namespace="faq")
    store.written([renew], older)  # the re-run's write-back, after the newer look-up
    with open_store(tmp_path / "cache.duckdb") as con:
        reopen_checks_after_write_back(con, store.settings, older, minilm, {("acme", "faq")})
    assert checks() == 0
    store.keyed(next_day, [("tiny-llm", "How do I change my password?")])
    assert store.run(next_day).vectors_dropped == 1
    assert cache_key(canonical_request(renew)) not in store.indexed() and checks() == 1
    # A write-back of a partition keyed now leaves the check recorded.
    with open_store(tmp_path / "cache.duckdb") as con:
        reopen_checks_after_write_back(con, store.settings, next_day, minilm, {("acme", "faq")})
    assert checks() == 1


def test_a_return_to_earlier_settings_decides_the_stored_vectors_again(tmp_path, now):
    """Verification on, then off for a day (a calibration chose plain cosine) while a Chinese
    entry was indexed, then on again: the check recorded under verification the first time
    no longer holds, and the Chinese vector is dropped (a review found it kept; its nearest
    English request then had the verifier read Chinese)."""
    from storage.config import load_settings, write_namespace_override

    store = _Store(tmp_path, now)

    def verifying(on):
        write_namespace_override(tmp_path, "faq", {"semantic": {"verify": on}})
        store.settings = load_settings(home=tmp_path)

    verifying(True)
    store.keyed(P1, [("tiny-llm", "How do I reset my password?")])
    store.run(P1)
    verifying(False)
    store.keyed(P2, [("tiny-llm", "How can I reset my password?")])
    assert store.run(P2).vectors_dropped == 0
    chinese = identity("我怎么重置我的密码？", namespace="faq")
    store.written([chinese], P2, languages=["zh"])  # covered without verification
    verifying(True)
    store.keyed("2026-02-03", [("tiny-llm", "Reset my password")])
    counts = store.run("2026-02-03")
    assert (counts.vectors_dropped, counts.entries_kept_exact_only) == (1, 1)
    assert cache_key(canonical_request(chinese)) not in store.indexed()
    with open_store(tmp_path / "cache.duckdb") as con:
        [(signature,)] = con.execute("SELECT decided_under FROM covered_vector_checks").fetchall()
    assert signature.endswith("; verifier: en; languages apart")
