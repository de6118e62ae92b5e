"""Reported wrong answers: neither side of a reported pairing answers requests like the other.

The pipeline tests switch the verifier off and lower the threshold on purpose (plain
cosine at 0.65), so that "How do I cancel my subscription?" is answered by "How do I
cancel my order?" (cosine 0.71): the shipped verifier rejects that pair, and a wrong
answer is what is reported.
"""

import json
from datetime import datetime

import dagster as dg
import duckdb
import polars as pl
import pytest

from orchestration.cli import main
from orchestration.resources import InferCacheResource
from storage.exact_store import open_store
from storage.wrong_answers import Asker, Reports, Side, blocked_by_reports, report_wrong_answer
from tests.helpers import sensor_tick
from tests.test_pipeline import _faq, _land, _materialize, _query

ORDER = "How do I cancel my order?"
SUBSCRIPTION = "How do I cancel my subscription?"
SCOPE = "acme/faq"
ENTRY_KEY = b"order-entry"
THRESHOLD = 0.65


def _reports(minilm, text=SUBSCRIPTION, scope=SCOPE, with_vector=True):
    vector = minilm([text])[0] if with_vector else None
    return Reports({ENTRY_KEY: [Side(text, scope, vector)]})


def _blocked(minilm, texts, verify=None, threshold=THRESHOLD, scope=SCOPE, reports=None):
    vectors = minilm(texts)
    verify_on = verify is not None
    askers = [Asker(t, scope, v, threshold, verify_on, 0.7) for t, v in zip(texts, vectors, strict=True)]
    found = blocked_by_reports(askers, [[ENTRY_KEY]] * len(texts), reports or _reports(minilm), verify)
    return [ENTRY_KEY in keys for keys in found]


def test_the_reported_text_and_its_close_rewordings_are_blocked_without_verification(minilm):
    # cosine to the reported request: 1.0, 0.996, and 0.56 (an order question)
    texts = [SUBSCRIPTION, "How can I cancel my subscription?", "Can I cancel the order I just placed?"]
    assert _blocked(minilm, texts) == [True, True, False]
    # Cosine alone at a low threshold also takes in the entry's own rewordings (0.70 to the
    # reported request): the namespace's threshold decides, as it decides what is served.
    assert _blocked(minilm, ["How can I cancel my order?"], threshold=0.6) == [True]
    assert _blocked(minilm, ["How can I cancel my order?"], threshold=0.8) == [False]


def test_with_verification_only_rewordings_the_verifier_accepts_are_blocked(minilm, settings):
    from inference.pair_verifier import load_verifier

    base = settings.embedding_model("all-MiniLM-L6-v2").model_folder()
    verify = load_verifier(str(base), None, dtype=settings.verifier_dtype).score
    texts = [
        SUBSCRIPTION,  # the same text: blocked without asking the verifier
        "How can I cancel my subscription?",  # the verifier: the same request
        "How can I cancel my order?",  # near by cosine (0.70), another request to the verifier
        "How do I pause my subscription?",  # 0.80, another request to the verifier
    ]
    assert _blocked(minilm, texts, verify=verify) == [True, True, False, False]


def test_a_rewording_too_long_for_the_verifier_to_read_beside_the_report_is_blocked(minilm, settings):
    """The verifier scores a pair it cannot read whole 0, which for a report would mean
    "not alike": the reported answer would reach a long rewording of the reported request.
    Here such a pair counts as alike, so the report blocks."""
    from inference.pair_verifier import load_verifier

    base = settings.embedding_model("all-MiniLM-L6-v2").model_folder()
    verifier = load_verifier(str(base), None, dtype=settings.verifier_dtype)
    story = (
        "I ordered a winter coat two weeks ago for my daughter's birthday and it still has not "
        "shipped, the tracking page has said label created since Monday, and the chat assistant "
        "keeps sending me the same article about delivery times when I ask where it is, "
    ) * 2
    reported = story + "how do I cancel my subscription?"
    rewording = story + "how can I cancel the subscription?"
    assert verifier.unread([(rewording, reported)])[0]  # too long to read together
    assert not verifier.unread([("How can I cancel my subscription?", SUBSCRIPTION)])[0]
    reports = _reports(minilm, text=reported)
    assert _blocked(minilm, [rewording], verify=verifier.score, reports=reports) == [True]


