"""Reported wrong answers: the entry that answered stops answering requests like the reported one.

The pipeline tests switch the verifier off and lower the threshold on purpose, so that
"How do I cancel my subscription?" is answered by "How do I cancel my order?" (cosine
0.71): the shipped verifier rejects that pair, and a wrong answer is what is reported.
"""

import json
from datetime import datetime

import dagster as dg
import duckdb
import pytest

from orchestration.cli import main
from orchestration.resources import InferCacheResource
from storage.exact_store import open_store
from storage.wrong_answers import Asker, Reports, like_a_reported_request, report_wrong_answer
from tests.test_pipeline import _faq, _land, _materialize, _query

ORDER = "How do I cancel my order?"
SUBSCRIPTION = "How do I cancel my subscription?"
SCOPE = "acme/faq"
ENTRY_KEY = b"order-entry"


def _reports(minilm, text=SUBSCRIPTION, scope=SCOPE):
    return Reports({ENTRY_KEY: [{"text": text, "scope": scope, "vector": minilm([text])[0]}]})


def _blocked(minilm, texts, verify=None, threshold=0.7, scope=SCOPE):
    vectors = minilm(texts)
    askers = [
        Asker(t, scope, v, threshold, verify is not None, 0.7) for t, v in zip(texts, vectors, strict=True)
    ]
    found = like_a_reported_request(askers, [[ENTRY_KEY]] * len(texts), _reports(minilm), verify)
    return [ENTRY_KEY in keys for keys in found]


def test_the_reported_text_and_its_close_rewordings_are_blocked_without_verification(minilm):
    # cosine to the reported request: 1.0, 0.996, 0.683 (below 0.7), and 0.704 for the last
    texts = [SUBSCRIPTION, "How can I cancel my subscription?", "How can I cancel an order?"]
    assert _blocked(minilm, texts) == [True, True, False]
    # Cosine alone at a low threshold also blocks the entry's own rewording (0.704 >= 0.7):
    # the namespace's own threshold decides, as it decides what is served.
    assert _blocked(minilm, ["How can I cancel my order?"]) == [True]
    assert _blocked(minilm, ["How can I cancel my order?"], threshold=0.8) == [False]


def test_with_verification_only_what_the_verifier_accepts_as_the_reported_request_is_blocked(
    minilm, settings
):
    from inference.pair_verifier import load_verifier

    base = settings.embedding_model("all-MiniLM-L6-v2").model_folder()
    verify = load_verifier(str(base), None, dtype=settings.verifier_dtype).score
    texts = [
        SUBSCRIPTION,  # the same text: blocked without asking the verifier
        "How can I cancel my subscription?",  # the verifier: the same request
        "How can I cancel my order?",  # near by cosine (0.704), another request to the verifier
        "How do I pause my subscription?",  # 0.798, another request to the verifier
    ]
    assert _blocked(minilm, texts, verify=verify) == [True, True, False, False]


def test_a_report_of_another_scope_blocks_only_its_own_text(minilm):
    texts = [SUBSCRIPTION, "How can I cancel my subscription?"]
    assert _blocked(minilm, texts, scope="globex/faq") == [True, False]


def _cancel(request_id, text):
    return _faq(request_id, text, namespace="demo-cancellations")


@pytest.fixture
def home(tmp_path, monkeypatch):
    from storage.config import write_namespace_override

    # Plain cosine at 0.7: low enough to answer "cancel my subscription" with "cancel my order".
    write_namespace_override(
        tmp_path, "demo-cancellations", {"semantic": {"verify": False, "threshold": 0.7}}
    )
    monkeypatch.setenv("INFERCACHE_HOME", str(tmp_path))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    return tmp_path


def _outcomes(home, day):
    rows = _query(
        home, "SELECT request_id, path, served_key FROM request_outcomes WHERE partition = ?", [day]
    )
    return {row["request_id"]: (row["path"], row["served_key"]) for row in rows.iter_rows(named=True)}


def _key(home, request_id):
    rows = _query(home, "SELECT DISTINCT key FROM model_requests WHERE request_id = ?", [request_id])
    return rows["key"].item()


