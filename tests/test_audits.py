"""Audits: a share of the answers served from another request, recomputed and compared."""

import json

import dagster as dg
import polars as pl
import pytest

from orchestration.definitions import PARTITION_FLOW_ASSETS
from orchestration.resources import InferCacheResource
from storage.audits import audit_figures, audited_share, comparable_answer, compared, disagreement_note
from tests.test_pipeline import _intent, _land, _query


def test_the_audited_share_is_fixed_per_day_and_key_and_spread_over_zero_to_one():
    keys = [bytes([i]) * 32 for i in range(256)]
    shares = [audited_share("2026-03-01", key) for key in keys]
    assert shares == [audited_share("2026-03-01", key) for key in keys]  # a re-run audits the same
    assert all(0.0 <= share < 1.0 for share in shares)
    assert 0.4 < sum(share < 0.5 for share in shares) / len(shares) < 0.6
    next_day = [audited_share("2026-03-02", key) < 0.5 for key in keys]
    assert next_day != [share < 0.5 for share in shares]  # another day, other texts


def test_an_audit_rate_or_text_similarity_outside_zero_to_one_is_refused(tmp_path):
    from storage.config import ConfigError, load_settings, write_namespace_override

    write_namespace_override(tmp_path, "faq", {"semantic": {"audit_rate": 1.5}})
    with pytest.raises(ConfigError, match="semantic.audit_rate 1.5 is not in"):
        load_settings(home=tmp_path).namespace("faq")
    too_alike = {"audit_rate": 0.5, "audit_min_text_similarity": 2}
    write_namespace_override(tmp_path, "faq", {"semantic": too_alike})
    with pytest.raises(ConfigError, match="semantic.audit_min_text_similarity 2 is not in"):
        load_settings(home=tmp_path).namespace("faq")


def test_only_labels_are_compared():
    assert comparable_answer(json.dumps({"label": "billing", "scores": {"billing": 0.9}})) == "billing"
    assert comparable_answer(json.dumps({"text": "Reset it from the login page."})) is None
    assert comparable_answer(None) is None


def _sample(*rows):
    return pl.DataFrame(
        [
            {
                "request_id": request_id,
                "tenant": "acme",
                "namespace": "intents",
                "path": "semantic",
                "served_key": b"k",
                "served_answer_json": json.dumps(served),
            }
            for request_id, served in rows
        ],
        schema_overrides={"served_key": pl.Binary},
    )


def test_a_different_label_disagrees_and_text_or_a_failed_call_is_not_compared():
    sample = _sample(
        ("same", {"label": "billing"}),
        ("other", {"label": "billing"}),
        ("text", {"text": "a"}),
        ("failed", {"label": "billing"}),
    )
    recomputed = pl.DataFrame(
        {
            "request_id": ["same", "other", "text", "failed"],
            "answer_json": [
                json.dumps({"label": "billing"}),
                json.dumps({"label": "shipping"}),
                '{"text": "a"}',
                None,
            ],
            "error": [None, None, None, "out of memory"],
            "device_seconds": [0.1, 0.2, 0.3, 0.0],
        }
    )
    audits = compared(sample, recomputed)
    assert audits["agreed"].to_list() == [True, False, None, None]
    figures = audit_figures(audits)
    assert (figures["audited"], figures["comparable"], figures["disagreed"]) == (4, 2, 1)
    assert figures["not_recomputed"] == 1
    assert figures["agreement_rate"] == 0.5
    assert figures["audit_device_seconds"] == pytest.approx(0.6)
    assert audits["answer_similarity"].to_list() == [None] * 4  # no text similarity given


SERVED = "To cancel your order, open Orders, pick the order and choose Cancel order."
REWORDED = "Go to Orders, select the order you want to cancel, then click Cancel order."
OTHER_ANSWER = "To cancel your subscription, open Settings, then Billing, and choose Cancel subscription."


