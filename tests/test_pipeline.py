"""Two daily partitions materialized in-process through Dagster on the real stack."""

import json

import dagster as dg
import duckdb
import numpy as np
import polars as pl
import pytest

from orchestration.definitions import PARTITION_FLOW_ASSETS
from orchestration.resources import InferCacheResource

pytestmark = pytest.mark.slow

DAY1, DAY2 = "2026-02-01", "2026-02-02"
SYSTEM = "You are a support assistant.\nQuestion: "


def _faq(request_id, text, tenant="acme", **extra):
    return {
        "request_id": request_id,
        "tenant": tenant,
        "namespace": "demo-faq-answers",
        "model": "tiny-llm",
        "params": {"temperature": 0, "max_new_tokens": 6},
        "prefix": SYSTEM,
        "input": text,
        **extra,
    }


def _intent(request_id, text, tenant="acme"):
    return {
        "request_id": request_id,
        "tenant": tenant,
        "namespace": "demo-support-intents",
        "model": "intent-classifier",
        "params": {},
        "input": text,
    }


DAY1_ROWS = [
    _faq("d1-1", "How do I reset my password?"),
    _faq("d1-2", "How do I reset my password?"),  # same key: folded into d1-1's call
    _faq("d1-3", "What are your opening hours?"),
    _faq("d1-4", "Do you ship internationally?", tenant="globex"),
    _faq("d1-5", "x" * 3000),  # over the tiny model's context: fails, partition goes on
    _intent("d1-6", "I was charged twice for my order"),
    _intent("d1-7", "I was charged twice for my order"),
    {"request_id": "d1-8", "tenant": "acme", "namespace": "demo-faq-answers", "model": "nope", "input": "hi"},
    _faq("d1-9", "   "),
    _faq("d1-10", "How do I cancel my order?"),
    _faq("d1-11", "How can I cancel my order?"),  # a verified look-alike: folded into d1-10's call
    _faq("d1-12", "How do I cancel my subscription?"),  # a near miss: its own call
]
DAY2_ROWS = [
    _faq("d2-1", "How do I reset my password?"),  # exact hit from day 1
    _faq("d2-2", "How can I reset my password?"),  # semantic hit from day 1
    _faq("d2-3", "How do I reset my password?", tenant="globex"),  # other tenant: miss
    _faq("d2-4", "Can I pay with a gift card?"),  # new
    _intent("d2-5", "I was charged twice for my order"),  # exact hit
    _faq("d2-6", "x" * 3000),  # failed again: failures are never cached
]


def _lenient_verifier(home):
    """These tests are about the flow, not the verifier's quality: a lenient verifier
    threshold keeps their paraphrases ("How do I / How can I cancel my order") served
    whatever the shipped model's exact score, while "cancel my subscription" stays out."""
    from storage.config import write_namespace_override

    write_namespace_override(home, "demo-faq-answers", {"semantic": {"verify_threshold": 0.7}})


def _land(home, day, rows):
    folder = home / "landing" / day
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _materialize(resource, day, instance):
    result = dg.materialize(
        PARTITION_FLOW_ASSETS, partition_key=day, instance=instance, resources={"infercache": resource}
    )
    assert result.success
    return result