def test_a_side_without_its_vector_or_of_another_scope_blocks_only_its_own_text(minilm):
    texts = [SUBSCRIPTION, "How can I cancel my subscription?"]
    assert _blocked(minilm, texts, scope="globex/faq") == [True, False]
    assert _blocked(minilm, texts, reports=_reports(minilm, with_vector=False)) == [True, False]


def test_a_side_of_the_askers_embedding_model_blocks_rewordings_whatever_the_scope(minilm):
    """A namespace that starts keeping languages apart (or a new rule placing languages) moves
    its scopes; a report on the same embedding model still stops rewordings (before, a review
    saw a rewording served the reported answer). Another embedding model's vector compares
    with nothing."""
    texts = [SUBSCRIPTION, "How can I cancel my subscription?"]
    vectors = minilm(texts)
    side = Side(SUBSCRIPTION, "acme/faq/en", minilm([SUBSCRIPTION])[0], "all-MiniLM-L6-v2")

    def blocked(embedding_model):
        askers = [
            Asker(t, SCOPE, v, THRESHOLD, False, 0.7, embedding_model)
            for t, v in zip(texts, vectors, strict=True)
        ]
        found = blocked_by_reports(askers, [[ENTRY_KEY]] * 2, Reports({ENTRY_KEY: [side]}), None)
        return [ENTRY_KEY in keys for keys in found]

    assert blocked("all-MiniLM-L6-v2") == [True, True]
    assert blocked("multilingual-e5-small") == [True, False]
    assert blocked(None) == [True, False]  # an asker of unknown model: scopes decide, as before


def test_folding_compares_a_report_by_embedding_model_too(minilm):
    """inference_outputs dropped the embedding model before folding, so folding still compared
    scopes (a review folded the rewording into the reported answer's look-alike)."""
    from storage.wrong_answers import blocked_within

    texts = [ORDER, "How can I cancel my subscription?"]
    group = pl.DataFrame(
        {
            "key": [ENTRY_KEY, b"rewording"],
            "input": texts,
            "semantic_scope": [SCOPE, SCOPE],
            "semantic_threshold": [THRESHOLD] * 2,
            "semantic_verify": [False] * 2,
            "semantic_verify_threshold": [0.7] * 2,
            "embedding_model": ["all-MiniLM-L6-v2"] * 2,
        }
    )
    side = Side(SUBSCRIPTION, "acme/faq/en", minilm([SUBSCRIPTION])[0], "all-MiniLM-L6-v2")
    reports = Reports({ENTRY_KEY: [side]})
    assert blocked_within(group, minilm(texts), None, reports) == frozenset({(1, 0)})
    assert blocked_within(group.drop("embedding_model"), minilm(texts), None, reports) == frozenset()


def _cancel(request_id, text):
    return _faq(request_id, text, namespace="demo-cancellations")


@pytest.fixture
def home(tmp_path, monkeypatch):
    from storage.config import write_namespace_override

    plain_cosine = {"semantic": {"verify": False, "threshold": THRESHOLD}}
    write_namespace_override(tmp_path, "demo-cancellations", plain_cosine)
    monkeypatch.setenv("INFERCACHE_HOME", str(tmp_path))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    return tmp_path


@pytest.fixture
def flow(home):
    """Land a day's rows and materialize it (again): the same resource and instance throughout."""
    resource, instance = InferCacheResource(home=str(home)), dg.DagsterInstance.ephemeral()

    def run(day, rows=None):
        if rows is not None:
            _land(home, day, rows)
        _materialize(resource, day, instance)

    return run


def _outcomes(home, day):
    sql = "SELECT request_id, path, served_key FROM request_outcomes WHERE partition = ?"
    rows = _query(home, sql, [day])
    return {row["request_id"]: (row["path"], row["served_key"]) for row in rows.iter_rows(named=True)}


def _key(home, request_id):
    rows = _query(home, "SELECT DISTINCT key FROM model_requests WHERE request_id = ?", [request_id])
    return rows["key"].item()


def _delete_entry(home, key):
    """As if the entry had expired or been evicted."""
    with open_store(home / "cache.duckdb") as con:
        con.execute("DELETE FROM cache_entries WHERE key = ?", [key])


def _report(*args):
    return main(["report-wrong", "--partition", *args])


