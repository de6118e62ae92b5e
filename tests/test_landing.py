"""Landing files: every row is accepted or quarantined with a reason, never dropped."""

import json

import polars as pl
import pytest

from storage.keying import key_requests
from storage.landing import read_landing

GOOD = {
    "request_id": "r1",
    "tenant": "acme",
    "namespace": "faq",
    "model": "tiny-llm",
    "params": {"temperature": 0},
    "input": "How do I reset my password?",
    "submitted_at": "2026-01-05T10:00:00Z",
}

BAD_ROWS = [
    ({**GOOD, "request_id": "e1", "input": "  \t "}, "empty input"),
    ({**GOOD, "request_id": "e2", "input": None}, "empty input"),
    ({**GOOD, "request_id": "m1", "model": "gpt-imaginary"}, "unknown model 'gpt-imaginary'"),
    ({**GOOD, "request_id": "p1", "params": [1, 2]}, "params must be a JSON object"),
    ({**GOOD, "request_id": "p2", "params": "not json"}, "params is not valid JSON"),
    ({**GOOD, "request_id": "t1", "tenant": ""}, "missing or empty tenant"),
    ({**GOOD, "request_id": "t2", "tenant": None}, "missing or empty tenant"),
    ({**GOOD, "request_id": "n1", "namespace": " "}, "missing or empty namespace"),
    ({**GOOD, "request_id": "s1", "submitted_at": "yesterday"}, "not an ISO-8601 timestamp"),
    ({**GOOD, "request_id": "x1", "prefix": 42}, "prefix must be a string"),
    ({**GOOD, "request_id": "u1", "input": "reset my password \ud83d"}, "input holds a lone surrogate"),
    ({**GOOD, "request_id": "u2", "prefix": "\udc00 system"}, "prefix holds a lone surrogate (U+DC00"),
    ({**GOOD, "request_id": "u3", "params": {"stop": "\ud83d"}}, "params holds a lone surrogate"),
    ({**GOOD, "request_id": "u4\ud83d"}, "request_id holds a lone surrogate (U+D83D at character 2)"),
    ({**GOOD, "input": "another text"}, "duplicate request_id 'r1'"),
]


def _write_jsonl(path, rows, extra_lines=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(row) for row in rows] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n")


def test_bad_rows_are_quarantined_with_their_reason(tmp_path, settings):
    rows = [GOOD] + [row for row, _ in BAD_ROWS]
    _write_jsonl(
        tmp_path / "day" / "a.jsonl",
        rows,
        [
            '{"request_id": "n2", "params": {"t": NaN}, '
            '"tenant": "a", "namespace": "b", '
            '"model": "tiny-llm", "input": "x"}',
            "{not json",
            "[1, 2]",
        ],
    )
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted["request_id"].to_list() == ["r1"]
    reasons = landed.quarantined["reason"].to_list()
    for (_, expected), reason in zip(BAD_ROWS, reasons, strict=False):
        assert expected in reason
    assert "NaN and infinity" in reasons[len(BAD_ROWS)]
    # An id that is no Unicode text is kept as its escape (a write of it would fail).
    assert "u4\\ud83d" in landed.quarantined["request_id"].to_list()
    assert "not valid JSON" in reasons[len(BAD_ROWS) + 1]
    assert "must be a JSON object" in reasons[len(BAD_ROWS) + 2]
    # Nothing dropped: every non-blank line is on one side, with its raw text kept.
    assert landed.accepted.height + landed.quarantined.height == len(rows) + 3
    assert landed.quarantined["raw_json"][-2] == "{not json"


def test_unknown_model_reason_names_the_known_models(tmp_path, settings):
    _write_jsonl(tmp_path / "day" / "a.jsonl", [{**GOOD, "model": "nope"}])
    reason = read_landing(tmp_path / "day", settings).quarantined["reason"][0]
    assert "intent-classifier" in reason and "tiny-llm" in reason


def test_parquet_and_jsonl_files_are_both_read(tmp_path, settings):
    _write_jsonl(tmp_path / "day" / "a.jsonl", [GOOD])
    pl.DataFrame([{**GOOD, "request_id": "r2", "params": json.dumps(GOOD["params"])}]).write_parquet(
        tmp_path / "day" / "b.parquet"
    )
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted["request_id"].to_list() == ["r1", "r2"]
    assert landed.accepted["params_json"].to_list() == ['{"temperature":0}'] * 2


def test_missing_day_folder_gives_no_rows(tmp_path, settings):
    landed = read_landing(tmp_path / "absent", settings)
    assert landed.accepted.height == 0 and landed.quarantined.height == 0


def test_timestamps_are_stored_in_utc(tmp_path, settings):
    _write_jsonl(tmp_path / "day" / "a.jsonl", [{**GOOD, "submitted_at": "2026-01-05T10:00:00+02:00"}])
    landed = read_landing(tmp_path / "day", settings)
    assert str(landed.accepted["submitted_at"][0]) == "2026-01-05 08:00:00"


def test_keyed_requests_carry_registry_version_and_namespace_labels(tmp_path, settings):
    _write_jsonl(
        tmp_path / "day" / "a.jsonl",
        [{**GOOD, "model": "intent-classifier", "namespace": "demo-support-intents", "params": {}}],
    )
    keyed = key_requests(read_landing(tmp_path / "day", settings).accepted, settings)
    row = keyed.row(0, named=True)
    assert row["model_version"] == settings.model("intent-classifier").version
    assert json.loads(row["params_json"])["labels"] == list(settings.namespace("demo-support-intents").labels)
    assert row["semantic_threshold"] == pytest.approx(
        settings.namespace("demo-support-intents").semantic.threshold
    )
    assert len(row["key"]) == 32
