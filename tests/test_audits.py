"""Audits: a share of the answers served from another request, recomputed and compared."""

import json

import dagster as dg
import polars as pl
import pytest

from orchestration.definitions import PARTITION_FLOW_ASSETS
from orchestration.resources import InferCacheResource
from storage.audits import audit_figures, audited_share, comparable_answer, compared
from tests.test_pipeline import _intent, _land, _query


def test_the_audited_share_of_a_key_is_fixed_and_spread_over_zero_to_one():
    keys = [bytes([i]) * 32 for i in range(256)]
    shares = [audited_share(key) for key in keys]
    assert shares == [audited_share(key) for key in keys]
    assert all(0.0 <= share < 1.0 for share in shares)
    assert 0.4 < sum(share < 0.5 for share in shares) / len(shares) < 0.6


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
    assert figures["agreement_rate"] == 0.5
    assert figures["audit_device_seconds"] == pytest.approx(0.6)


@pytest.mark.slow
def test_the_audit_reports_a_folded_answer_whose_label_the_model_would_not_give(tmp_path):
    from storage.config import write_namespace_override

    # Plain cosine at 0.6 folds a shipping complaint (0.73) into a billing one on purpose; the
    # two rewordings are 0.67 from the first request and 0.44 from each other.
    lenient = {"semantic": {"verify": False, "threshold": 0.6, "audit_rate": 1.0}}
    write_namespace_override(tmp_path, "demo-support-intents", lenient)
    day = "2026-03-01"
    rows = [
        _intent("i-1", "I was charged twice for my order"),
        _intent("i-2", "You billed me twice"),  # billing too: agrees
        _intent("i-3", "I was charged for my order but it never shipped"),  # shipping: disagrees
    ]
    _land(tmp_path, day, rows)
    resource, instance = InferCacheResource(home=str(tmp_path)), dg.DagsterInstance.ephemeral()

    def materialize():
        result = dg.materialize(
            PARTITION_FLOW_ASSETS, partition_key=day, instance=instance, resources={"infercache": resource}
        )
        events = [
            e for e in result.get_asset_materialization_events() if e.asset_key.path == ["semantic_audit"]
        ]
        return {key: value.value for key, value in events[0].materialization.metadata.items()}

    figures = materialize()
    assert (figures["audited"], figures["comparable"], figures["disagreed"], figures["reported_wrong"]) == (
        2,
        2,
        1,
        1,
    )
    audits = _query(tmp_path, "SELECT request_id, agreed FROM semantic_audits ORDER BY request_id")
    assert audits.rows() == [("i-2", True), ("i-3", False)]
    notes = _query(tmp_path, "SELECT request_id, note FROM wrong_answer_reports").rows()
    assert len(notes) == 1 and notes[0][0] == "i-3" and '"label":"shipping"' in notes[0][1]

    # The re-run the report asks for gives i-3 its own call; the audit then has only i-2.
    figures = materialize()
    paths = _query(tmp_path, "SELECT request_id, path FROM request_outcomes ORDER BY request_id").rows()
    assert paths == [("i-1", "model"), ("i-2", "folded"), ("i-3", "model")]
    assert (figures["audited"], figures["disagreed"]) == (1, 0)