@pytest.mark.slow
def test_a_reported_folded_answer_is_recomputed_and_never_folded_either_way_again(home, flow, capsys):
    day1, day2 = "2026-03-01", "2026-03-02"
    steps = "order cancellation steps"
    # a-4 repeats a-1 word for word: folded into its call, yet given the model's own answer
    # to its own input, so no report can count against it.
    flow(
        day1,
        [_cancel("a-1", ORDER), _cancel("a-2", SUBSCRIPTION), _cancel("a-3", steps), _cancel("a-4", ORDER)],
    )
    order = _key(home, "a-1")
    folded = {
        "a-1": ("model", None),
        "a-2": ("folded", order),
        "a-3": ("folded", order),
        "a-4": ("folded", order),
    }
    assert _outcomes(home, day1) == folded

    assert _report(day1, "--request-id", "a-2", "--note", "another product") == 0
    assert "recompute the partition's answers with" in capsys.readouterr().out
    flow(day1)
    assert _outcomes(home, day1) == {
        "a-1": ("model", None),
        "a-2": ("model", None),
        "a-3": ("folded", order),
        "a-4": ("folded", order),
    }
    rates = _query(home, "SELECT * FROM reported_wrong_rates WHERE partition = ?", [day1])
    assert rates.select("answered_by_another", "reported_wrong", "reported_wrong_rate").row(0) == (2, 1, 0.5)

    # Reversed: with both entries gone, the subscription question leads and the order
    # question does not fold into it.
    _delete_entry(home, order)
    _delete_entry(home, _key(home, "a-2"))
    flow(day2, [_cancel("b-1", SUBSCRIPTION), _cancel("b-2", ORDER)])
    assert _outcomes(home, day2) == {"b-1": ("model", None), "b-2": ("model", None)}


@pytest.mark.slow
def test_a_reported_semantic_answer_stops_only_requests_like_it_either_way(home, flow, capsys):
    day1, day2, day3, day4 = "2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04"
    flow(day1, [_cancel("b-1", ORDER)])
    flow(day2, [_cancel("b-2", SUBSCRIPTION), _cancel("b-3", "Can I cancel the order I just placed?")])
    order = _key(home, "b-1")
    assert _outcomes(home, day2) == {"b-2": ("semantic", order), "b-3": ("semantic", order)}  # b-2 wrong

    assert _report(day2, "--request-id", "b-2", "--json") == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["request_text"], printed["served_text"]) == (SUBSCRIPTION, ORDER)
    assert printed["served_key"] == order.hex()
    assert printed["embedding_model"] == "all-MiniLM-L6-v2"
    flow(day2)
    assert _outcomes(home, day2) == {"b-2": ("model", None), "b-3": ("semantic", order)}

    # Reversed: with the order entry gone, the order question is not answered by the reported
    # request's own entry; its own call stores the order entry again, under the same key.
    _delete_entry(home, order)
    flow(day3, [_cancel("c-1", ORDER)])
    assert _outcomes(home, day3)["c-1"] == ("model", None)

    # A rewording of the reported request is never answered by the order entry, even once
    # the recomputed subscription entry is gone; rewordings of the order question still are.
    _delete_entry(home, _key(home, "b-2"))
    rewording = "How can I cancel my subscription?"
    flow(day4, [_cancel("d-1", rewording), _cancel("d-2", "order cancellation steps")])
    assert _outcomes(home, day4) == {"d-1": ("model", None), "d-2": ("semantic", order)}


@pytest.mark.slow
def test_a_second_wrong_answer_to_a_request_does_not_undo_the_first_report(home, flow):
    day1, day2, day3 = "2026-03-01", "2026-03-02", "2026-03-03"
    flow(day1, [_cancel("p-1", "How do I pause my subscription?")])  # cosine 0.80 to the request
    flow(day2, [_cancel("p-2", "How do I cancel my account?")])  # 0.78
    flow(day3, [_cancel("r-1", SUBSCRIPTION)])
    pause, account = _key(home, "p-1"), _key(home, "p-2")
    assert _outcomes(home, day3)["r-1"] == ("semantic", pause)
    assert _report(day3, "--request-id", "r-1") == 0
    assert _report(day3, "--request-id", "r-1", "--note", "said again") == 0  # the same report
    flow(day3)
    assert _outcomes(home, day3)["r-1"] == ("semantic", account)
    assert _report(day3, "--request-id", "r-1") == 0
    flow(day3)
    assert _outcomes(home, day3)["r-1"] == ("model", None)
    notes = _query(home, "SELECT note FROM wrong_answer_reports ORDER BY reported_at")["note"].to_list()
    assert notes == ["said again", None]

    assert main(["report-wrong", "--partition", day3, "--request-id", "r-1", "--withdraw"]) == 0
    flow(day3)
    assert _outcomes(home, day3)["r-1"] == ("semantic", pause)