def test_generated_texts_are_compared_by_similarity_where_the_namespace_sets_a_minimum(minilm):
    def text_similarity(tenant, namespace, served, fresh):
        assert (tenant, namespace) == ("acme", "intents")
        return (minilm(served) * minilm(fresh)).sum(axis=1)

    sample = _sample(("reworded", {"text": SERVED}), ("other", {"text": SERVED}), ("label", {"label": "a"}))
    recomputed = pl.DataFrame(
        {
            "request_id": ["reworded", "other", "label"],
            "answer_json": [json.dumps({"text": t}) for t in (REWORDED, OTHER_ANSWER)] + ['{"label": "b"}'],
            "error": [None, None, None],
            "device_seconds": [0.1, 0.1, 0.1],
        }
    )
    # MiniLM puts the reworded answer closer to the served one than the other question's.
    recorded = compared(sample, recomputed, text_similarity)
    reworded, other, label = recorded["answer_similarity"].to_list()
    assert reworded > 0.9 and other < 0.8 and label is None
    assert recorded["agreed"].to_list() == [None, None, False]  # no minimum: text is recorded only

    judged = compared(sample, recomputed, text_similarity, lambda tenant, namespace: 0.85)
    assert judged["agreed"].to_list() == [True, False, False]
    assert audit_figures(judged)["median_answer_similarity"] == pytest.approx((reworded + other) / 2)
    note = disagreement_note(json.dumps({"text": SERVED}), json.dumps({"text": OTHER_ANSWER}), other)
    assert note.startswith(f"audit: the recomputed text is {other:.2f} similar to the served one")


DAY = "2026-03-01"


@pytest.fixture
def audited(tmp_path):
    """A partition whose lenient namespace folds a shipping complaint into a billing one."""
    from storage.config import write_namespace_override

    # Plain cosine at 0.6 folds a shipping complaint (0.73) into a billing one on purpose; the
    # two rewordings are 0.67 from the first request and 0.44 from each other.
    lenient = {"semantic": {"verify": False, "threshold": 0.6, "audit_rate": 1.0}}
    write_namespace_override(tmp_path, "demo-support-intents", lenient)
    _land(tmp_path, DAY, _audited_rows())
    instance = dg.DagsterInstance.ephemeral()

    def materialize(assets=PARTITION_FLOW_ASSETS, config_dir=None, partition=DAY, tags=None):
        resource = InferCacheResource(home=str(tmp_path), config_dir=config_dir)
        result = dg.materialize(
            assets, partition_key=partition, instance=instance, resources={"infercache": resource}, tags=tags
        )
        events = [
            e for e in result.get_asset_materialization_events() if e.asset_key.path == ["semantic_audit"]
        ]
        return {key: value.value for key, value in events[0].materialization.metadata.items()}

    materialize.instance = instance  # for the sensor's tests
    return tmp_path, materialize


def _audited_rows(tenant="acme"):
    return [
        _intent("i-1", "I was charged twice for my order", tenant),
        _intent("i-2", "You billed me twice", tenant),  # billing too: agrees
        _intent("i-3", "I was charged for my order but it never shipped", tenant),  # shipping: disagrees
    ]


def _figures(figures, *names):
    return tuple(figures[name] for name in names)