def _failed_step(assets, resource, day, instance):
    """The one step that failed when the assets were materialized for the day."""
    result = dg.materialize(
        assets, partition_key=day, instance=instance, resources={"infercache": resource}, raise_on_error=False
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    return failure


def _query(home, sql, params=None):
    con = duckdb.connect(str(home / "cache.duckdb"), read_only=True)
    try:
        return con.sql(sql, params=params).pl()
    finally:
        con.close()


def _metadata(result, asset: str) -> dict:
    events = [e for e in result.get_asset_materialization_events() if e.asset_key.path == [asset]]
    return {k: v.value for k, v in events[0].materialization.metadata.items()}


def _report(result):
    return _metadata(result, "cache_report")


@pytest.fixture(scope="module")
def two_days(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    _lenient_verifier(home)
    _land(home, DAY1, DAY1_ROWS)
    _land(home, DAY2, DAY2_ROWS)
    resource = InferCacheResource(home=str(home))
    instance = dg.DagsterInstance.ephemeral()
    first = _materialize(resource, DAY1, instance)
    second = _materialize(resource, DAY2, instance)
    return home, resource, instance, first, second


def test_every_request_ends_in_one_outcome_row(two_days):
    home, *_ = two_days
    outcomes = _query(home, "SELECT partition, request_id, path FROM request_outcomes ORDER BY ALL")
    assert outcomes.height == len(DAY1_ROWS) + len(DAY2_ROWS)
    assert outcomes["request_id"].n_unique() == outcomes.height
    paths = dict(zip(outcomes["request_id"], outcomes["path"], strict=True))
    assert paths["d1-1"] == "model" and paths["d1-2"] == "folded"
    assert paths["d1-5"] == "failed" and paths["d2-6"] == "failed"
    assert paths["d1-8"] == "quarantined" and paths["d1-9"] == "quarantined"
    assert paths["d2-1"] == "exact" and paths["d2-5"] == "exact"
    assert paths["d2-2"] == "semantic"
    assert paths["d2-3"] == "model"  # the identical request of another tenant is not served
    assert paths["d1-10"] == "model" and paths["d1-11"] == "folded" and paths["d1-12"] == "model"
    served = _query(
        home, "SELECT request_id, key, served_key FROM request_outcomes WHERE request_id = 'd1-11'"
    )
    leader = _query(home, "SELECT key FROM request_outcomes WHERE request_id = 'd1-10'")
    assert served["served_key"][0] == leader["key"][0] != served["key"][0]
    # Of day 1's three folds one key (d1-11) went into a look-alike's call; d1-2 and d1-7
    # repeat the keys of d1-1 and d1-6.
    answered = _metadata(two_days[3], "inference_outputs")
    assert answered["lookalike_keys_folded"] == 1 and answered["folded"] == 3
    assert answered["lookalike_seconds"] > 0
    # Day 1's five calls of the FAQ prefix that ran (d1-1, d1-3, d1-4, d1-10, d1-12; d1-5 is
    # over the context) prefilled its 39 tokens once, not five times: 4 x 39 not computed.
    assert answered["prefix_tokens_reused"] == len(SYSTEM) * 4


def test_model_calls_plus_failed_equal_distinct_keys_that_missed(two_days):
    """Every distinct key that missed both look-ups made one call, unless it was folded
    into a verified look-alike's call."""
    home, *_ = two_days
    for day in (DAY1, DAY2):
        lookalike_keys = _query(
            home,
            """
            SELECT count(DISTINCT key) AS keys FROM request_outcomes
            WHERE partition = ? AND path = 'folded' AND served_key <> key
            """,
            [day],
        )["keys"][0]
        missed = _query(
            home,
            """
            SELECT count(DISTINCT r.key) AS keys
            FROM model_requests r JOIN exact_lookups e USING (partition, request_id)
            LEFT JOIN semantic_lookups s USING (partition, request_id)
            WHERE r.partition = ? AND NOT e.hit AND NOT coalesce(s.hit, false)
            """,
            [day],
        )["keys"][0]
        paths = _query(
            home, "SELECT path, count(*) AS n FROM request_outcomes WHERE partition = ? GROUP BY path", [day]
        )
        counts = dict(zip(paths["path"], paths["n"], strict=True))
        assert counts.get("model", 0) + counts.get("failed", 0) == missed - lookalike_keys


def test_report_adds_up_and_day_two_is_served_from_day_one(two_days):
    _, _, _, first, second = two_days
    for result, rows in ((first, DAY1_ROWS), (second, DAY2_ROWS)):
        report = _report(result)
        parts = ("quarantined", "exact_hits", "semantic_hits", "folded", "model_calls", "failed")
        assert report["requests"] == len(rows) == sum(report[p] for p in parts)
    day2 = _report(second)
    assert day2["exact_hits"] == 2 and day2["semantic_hits"] == 1
    assert day2["device_seconds_saved"] > 0
    assert _report(first)["quarantined"] == 2


def test_failed_answers_are_never_cached(two_days):
    home, *_ = two_days
    stored = _query(home, "SELECT input_text FROM cache_entries")["input_text"].to_list()
    assert "x" * 3000 not in stored
    assert len(stored) == 8  # d1-1, d1-3, d1-4, d1-6, d1-10, d1-12, d2-3, d2-4


def test_great_expectations_check_passes_on_accepted_rows(two_days):
    _, _, _, first, _ = two_days
    evaluations = {e.check_name: e.passed for e in first.get_asset_check_evaluations()}
    assert evaluations["accepted_requests_valid"] is True
    # 2 of 12 rows quarantined is above 5%: the warning check says so.
    assert evaluations["quarantine_rate_below_5_percent"] is False


def test_an_unreadable_file_fails_the_quarantine_check_whatever_the_rate(tmp_path):
    """A file that cannot be read is one quarantine row however many requests it held: 1 in
    41 is under 5%, and the check passed a day whose requests were mostly never read."""
    from assets.intake import model_requests

    home = tmp_path / "home"
    _land(home, DAY1, [_faq(f"r{i}", f"question number {i}") for i in range(40)])
    (home / "landing" / DAY1 / "more.parquet").write_bytes(b"not a parquet file")
    result = dg.materialize(
        [model_requests], partition_key=DAY1, resources={"infercache": InferCacheResource(home=str(home))}
    )
    check = next(
        e for e in result.get_asset_check_evaluations() if e.check_name == "quarantine_rate_below_5_percent"
    )
    assert check.metadata["quarantine_rate"].value == pytest.approx(1 / 41)
    assert check.metadata["unreadable_files"].value == 1
    assert check.passed is False


def test_a_bar_in_a_quarantine_reason_stays_in_its_cell():
    from assets.metadata import markdown_table

    table = markdown_table(pl.DataFrame({"reason": ["unknown model 'gpt | 4'"], "len": [3]})).value
    header, _, row = table.splitlines()
    assert row == "| unknown model 'gpt \\| 4' | 3 |"
    assert row.replace("\\|", "").count("|") == header.count("|")


def test_answers_are_exported_as_parquet(two_days):
    home, resource, *_ = two_days
    export = pl.read_parquet(resource.locations.answers_export(DAY2))
    assert export.height == len(DAY2_ROWS)
    answered = export.filter(pl.col("path") != "failed")
    assert answered["answer_json"].map_elements(lambda a: isinstance(json.loads(a), dict)).all()


def test_rematerializing_a_partition_gives_the_same_state(two_days):
    home, resource, instance, _, second = two_days
    index = resource.semantic_index("all-MiniLM-L6-v2")
    vectors_before = index.count()
    before_outcomes = _query(
        home,
        "SELECT * EXCLUDE (lookup_seconds, device_seconds, device_seconds_saved) "
        "FROM request_outcomes ORDER BY partition, request_id",
    )
    entries = "SELECT key, answer_json, source_partition, hit_count FROM cache_entries ORDER BY key"
    before_entries = _query(home, entries)
    kept_before = _query(home, "SELECT stage, key, score FROM verified_pair_scores ORDER BY ALL")
    again = _materialize(resource, DAY2, instance)
    after_outcomes = _query(
        home,
        "SELECT * EXCLUDE (lookup_seconds, device_seconds, device_seconds_saved) "
        "FROM request_outcomes ORDER BY partition, request_id",
    )
    after_entries = _query(home, entries)  # the hits too: a re-run counts each of its hits once
    assert before_outcomes.equals(after_outcomes)
    assert before_entries.equals(after_entries)
    assert before_entries["hit_count"].sum() > 0
    # One vector per entry (every namespace here has semantic reuse on), no duplicates.
    assert index.count() == vectors_before == before_entries.height
    assert _report(again)["semantic_hits"] == _report(second)["semantic_hits"]
    # The re-run met only pairs its first run had read: it kept no new score, and its
    # look-ups say so.
    assert kept_before.height and kept_before.equals(
        _query(home, "SELECT stage, key, score FROM verified_pair_scores ORDER BY ALL")
    )
    for asset in ("semantic_lookups", "inference_outputs"):
        first, rerun = _metadata(second, asset), _metadata(again, asset)
        asked = first["verifier_pairs_read"] + first["verifier_pairs_from_kept_scores"]
        assert rerun["verifier_pairs_read"] == 0
        assert rerun["verifier_pairs_from_kept_scores"] == asked
    assert _metadata(second, "semantic_lookups")["verifier_pairs_read"] > 0


def test_kept_pair_scores_change_no_outcome(two_days, tmp_path):
    """The same two days with every pair read afresh serve the same answers the same way."""
    home, *_ = two_days
    fresh_home = tmp_path / "fresh"
    _lenient_verifier(fresh_home)
    _land(fresh_home, DAY1, DAY1_ROWS)
    _land(fresh_home, DAY2, DAY2_ROWS)
    resource = InferCacheResource(home=str(fresh_home), keep_pair_scores=False)
    instance = dg.DagsterInstance.ephemeral()
    for day in (DAY1, DAY2):
        _materialize(resource, day, instance)
    outcomes = (
        "SELECT partition, request_id, path, served_key, answer_json FROM request_outcomes ORDER BY ALL"
    )
    assert _query(fresh_home, outcomes).equals(_query(home, outcomes))
    assert _query(fresh_home, "SELECT count(*) AS kept FROM verified_pair_scores")["kept"][0] == 0


def test_a_partition_where_no_namespace_verifies_never_loads_the_verifier(tmp_path, monkeypatch):
    """Semantic reuse on, verification off: look-ups and folding run on cosine alone, and
    the verifier's models (seconds to load) are not loaded for nothing."""
    from storage.config import write_namespace_override

    for namespace in ("demo-faq-answers", "demo-support-intents"):
        write_namespace_override(tmp_path, namespace, {"semantic": {"verify": False}})
    _land(tmp_path, DAY1, DAY1_ROWS)
    _land(tmp_path, DAY2, DAY2_ROWS)

    def not_needed(self):
        raise AssertionError("the verifier was loaded where no namespace verifies")

    monkeypatch.setattr(InferCacheResource, "pair_verifier", not_needed)
    resource = InferCacheResource(home=str(tmp_path))
    instance = dg.DagsterInstance.ephemeral()
    _materialize(resource, DAY1, instance)
    second = _materialize(resource, DAY2, instance)
    assert _report(second)["semantic_hits"] > 0
    assert _metadata(second, "semantic_lookups")["verifier_pairs_read"] == 0


def test_look_ups_never_use_request_embeddings_older_than_the_requests(tmp_path, monkeypatch):
    """Assets materialized on their own (from the UI, say) can leave request_embeddings
    behind model_requests: semantic reuse switched off since is honoured, and a vector of
    a text since changed is refused, never used to serve or fold another text."""
    from assets.answers import inference_outputs
    from assets.intake import model_requests
    from assets.lookups import exact_lookups, semantic_lookups
    from storage.config import write_namespace_override

    _lenient_verifier(tmp_path)
    _land(tmp_path, DAY1, DAY1_ROWS)
    _land(tmp_path, DAY2, DAY2_ROWS)
    resource = InferCacheResource(home=str(tmp_path))
    instance = dg.DagsterInstance.ephemeral()
    _materialize(resource, DAY1, instance)
    assert _report(_materialize(resource, DAY2, instance))["semantic_hits"] == 1
    without_embeddings = [model_requests, exact_lookups, semantic_lookups, inference_outputs]

    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"enabled": False}})
    result = dg.materialize(
        without_embeddings, partition_key=DAY2, instance=instance, resources={"infercache": resource}
    )
    assert result.success
    assert _metadata(result, "semantic_lookups")["searched"] == 0
    paths = _query(tmp_path, "SELECT path FROM inference_outputs WHERE request_id = 'd2-2'")
    assert paths["path"].to_list() == ["model"]

    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"enabled": True}})
    _land(tmp_path, DAY2, [_faq("d2-2", "How can I change my password?"), *DAY2_ROWS[2:]])
    failure = _failed_step(without_embeddings, resource, DAY2, instance)
    assert failure.step_key == "semantic_lookups"
    assert "(first: 'd2-2'): request_embeddings is older than model_requests" in str(
        failure.step_failure_data.error
    )

    # Other weights under the model's name since: the stored vectors are not theirs.
    _land(tmp_path, DAY2, DAY2_ROWS)
    assert _materialize(resource, DAY2, instance).success
    stored = _query(tmp_path, "SELECT DISTINCT model_fingerprint FROM request_embeddings")
    assert stored["model_fingerprint"].to_list() == [resource.embedding_fingerprint("all-MiniLM-L6-v2")]
    monkeypatch.setattr(InferCacheResource, "embedding_fingerprint", lambda self, name: "sha256:retrained")
    failure = _failed_step([model_requests, exact_lookups, semantic_lookups], resource, DAY2, instance)
    assert failure.step_key == "semantic_lookups"
    assert "by their current embedding model" in str(failure.step_failure_data.error)