def _insert_outcome(con, day, request_id, path):
    con.execute(
        "INSERT INTO request_outcomes (partition, request_id, path, lookup_seconds, device_seconds, "
        "device_seconds_saved) VALUES (?, ?, ?, 0, 0, 0)",
        [day, request_id, path],
    )


def test_report_wrong_says_why_a_request_cannot_be_reported(home, capsys):
    day, now = "2026-03-01", datetime(2026, 3, 1)
    with open_store(home / "cache.duckdb") as con:
        with pytest.raises(ValueError, match="partition 2026-03-01 has no request outcomes: materialize it"):
            report_wrong_answer(con, day, "x-1", None, now)
        for request_id, path in [("x-2", "exact"), ("x-3", "quarantined"), ("x-4", "model")]:
            _insert_outcome(con, day, request_id, path)
        with pytest.raises(ValueError, match="no request 'x-1' in partition 2026-03-01"):
            report_wrong_answer(con, day, "x-1", None, now)
        with pytest.raises(ValueError, match="was quarantined"):
            report_wrong_answer(con, day, "x-3", None, now)
        with pytest.raises(ValueError, match="answered by its own model call"):
            report_wrong_answer(con, day, "x-4", None, now)
    assert _report(day, "--request-id", "x-2") == 2
    assert "was an exact hit: it got the model's own answer" in capsys.readouterr().err
    con = duckdb.connect(str(home / "cache.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM wrong_answer_reports").fetchall() == [(0,)]
    finally:
        con.close()


def test_a_report_needs_the_stored_embedding_of_the_request(home):
    day = "2026-03-01"
    with open_store(home / "cache.duckdb") as con:
        _insert_outcome(con, day, "x-5", "semantic")
        con.execute(
            "INSERT INTO model_requests (partition, request_id, tenant, namespace, model, model_version, "
            "params_json, prefix, input, key, canonical_request, semantic_scope, embedding_model, "
            "semantic_enabled, semantic_threshold) VALUES (?, 'x-5', 'acme', 'faq', 'm', '1', '{}', '', "
            "'hi', 'k'::BLOB, '[]', 's', 'e', true, 0.9)",
            [day],
        )
        with pytest.raises(ValueError, match="no stored embedding: re-materialize the partition's"):
            report_wrong_answer(con, day, "x-5", None, datetime(2026, 3, 1))
        con.execute(  # folded into the call of a request with the same key
            "UPDATE request_outcomes SET path = 'folded', served_key = 'k'::BLOB WHERE request_id = 'x-5'"
        )
        with pytest.raises(ValueError, match="folded into the call of an identical request"):
            report_wrong_answer(con, day, "x-5", None, datetime(2026, 3, 1))


def test_a_request_whose_id_a_later_row_repeated_is_still_reportable(home):
    """The repeat is quarantined under the same id; the report is about the request served."""
    day = "2026-03-01"
    with open_store(home / "cache.duckdb") as con:
        _insert_outcome(con, day, "x-6", "quarantined")
        _insert_outcome(con, day, "x-6", "semantic")
        con.execute(
            "UPDATE request_outcomes SET served_key = 'other'::BLOB, tenant = 'acme', namespace = 'faq' "
            "WHERE path = 'semantic'"
        )
        con.execute(
            "INSERT INTO model_requests (partition, request_id, tenant, namespace, model, model_version, "
            "params_json, prefix, input, key, canonical_request, semantic_scope, embedding_model, "
            "semantic_enabled, semantic_threshold) VALUES (?, 'x-6', 'acme', 'faq', 'm', '1', '{}', '', "
            "'hi', 'k'::BLOB, '[]', 's', 'e', true, 0.9)",
            [day],
        )
        con.execute(
            "INSERT INTO request_embeddings (partition, request_id, text_hash, vector, lookup_seconds) "
            "VALUES (?, 'x-6', 'h', [1.0, 0.0]::FLOAT[], 0)",
            [day],
        )
        report = report_wrong_answer(con, day, "x-6", None, datetime(2026, 3, 1))
        assert (report["path"], report["served_key"], report["already_reported"]) == (
            "semantic",
            b"other",
            False,
        )
        assert con.execute("SELECT count(*) FROM wrong_answer_reports").fetchall() == [(1,)]


def _launch(job_name, instance, home, **kwargs):
    from orchestration.definitions import defs

    job = defs().resolve_job_def(job_name)
    resources = {"infercache": InferCacheResource(home=str(home))}
    return job.execute_in_process(instance=instance, resources=resources, raise_on_error=False, **kwargs)


def _report_config(day, request_id, **extra):
    from orchestration.review import REPORT_OP

    return {"ops": {REPORT_OP: {"config": {"partition": day, "request_id": request_id, **extra}}}}


def _failure_message(result):
    failures = [event for event in result.all_events if event.is_step_failure]
    return failures[0].step_failure_data.user_failure_data.description


def _sensor_tick(instance, cursor):
    from orchestration.review import REPORT_RUN_TAG, recompute_after_report

    return sensor_tick(recompute_after_report, instance, cursor, REPORT_RUN_TAG)


@pytest.mark.slow
def test_a_report_from_the_ui_is_recorded_and_its_partition_recomputed_by_the_sensor(home, capsys):
    # Dagster's own cursor class, to write the cursor an existing install holds exactly.
    from dagster._core.definitions.run_status_sensor_definition import RunStatusSensorCursor

    day1, day2 = "2026-03-01", "2026-03-02"
    resource, instance = InferCacheResource(home=str(home)), dg.DagsterInstance.ephemeral()
    _land(home, day1, [_cancel("u-1", ORDER)])
    _materialize(resource, day1, instance)
    _land(home, day2, [_cancel("u-2", SUBSCRIPTION)])
    _materialize(resource, day2, instance)
    order = _key(home, "u-1")
    assert _outcomes(home, day2) == {"u-2": ("semantic", order)}

    # Reports filed while no daemon runs, caught up on at the sensor's first tick. A request
    # that cannot be reported fails the run with the CLI's explanation, and the sensor
    # watches successful runs only; a report filed with recompute: false (more to follow)
    # recomputes nothing.
    refused = _launch("report_wrong_answer", instance, home, run_config=_report_config(day2, "nope"))
    assert not refused.success
    assert "no request 'nope' in partition 2026-03-02" in _failure_message(refused)
    quiet = _report_config(day2, "u-2", recompute=False)
    assert _launch("report_wrong_answer", instance, home, run_config=quiet).success
    first = _launch("report_wrong_answer", instance, home, run_config=_report_config(day2, "u-2", note="a"))
    assert first.success
    requests, cursor = _sensor_tick(instance, None)
    assert requests == [(day2, first.run_id, first.run_id)]
    assert _sensor_tick(instance, cursor)[0] == []  # once per report run

    # The same report again, with the daemon running: the report's one row takes the new note.
    reported = _launch(
        "report_wrong_answer", instance, home, run_config=_report_config(day2, "u-2", note="ui")
    )
    assert reported.success
    notes = _query(home, "SELECT note, reported_by FROM wrong_answer_reports").rows()
    assert notes == [("ui", "reviewer")]
    # The cursor of the run-status sensor this one replaced (JSON, kept by the daemon under
    # the sensor's name) is read as the event it stood at.
    legacy = RunStatusSensorCursor(record_id=int(cursor)).to_json()
    assert _sensor_tick(instance, legacy) == _sensor_tick(instance, cursor)
    requests, cursor = _sensor_tick(instance, cursor)
    assert requests == [(day2, reported.run_id, reported.run_id)]
    # Read together (a daemon started afresh), two report runs of one partition make one
    # recompute, keyed by the later one; a tick reads the log in several reads.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("orchestration.review.EVENTS_PER_READ", 2)
        assert _sensor_tick(instance, None)[0] == [(day2, reported.run_id, reported.run_id)]

    recomputed = _launch("recompute_from_semantic_lookups", instance, home, partition_key=day2)
    assert recomputed.success
    assert _outcomes(home, day2) == {"u-2": ("model", None)}
    # A daemon started afresh now finds the partition recomputed since its reports.
    assert _sensor_tick(instance, None)[0] == []

    # A withdrawal recomputes nothing (the recomputed answer is the model's own), and
    # withdrawing twice has nothing to take back, from the UI or the CLI.
    withdraw = _report_config(day2, "u-2", withdraw=True)
    assert _launch("report_wrong_answer", instance, home, run_config=withdraw).success
    assert _sensor_tick(instance, cursor)[0] == []
    again = _launch("report_wrong_answer", instance, home, run_config=withdraw)
    assert "nothing to withdraw" in _failure_message(again)
    assert main(["report-wrong", "--partition", day2, "--request-id", "u-2", "--withdraw"]) == 2
    assert "nothing to withdraw" in capsys.readouterr().err