@pytest.mark.slow
def test_the_audit_reports_a_folded_answer_whose_label_the_model_would_not_give(audited):
    home, materialize = audited
    figures = materialize()
    assert _figures(figures, "audited", "comparable", "disagreed", "reported_now") == (2, 2, 1, 1)
    audits = _query(home, "SELECT request_id, agreed FROM semantic_audits ORDER BY request_id")
    assert audits.rows() == [("i-2", True), ("i-3", False)]
    reports = _query(home, "SELECT request_id, note, reported_by FROM wrong_answer_reports").rows()
    assert reports == [("i-3", "audit: the model answers 'shipping', the cache served 'billing'", "audit")]
    # The audit's device time is counted against what the cache saved.
    device = _query(home, "SELECT * FROM daily_device_seconds").row(0, named=True)
    audit_seconds = _query(home, "SELECT sum(device_seconds) FROM semantic_audits").item()
    assert audit_seconds > 0 and device["audited"] == 2
    assert device["audit_device_seconds"] == pytest.approx(audit_seconds)
    assert device["net_device_seconds_saved"] == pytest.approx(device["device_seconds_saved"] - audit_seconds)

    # The audit run again on its own finds the same answer: filed before, it asks for no
    # second recompute (the sensor reads reported_now).
    from assets.audit import semantic_audit

    figures = materialize(assets=[semantic_audit])
    assert _figures(figures, "disagreed", "reported_now", "reported_before") == (1, 0, 1)
    assert _query(home, "SELECT count(*) FROM wrong_answer_reports").item() == 1

    # The re-run the report asks for gives i-3 its own call; what the audit found stays counted.
    figures = materialize()
    paths = _query(home, "SELECT request_id, path FROM request_outcomes ORDER BY request_id").rows()
    assert paths == [("i-1", "model"), ("i-2", "folded"), ("i-3", "model")]
    assert _figures(figures, "audited", "disagreed", "reported_now") == (2, 1, 0)
    audits = _query(home, "SELECT request_id, agreed FROM semantic_audits ORDER BY request_id")
    assert audits.rows() == [("i-2", True), ("i-3", False)]


@pytest.mark.slow
def test_an_audit_that_fails_files_no_report_so_its_retry_asks_for_the_recompute(audited, monkeypatch):
    """Reports and audit rows are one transaction: a report left by a failed audit would
    read as filed before on the retry, and no recompute would ever be asked for."""
    import assets.audit
    from assets.audit import semantic_audit

    home, materialize = audited

    def disk_full(*args):
        raise OSError("disk full")

    with monkeypatch.context() as patched:
        patched.setattr(assets.audit, "record_audits", disk_full)
        with pytest.raises(Exception, match="disk full"):  # the flow up to the audit ran
            materialize()
    assert _query(home, "SELECT count(*) FROM wrong_answer_reports").item() == 0
    figures = materialize(assets=[semantic_audit])
    assert _figures(figures, "disagreed", "reported_now", "reported_before") == (1, 1, 0)


@pytest.mark.slow
def test_a_reviewer_who_withdraws_an_audit_report_is_not_overruled_by_the_next_audit(audited):
    from orchestration.cli import main

    home, materialize = audited
    materialize()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("INFERCACHE_HOME", str(home))
        env.setenv("DAGSTER_HOME", str(home / "dagster"))
        assert main(["report-wrong", "--partition", DAY, "--request-id", "i-3", "--withdraw"]) == 0
    figures = materialize()
    paths = _query(home, "SELECT request_id, path FROM request_outcomes ORDER BY request_id").rows()
    assert paths == [("i-1", "model"), ("i-2", "folded"), ("i-3", "folded")]  # the cache's answer stands
    assert _figures(figures, "disagreed", "reported_now", "overruled_by_reviewer") == (1, 0, 1)
    withdrawn = _query(home, "SELECT withdrawn_at IS NOT NULL AS withdrawn FROM wrong_answer_reports")
    assert withdrawn["withdrawn"].to_list() == [True]


@pytest.mark.slow
def test_answers_of_a_model_version_no_longer_registered_are_recorded_not_recomputed(
    audited, tmp_path_factory
):
    import shutil

    from assets.audit import semantic_audit
    from storage.config import DEFAULT_CONFIG_DIR

    home, materialize = audited
    materialize()
    bumped = tmp_path_factory.mktemp("config")
    shutil.copytree(DEFAULT_CONFIG_DIR, bumped, dirs_exist_ok=True)
    models = bumped / "models.yaml"
    models.write_text(models.read_text().replace('version: "2026.01"', 'version: "2026.02"'))
    figures = materialize([semantic_audit], config_dir=str(bumped))
    assert _figures(figures, "audited", "comparable", "not_recomputed") == (2, 1, 1)  # i-3's row is kept
    errors = _query(home, "SELECT request_id, error FROM semantic_audits ORDER BY request_id").rows()
    assert errors[0][0] == "i-2" and "is not the registry's (2026.02): not recomputed" in errors[0][1]