def test_write_back_applies_each_tenant_namespace_own_capacity_and_ttl(tmp_path):
    from storage.config import write_namespace_override

    _lenient_verifier(tmp_path)
    # Tenant-level overrides: acme's FAQ namespace holds one entry, globex's keeps answers a day.
    write_namespace_override(tmp_path, "demo-faq-answers", {"capacity": {"max_entries": 1}}, tenant="acme")
    write_namespace_override(tmp_path, "demo-faq-answers", {"ttl_seconds": 86400}, tenant="globex")
    _land(tmp_path, DAY1, DAY1_ROWS)
    resource = InferCacheResource(home=str(tmp_path))
    result = _materialize(resource, DAY1, dg.DagsterInstance.ephemeral())
    per_scope = _query(
        tmp_path, "SELECT tenant, namespace, count(*) AS n FROM cache_entries GROUP BY ALL ORDER BY ALL"
    )
    assert per_scope.rows() == [
        ("acme", "demo-faq-answers", 1),  # four were answered, three evicted
        ("acme", "demo-support-intents", 1),
        ("globex", "demo-faq-answers", 1),
    ]
    lifetimes = _query(
        tmp_path,
        "SELECT DISTINCT tenant, namespace, epoch(expires_at - created_at)::BIGINT AS ttl FROM cache_entries"
        " ORDER BY ALL",
    )
    assert lifetimes.rows() == [
        ("acme", "demo-faq-answers", 604800),  # the namespace's own TTL (7 days)
        ("acme", "demo-support-intents", 2592000),
        ("globex", "demo-faq-answers", 86400),  # globex's override
    ]
    # Capacity counts each entry's vector in LanceDB (384 float32) with its row in DuckDB.
    vector_bytes = _query(
        tmp_path,
        "SELECT DISTINCT size_bytes - octet_length(key) - strlen(canonical_request) - strlen(answer_json)"
        " FROM cache_entries",
    )
    assert vector_bytes.to_series().to_list() == [384 * 4]
    write_back = [
        e for e in result.get_asset_materialization_events() if e.asset_key.path == ["cache_write_back"]
    ]
    assert write_back[0].materialization.metadata["entries_evicted"].value == 3
    # The evicted entries' vectors are gone too: one vector per stored entry.
    index = resource.semantic_index("all-MiniLM-L6-v2")
    assert index.count() == 3
    # A vector left without its entry (a write-back that stopped between the two stores)
    # is removed by the next write-back.
    stray = pl.DataFrame(
        {
            "key": [b"stray"],
            "semantic_scope": ["s"],
            "tenant": ["acme"],
            "namespace": ["demo-faq-answers"],
            "model": ["tiny-llm"],
            "model_version": ["1"],
        },
        schema_overrides={"key": pl.Binary},
    )
    index.add(stray, np.ones((1, index.dimension), dtype=np.float32), None)
    # acme's intents TTL lowered to an hour: its stored entry is retimed before the look-up.
    write_namespace_override(tmp_path, "demo-support-intents", {"ttl_seconds": 3600}, tenant="acme")
    again = _materialize(resource, DAY1, dg.DagsterInstance.ephemeral())
    assert _metadata(again, "exact_lookups")["entries_retimed"] == 1
    write_back = _metadata(again, "cache_write_back")
    assert write_back["vectors_removed"] == write_back["entries_evicted"] + 1
    assert resource.semantic_index("all-MiniLM-L6-v2").count() == 3