@pytest.mark.slow
def test_a_reported_folded_answer_is_recomputed_when_the_partition_runs_again(home, capsys):
    day = "2026-03-01"
    _land(home, day, [_cancel("a-1", ORDER), _cancel("a-2", SUBSCRIPTION)])
    resource, instance = InferCacheResource(home=str(home)), dg.DagsterInstance.ephemeral()
    _materialize(resource, day, instance)
    assert _outcomes(home, day)["a-2"] == ("folded", _key(home, "a-1"))

    assert main(["report-wrong", "--partition", day, "--request-id", "a-2", "--note", "another product"]) == 0
    assert "recompute the partition's answers with" in capsys.readouterr().out
    _materialize(resource, day, instance)

    assert _outcomes(home, day)["a-2"][0] == "model"
    rates = _query(home, "SELECT * FROM reported_wrong_rates WHERE partition = ?", [day])
    assert rates["reported_wrong"].to_list() == [1]
    assert rates["answered_by_another"].to_list() == [0]  # recomputed: nothing folded any more


@pytest.mark.slow
def test_a_reported_semantic_answer_stops_only_requests_like_it(home, capsys):
    day1, day2, day3 = "2026-03-01", "2026-03-02", "2026-03-03"
    _land(home, day1, [_cancel("b-1", ORDER)])
    _land(home, day2, [_cancel("b-2", SUBSCRIPTION), _cancel("b-3", "How can I cancel an order?")])
    resource, instance = InferCacheResource(home=str(home)), dg.DagsterInstance.ephemeral()
    _materialize(resource, day1, instance)
    _materialize(resource, day2, instance)
    order = _key(home, "b-1")
    assert _outcomes(home, day2) == {"b-2": ("semantic", order), "b-3": ("semantic", order)}  # b-2 wrong

    assert main(["report-wrong", "--partition", day2, "--request-id", "b-2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["request_text"], printed["served_text"]) == (SUBSCRIPTION, ORDER)
    assert printed["served_key"] == order.hex()
    _materialize(resource, day2, instance)
    assert _outcomes(home, day2) == {"b-2": ("model", None), "b-3": ("semantic", order)}

    # A rewording of the reported request is answered by the recomputed entry, never by the
    # reported one, even when that entry is gone.
    recomputed = _key(home, "b-2")
    with open_store(resource.locations.duckdb_path) as con:
        con.execute("DELETE FROM cache_entries WHERE key = ?", [recomputed])
    _land(
        home,
        day3,
        [_cancel("b-4", "How can I cancel my subscription?"), _cancel("b-5", "Steps to cancel my order")],
    )
    _materialize(resource, day3, instance)
    assert _outcomes(home, day3) == {"b-4": ("model", None), "b-5": ("semantic", order)}


def test_report_wrong_says_what_was_wrong_with_the_request(home, capsys):
    day = "2026-03-01"
    with open_store(home / "cache.duckdb") as con:
        with pytest.raises(ValueError, match="no request 'x-1' in partition 2026-03-01"):
            report_wrong_answer(con, day, "x-1", None, datetime(2026, 3, 1))
        con.execute(
            "INSERT INTO request_outcomes (partition, request_id, path, lookup_seconds, device_seconds, "
            "device_seconds_saved) VALUES (?, 'x-2', 'exact', 0, 0, 0)",
            [day],
        )
        con.execute(
            "INSERT INTO model_requests (partition, request_id, tenant, namespace, model, model_version, "
            "params_json, prefix, input, key, canonical_request, semantic_scope, embedding_model, "
            "semantic_enabled, semantic_threshold) VALUES (?, 'x-2', 'acme', 'faq', 'm', '1', '{}', '', "
            "'hi', 'k'::BLOB, '[]', 's', 'e', true, 0.9)",
            [day],
        )
    assert main(["report-wrong", "--partition", day, "--request-id", "x-2"]) == 2
    error = capsys.readouterr().err
    assert "answered by path 'exact', not by another request" in error
    con = duckdb.connect(str(home / "cache.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM wrong_answer_reports").fetchall() == [(0,)]
    finally:
        con.close()