@pytest.mark.slow
def test_a_partition_whose_audit_reported_answers_is_recomputed_once_by_the_sensor(audited):
    from orchestration.review import AUDIT_RUN_TAG, recompute_after_audit
    from tests.helpers import sensor_tick

    home, materialize = audited
    instance = materialize.instance

    def tick(cursor):
        return sensor_tick(recompute_after_audit, instance, cursor, AUDIT_RUN_TAG)

    def last_run_id():
        return instance.get_run_records(limit=1)[0].dagster_run.run_id

    # The daily run's audit reports i-3: its partition is recomputed, once.
    assert materialize()["reported_now"] == 1
    audit_run = last_run_id()
    requests, cursor = tick(None)
    assert requests == [(DAY, f"audit:{audit_run}", audit_run)]
    assert tick(cursor)[0] == []

    # The recompute (tagged as the sensor tags it) answers i-3 itself; its audit reports nothing,
    # and asks for nothing.
    assert materialize(tags={AUDIT_RUN_TAG: audit_run})["reported_now"] == 0
    outcomes = "SELECT request_id, path FROM request_outcomes WHERE partition = ? ORDER BY 1"
    paths = _query(home, outcomes, [DAY])
    assert paths.rows() == [("i-1", "model"), ("i-2", "folded"), ("i-3", "model")]
    requests, cursor = tick(cursor)
    assert requests == []
    # Nor does a later ordinary run whose audit reports nothing.
    assert materialize()["reported_now"] == 0
    requests, cursor = tick(cursor)
    assert requests == []

    # A partition recomputed by hand after its audit reported is left alone.
    by_hand = "2026-03-04"
    _land(home, by_hand, _audited_rows(tenant="initech"))  # another tenant: nothing cached yet
    assert materialize(partition=by_hand)["reported_now"] == 1
    assert materialize(partition=by_hand)["reported_now"] == 0
    requests, cursor = tick(cursor)
    assert requests == []

    # A recompute's audit that reports more is left to a reviewer: no second automatic run.
    again = "2026-03-03"
    _land(home, again, _audited_rows(tenant="globex"))  # another tenant: nothing cached yet
    assert materialize(partition=again, tags={AUDIT_RUN_TAG: "an earlier audit run"})["reported_now"] == 1
    assert tick(cursor)[0] == []


@pytest.mark.slow
def test_the_audit_compares_generated_text_and_reports_what_is_less_alike_than_the_minimum(tmp_path):
    from storage.config import write_namespace_override
    from tests.test_pipeline import _faq

    # A lenient namespace folds a reworded question into the first one's call; given 12 tokens
    # the tiny model writes each prompt its own text, so the two texts are not alike at 0.999.
    lenient = {"verify": False, "threshold": 0.6, "audit_rate": 1.0, "audit_min_text_similarity": 0.999}
    write_namespace_override(tmp_path, "demo-faq-answers", {"semantic": lenient})
    params = {"temperature": 0, "max_new_tokens": 12}
    questions = [
        _faq("f-1", "How do I cancel my order?", params=params),
        _faq("f-2", "How can I cancel my order?", params=params),
    ]
    _land(tmp_path, DAY, questions)
    resource = InferCacheResource(home=str(tmp_path))
    result = dg.materialize(
        PARTITION_FLOW_ASSETS,
        partition_key=DAY,
        instance=dg.DagsterInstance.ephemeral(),
        resources={"infercache": resource},
    )
    events = result.get_asset_materialization_events()
    (event,) = [e for e in events if e.asset_key.path == ["semantic_audit"]]
    figures = {key: value.value for key, value in event.materialization.metadata.items()}
    assert _figures(figures, "audited", "comparable", "disagreed", "reported_now") == (1, 1, 1, 1)
    row = _query(tmp_path, "SELECT request_id, agreed, answer_similarity FROM semantic_audits").row(0)
    assert row[0] == "f-2" and row[1] is False and row[2] < 0.999
    assert figures["median_answer_similarity"] == pytest.approx(row[2])
    (note,) = _query(tmp_path, "SELECT note FROM wrong_answer_reports").row(0)
    assert note.startswith(f"audit: the recomputed text is {row[2]:.2f} similar to the served one")