def test_the_resource_hands_the_configured_dtypes_to_its_models(tmp_path):
    """The pipeline embeds and verifies in the dtype models.yaml asks for (auto here)."""
    from inference.dtypes import resolve_dtype

    resource = InferCacheResource(home=str(tmp_path))
    settings = resource.settings()
    spec = settings.embedding_model("all-MiniLM-L6-v2")
    assert resource.embedder("all-MiniLM-L6-v2").dtype == resolve_dtype(spec.dtype)
    assert resource.verifier().__self__.dtype == resolve_dtype(settings.verifier_dtype)


def test_a_re_run_from_the_look_up_says_which_settings_changed_since_keying(tmp_path):
    """A recompute after a report starts at semantic_lookups and keeps the settings the
    partition was keyed under: a threshold raised since is named, not silently ignored."""
    from assets.lookups import semantic_lookups
    from storage.config import write_namespace_override

    _lenient_verifier(tmp_path)
    _land(tmp_path, DAY1, DAY1_ROWS)
    resource = InferCacheResource(home=str(tmp_path))
    instance = dg.DagsterInstance.ephemeral()
    first = _materialize(resource, DAY1, instance)
    assert _metadata(first, "semantic_lookups")["settings_changed_since_keying"] == []
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"threshold": 0.95}})
    again = dg.materialize(
        [semantic_lookups], partition_key=DAY1, instance=instance, resources={"infercache": resource}
    )
    changed = _metadata(again, "semantic_lookups")["settings_changed_since_keying"]
    assert [line.split(":")[0] for line in changed] == [  # each tenant with requests there
        "tenant 'acme' namespace 'demo-faq-answers'",
        "tenant 'globex' namespace 'demo-faq-answers'",
    ]
    assert all("threshold 0.72 -> 0.95 since this partition was keyed" in line for line in changed)


def test_turning_semantic_reuse_on_indexes_the_entries_written_while_it_was_off(tmp_path):
    """Entries answered while a namespace had semantic reuse off get their vectors before the
    first search with it on, so a paraphrase of one is served; a text the embedding model
    does not read stays exact-only, is recorded so, and is not read again by a re-run."""
    from storage.config import write_namespace_override

    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"enabled": False}})
    _land(
        tmp_path,
        DAY1,
        [
            _faq("d1-1", "How do I reset my password?"),
            _faq("d1-2", "What are your opening hours?"),
            _faq("d1-3", "我怎么重置我的密码？"),
        ],
    )
    _land(tmp_path, DAY2, [_faq("d2-1", "How can I reset my password?")])
    resource = InferCacheResource(home=str(tmp_path))
    first = _materialize(resource, DAY1, dg.DagsterInstance.ephemeral())
    assert _metadata(first, "semantic_lookups")["vectors_backfilled"] == 0
    assert resource.semantic_index("all-MiniLM-L6-v2").count() == 0  # reuse off: no vectors
    write_namespace_override(
        tmp_path, "demo-faq-answers", {"semantic": {"enabled": True, "verify_threshold": 0.7}}
    )
    # With no room to index any, the look-up still counts what waits, and misses.
    unindexed = _materialize(
        InferCacheResource(home=str(tmp_path), vector_backfill_limit=0), DAY2, dg.DagsterInstance.ephemeral()
    )
    assert _metadata(unindexed, "semantic_lookups")["entries_awaiting_vectors"] == 3
    assert _report(unindexed)["semantic_hits"] == 0
    second = _materialize(resource, DAY2, dg.DagsterInstance.ephemeral())
    lookups = _metadata(second, "semantic_lookups")
    assert (lookups["vectors_backfilled"], lookups["entries_kept_exact_only"]) == (2, 1)
    assert lookups["entries_awaiting_vectors"] == 0
    served = _query(
        tmp_path,
        "SELECT o.path, e.input_text FROM request_outcomes o JOIN cache_entries e ON e.key = o.served_key"
        " WHERE o.partition = ?",
        [DAY2],
    )
    assert served.rows() == [("semantic", "How do I reset my password?")]
    # Capacity now counts the vectors the backfill stored with their entries, not the other's.
    vector_bytes = _query(
        tmp_path,
        "SELECT input_text, size_bytes - octet_length(key) - strlen(canonical_request) - strlen(answer_json)"
        " AS vector_bytes FROM cache_entries WHERE source_partition = ? ORDER BY ALL",
        [DAY1],
    )
    assert vector_bytes["vector_bytes"].to_list() == [384 * 4, 384 * 4, 0]
    marked = _query(tmp_path, "SELECT embedding_model, verify, reason FROM exact_only_entries")
    assert marked.height == 1 and marked["embedding_model"][0] == "all-MiniLM-L6-v2"
    assert "all-MiniLM-L6-v2" in marked["reason"][0]
    # The backfilled vectors belong to day 1's entries: day 2 run again keeps them, reads
    # nothing again and serves the same.
    again = _materialize(resource, DAY2, dg.DagsterInstance.ephemeral())
    lookups = _metadata(again, "semantic_lookups")
    assert (lookups["vectors_backfilled"], lookups["entries_kept_exact_only"]) == (0, 0)
    assert _report(again)["semantic_hits"] == 1
    # Day 1's two, and the entry day 2's first run wrote for its miss: served now, so not
    # written again, and kept, as is its vector (it was dropped once, the entry left without).
    assert resource.semantic_index("all-MiniLM-L6-v2").count() == 3
    stored = _query(tmp_path, "SELECT key FROM cache_entries WHERE input_text NOT LIKE '我%'")["key"]
    assert set(stored.to_list()) == set(resource.semantic_index("all-MiniLM-L6-v2").keys()["key"].to_pylist())


def test_a_multilingual_namespace_answers_each_language_from_its_own(tmp_path):
    """On multilingual-e5-small without verification, an English request and its French
    wording sit at cosine 0.91: neither is folded into the other's call nor served the
    other's answer; each paraphrase is served from its own language's entry."""
    from storage.config import write_namespace_override

    semantic = {"embedding_model": "multilingual-e5-small", "verify": False, "threshold": 0.85}
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": semantic})
    _land(
        tmp_path,
        DAY1,
        [
            _faq("d1-1", "Comment réinitialiser mon mot de passe ?"),
            _faq("d1-2", "How do I reset my password?"),
        ],
    )
    _land(
        tmp_path,
        DAY2,
        [
            _faq("d2-1", "How can I reset my password?"),
            _faq("d2-2", "Comment puis-je réinitialiser mon mot de passe ?"),
        ],
    )
    resource = InferCacheResource(home=str(tmp_path))
    instance = dg.DagsterInstance.ephemeral()
    first = _materialize(resource, DAY1, instance)
    assert _metadata(first, "inference_outputs")["model_calls"] == 2  # not folded together
    _materialize(resource, DAY2, instance)
    served = _query(
        tmp_path,
        "SELECT o.request_id, o.path, e.input_text FROM request_outcomes o"
        " JOIN cache_entries e ON e.key = o.served_key WHERE o.partition = ? ORDER BY 1",
        [DAY2],
    )
    assert served.rows() == [
        ("d2-1", "semantic", "How do I reset my password?"),
        ("d2-2", "semantic", "Comment réinitialiser mon mot de passe ?"),
    ]


def test_a_text_the_model_cannot_read_is_recorded_exact_only_when_written(tmp_path):
    """Keying already said why a Chinese request gets exact matching only under MiniLM:
    write-back records its entry so, and the next look-up does not read it again."""
    from storage.semantic_coverage import COVERAGE_RULE_VERSION

    _land(tmp_path, DAY1, [_faq("d1-1", "我怎么重置我的密码？"), _faq("d1-2", "How do I reset my password?")])
    _land(tmp_path, DAY2, [_faq("d2-1", "What are your opening hours?")])
    resource = InferCacheResource(home=str(tmp_path))
    _materialize(resource, DAY1, dg.DagsterInstance.ephemeral())
    marked = _query(tmp_path, "SELECT embedding_model, verify, reason, decided_under FROM exact_only_entries")
    assert marked.rows() == [
        (
            "all-MiniLM-L6-v2",
            True,
            "text in Cjk script; all-MiniLM-L6-v2 covers en: exact matching only",
            f"rule {COVERAGE_RULE_VERSION}; all-MiniLM-L6-v2: en; verifier: en",  # as keying decided it
        )
    ]
    lookups = _metadata(_materialize(resource, DAY2, dg.DagsterInstance.ephemeral()), "semantic_lookups")
    assert (lookups["vectors_backfilled"], lookups["entries_kept_exact_only"]) == (0, 0)
    # Requests keyed before the signature was kept with them: it is computed at the look-up.
    from assets.lookups import semantic_lookups

    con = duckdb.connect(str(tmp_path / "cache.duckdb"))
    con.execute("UPDATE model_requests SET semantic_decided_under = NULL")
    con.close()
    again = dg.materialize(
        [semantic_lookups],
        partition_key=DAY2,
        instance=dg.DagsterInstance.ephemeral(),
        resources={"infercache": resource},
    )
    assert _metadata(again, "semantic_lookups")["entries_kept_exact_only"] == 0


def test_a_multilingual_namespace_keeps_its_answers_found_across_settings_changes(tmp_path):
    """Turning cross-language reuse off moves every request to scopes with its language: the
    vectors stored without it are indexed again under the new scopes, also after an older
    partition's write-back put one back the old way. Turning verification on moves nothing."""
    from assets.answers import cache_write_back
    from storage.config import write_namespace_override

    DAY3 = "2026-02-03"
    semantic = {"embedding_model": "multilingual-e5-small", "verify": False, "threshold": 0.85}
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {**semantic, "cross_language": True}})
    _land(tmp_path, DAY1, [_faq("d1-1", "How do I reset my password?")])
    _land(tmp_path, DAY2, [_faq("d2-1", "How can I reset my password?")])
    _land(tmp_path, DAY3, [_faq("d3-1", "How can I reset my password?")])
    resource = InferCacheResource(home=str(tmp_path))
    instance = dg.DagsterInstance.ephemeral()
    _materialize(resource, DAY1, instance)

    def served_and_rescoped(day):
        result = _materialize(resource, day, instance)
        return _report(result)["semantic_hits"], _metadata(result, "semantic_lookups")["vectors_rescoped"]

    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"cross_language": False}})
    assert served_and_rescoped(DAY2) == (1, 1)
    # Day 1's write-back alone again (a re-execution from failure, say), under its keyed settings.
    rerun = dg.materialize(
        [cache_write_back], partition_key=DAY1, instance=instance, resources={"infercache": resource}
    )
    assert rerun.success
    assert served_and_rescoped(DAY3) == (1, 1)
    write_namespace_override(
        tmp_path, "demo-faq-answers", {"semantic": {"verify": True, "verify_threshold": 0.7}}
    )
    assert served_and_rescoped(DAY3) == (1, 0)


def test_a_recompute_of_an_older_partition_leaves_a_newer_partitions_scopes_alone(tmp_path):
    """Days 1 and 2 were keyed with cross-language reuse, day 3 without: a recompute of day 2
    (under its keyed settings) does not move day 3's scopes back, and day 4 finds nothing to
    redo."""
    from assets.lookups import semantic_lookups
    from storage.config import write_namespace_override

    DAY3, DAY4 = "2026-02-03", "2026-02-04"
    semantic = {"embedding_model": "multilingual-e5-small", "verify": False, "threshold": 0.85}
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {**semantic, "cross_language": True}})
    _land(
        tmp_path,
        DAY1,
        [_faq("d1-1", "How do I reset my password?"), _faq("d1-2", "What are your opening hours?")],
    )
    _land(tmp_path, DAY2, [_faq("d2-1", "What are your opening hours?")])
    for day in (DAY3, DAY4):
        _land(tmp_path, day, [_faq(f"{day}-1", "How can I reset my password?")])
    resource = InferCacheResource(home=str(tmp_path))
    instance = dg.DagsterInstance.ephemeral()
    _materialize(resource, DAY1, instance)
    _materialize(resource, DAY2, instance)
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"cross_language": False}})
    assert _metadata(_materialize(resource, DAY3, instance), "semantic_lookups")["vectors_rescoped"] == 2
    recompute = dg.materialize(
        [semantic_lookups], partition_key=DAY2, instance=instance, resources={"infercache": resource}
    )
    assert _metadata(recompute, "semantic_lookups")["vectors_rescoped"] == 0
    fourth = _materialize(resource, DAY4, instance)
    assert _report(fourth)["semantic_hits"] == 1
    assert _metadata(fourth, "semantic_lookups")["vectors_rescoped"] == 0


def test_a_stale_vector_of_a_version_no_longer_requested_is_dropped_and_indexed_on_its_return(tmp_path):
    """Day 1 wrote under tiny-llm version 1 with cross-language reuse; day 2 requests version
    2 only, keyed without it: day 1's vector, under the old kind of scope, is dropped rather
    than indexed again for a version no request asks for, and the check stops. When
    version 1 comes back (day 3), its entry is indexed like any entry without a vector and
    serves the paraphrase."""
    import shutil

    from storage.config import DEFAULT_CONFIG_DIR, write_namespace_override

    DAY3 = "2026-02-03"
    semantic = {"embedding_model": "multilingual-e5-small", "verify": False, "threshold": 0.85}
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {**semantic, "cross_language": True}})
    _land(tmp_path, DAY1, [_faq("d1-1", "How do I reset my password?")])
    for day in (DAY2, DAY3):
        _land(tmp_path, day, [_faq(f"{day}-1", "How can I reset my password?")])
    upgraded = tmp_path / "upgraded-config"
    shutil.copytree(DEFAULT_CONFIG_DIR, upgraded)
    models = upgraded / "models.yaml"
    models.write_text(
        models.read_text().replace('name: tiny-llm\n    version: "1"', 'name: tiny-llm\n    version: "2"')
    )
    instance = dg.DagsterInstance.ephemeral()
    _materialize(InferCacheResource(home=str(tmp_path)), DAY1, instance)
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"cross_language": False}})

    second = _materialize(InferCacheResource(home=str(tmp_path), config_dir=str(upgraded)), DAY2, instance)
    lookups = _metadata(second, "semantic_lookups")
    assert (lookups["vectors_dropped"], lookups["vectors_rescoped"], lookups["vectors_backfilled"]) == (
        1,
        0,
        0,
    )
    assert _report(second)["semantic_hits"] == 0  # another version's answer is never served
    kinds = _query(tmp_path, "SELECT DISTINCT language_in_scope FROM vector_scope_kinds")
    assert kinds["language_in_scope"].to_list() == [True]  # nothing of the other kind is left

    third = _materialize(InferCacheResource(home=str(tmp_path)), DAY3, instance)
    lookups = _metadata(third, "semantic_lookups")
    assert (lookups["vectors_dropped"], lookups["vectors_backfilled"]) == (0, 1)
    served = _query(
        tmp_path,
        "SELECT o.path, e.input_text FROM request_outcomes o JOIN cache_entries e ON e.key = o.served_key"
        " WHERE o.partition = ?",
        [DAY3],
    )
    assert served.rows() == [("semantic", "How do I reset my password?")]


def test_a_day_whose_landing_files_are_gone_fails_and_keeps_what_it_stored(tmp_path):
    """Run again without its files, a day would have replaced its requests, answers and
    entries with nothing; it stops and says what is missing, and everything stays."""
    import shutil

    _land(tmp_path, DAY1, [_faq("d1-1", "How do I reset my password?"), _faq("d1-2", "Opening hours?")])
    resource = InferCacheResource(home=str(tmp_path))
    instance = dg.DagsterInstance.ephemeral()
    _materialize(resource, DAY1, instance)
    stored = "SELECT key, answer_json FROM cache_entries ORDER BY key"
    outcomes = "SELECT request_id, path FROM request_outcomes ORDER BY request_id"
    entries_before, outcomes_before = _query(tmp_path, stored), _query(tmp_path, outcomes)
    # The files are gone; a hidden file a desktop or a tool leaves is no day's requests.
    shutil.rmtree(tmp_path / "landing" / DAY1)
    (tmp_path / "landing" / DAY1).mkdir()
    (tmp_path / "landing" / DAY1 / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    failure = _failed_step(PARTITION_FLOW_ASSETS, resource, DAY1, instance)
    assert f"no landing files for {DAY1}" in failure.step_failure_data.error.message
    assert entries_before.height == 2 and entries_before.equals(_query(tmp_path, stored))
    assert outcomes_before.equals(_query(tmp_path, outcomes))


def test_after_a_model_upgrade_a_recompute_from_the_look_ups_stops_and_the_old_day_keeps_its_price(tmp_path):
    """A recompute after a report starts at the look-ups, with the partition's keys: after an
    upgrade it would serve the old version's answers. It stops and says to key the day again.
    The day's report, made again, prices its device time at the model's price."""
    import shutil

    from assets.lookups import semantic_lookups
    from assets.report import cache_report
    from storage.config import DEFAULT_CONFIG_DIR

    _land(tmp_path, DAY1, [_faq("d1-1", "How do I reset my password?")])
    _land(
        tmp_path,
        DAY2,
        [_faq("d2-1", "How do I reset my password?"), _faq("d2-2", "How can I reset my password?")],
    )
    instance = dg.DagsterInstance.ephemeral()
    _materialize(InferCacheResource(home=str(tmp_path)), DAY1, instance)
    _materialize(InferCacheResource(home=str(tmp_path)), DAY2, instance)
    upgraded = tmp_path / "upgraded-config"
    shutil.copytree(DEFAULT_CONFIG_DIR, upgraded)
    models = upgraded / "models.yaml"
    models.write_text(
        models.read_text().replace('name: tiny-llm\n    version: "1"', 'name: tiny-llm\n    version: "2"')
    )
    resource = InferCacheResource(home=str(tmp_path), config_dir=str(upgraded))
    failure = _failed_step([semantic_lookups], resource, DAY2, instance)
    assert "'tiny-llm' was keyed at version 1 and is version 2" in failure.step_failure_data.error.message
    report = dg.materialize(
        [cache_report], partition_key=DAY1, instance=instance, resources={"infercache": resource}
    )
    figures = _report(report)
    assert figures["device_seconds_used"] > 0 and figures["device_cost_usd"] > 0


def test_two_days_run_in_turns_keep_the_earlier_days_entries_and_a_re_run_is_served_by_them(tmp_path):
    """Dagster's store pool lets two runs go step by step in turns (day 1's look-up, day 2's,
    ..., day 1's write-back, day 2's): day 2 then asks the model what day 1 was about to
    store. Day 1's entry must stay day 1's (a review saw day 2 take it over, so that day 2 run
    again could never be served by it), and the re-run must not take the vectors of the
    entries it no longer writes (a review saw one left without its vector)."""
    from storage.config import write_namespace_override

    # Verification off: this is about the order of writes, not the verifier.
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"verify": False}})
    day_one = [_faq("a1", "How do I reset my password?"), _faq("a2", "What are your opening hours?")]
    _land(tmp_path, DAY1, day_one)
    _land(
        tmp_path,
        DAY2,
        [
            _faq("b1", "What are your opening hours?"),  # day 1 stores it after day 2's look-up
            _faq("b2", "How can I reset my password?"),  # day 1's "How do I ..." serves it on the re-run
            _faq("b3", "Do you ship internationally?"),
        ],
    )
    resource = InferCacheResource(home=str(tmp_path))
    instance = dg.DagsterInstance.ephemeral()
    steps = [asset.key.path[-1] for asset in PARTITION_FLOW_ASSETS]  # in the flow's order
    write_back = {}
    for step in steps:
        for day in (DAY1, DAY2):
            result = dg.materialize(
                PARTITION_FLOW_ASSETS,
                selection=[step],
                partition_key=day,
                instance=instance,
                resources={"infercache": resource},
            )
            if step == "cache_write_back":
                write_back[day] = _metadata(result, "cache_write_back")
    assert write_back[DAY2]["entries_kept_from_earlier_partitions"] == 1
    assert write_back[DAY2]["entries_written"] == 2
    owner = _query(tmp_path, "SELECT input_text, source_partition FROM cache_entries ORDER BY 1").rows()
    assert owner == [
        ("Do you ship internationally?", DAY2),
        ("How can I reset my password?", DAY2),
        ("How do I reset my password?", DAY1),
        ("What are your opening hours?", DAY1),
    ]

    report = _report(_materialize(resource, DAY2, instance))
    paths = _query(
        tmp_path, "SELECT request_id, path FROM request_outcomes WHERE partition = ? ORDER BY 1", [DAY2]
    ).rows()
    assert paths == [("b1", "exact"), ("b2", "semantic"), ("b3", "model")], report
    indexed = set(resource.semantic_index("all-MiniLM-L6-v2").keys()["key"].to_pylist())
    stored = _query(tmp_path, "SELECT key, input_text FROM cache_entries").rows()
    assert [text for key, text in stored if key not in indexed] == []


def test_a_re_run_with_semantic_reuse_off_takes_the_vectors_its_first_run_indexed(tmp_path):
    """The re-run writes its entries again without vectors (reuse off) and their size stops
    counting one: the vectors its first run indexed go too (a review saw them kept,
    uncounted by capacity, for good)."""
    from storage.config import write_namespace_override

    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"verify": False}})
    _land(
        tmp_path,
        DAY1,
        [_faq("a1", "How do I reset my password?"), _faq("a2", "What are your opening hours?")],
    )
    resource = InferCacheResource(home=str(tmp_path))
    _materialize(resource, DAY1, dg.DagsterInstance.ephemeral())
    vector_bytes = (
        "SELECT size_bytes - octet_length(key) - strlen(canonical_request) - strlen(answer_json)"
        " FROM cache_entries ORDER BY input_text"
    )
    assert _query(tmp_path, vector_bytes).rows() == [(384 * 4,), (384 * 4,)]
    assert resource.semantic_index("all-MiniLM-L6-v2").count() == 2
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": {"enabled": False}})
    again = _materialize(resource, DAY1, dg.DagsterInstance.ephemeral())
    assert _query(tmp_path, vector_bytes).rows() == [(0,), (0,)]
    assert resource.semantic_index("all-MiniLM-L6-v2").count() == 0
    assert _metadata(again, "cache_write_back")["vectors_removed"] == 2
