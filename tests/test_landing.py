"""Landing files: every row is accepted or quarantined with a reason, never dropped."""

import json
from datetime import date, datetime

import polars as pl
import pytest

from storage.exact_store import open_store, replace_partition
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


def _quarantined(landed) -> list[tuple[str, int, str]]:
    return landed.quarantined.select("source_file", "row_number", "reason").rows()


def test_a_line_that_is_not_utf8_is_quarantined_and_the_file_goes_on(tmp_path, settings):
    latin1 = json.dumps({**GOOD, "request_id": "r2", "input": "caf\u00e9"}, ensure_ascii=False)
    lines = [
        json.dumps(GOOD).encode(),
        latin1.encode("latin-1"),
        json.dumps({**GOOD, "request_id": "r3"}).encode(),
    ]
    (tmp_path / "day").mkdir()
    (tmp_path / "day" / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted["request_id"].to_list() == ["r1", "r3"]
    [(source_file, row_number, reason)] = _quarantined(landed)
    assert (source_file, row_number) == ("a.jsonl", 2)
    assert "not UTF-8 (byte 0xE9" in reason and "save the file as UTF-8" in reason
    # The raw line is kept, the byte written as its escape rather than replaced.
    assert "caf\\xe9" in landed.quarantined["raw_json"][0]


def test_a_utf8_byte_order_mark_at_the_start_is_accepted(tmp_path, settings):
    (tmp_path / "day").mkdir()
    (tmp_path / "day" / "a.jsonl").write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n")
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted["request_id"].to_list() == ["r1"] and landed.quarantined.height == 0


def test_suffixes_match_in_any_case_and_other_files_are_quarantined(tmp_path, settings):
    day = tmp_path / "day"
    _write_jsonl(day / "b.JSONL", [GOOD])
    pl.DataFrame([{**GOOD, "request_id": "r2", "params": "{}"}]).write_parquet(day / "c.Parquet")
    _write_jsonl(day / "a.json", [{**GOOD, "request_id": "r3"}])
    (day / "d.jsonl.gz").write_bytes(b"\x1f\x8b")
    (day / ".upload.tmp").write_text("partial")
    _write_jsonl(day / "late" / "e.jsonl", [{**GOOD, "request_id": "r4"}])
    landed = read_landing(day, settings)
    assert landed.accepted["request_id"].to_list() == ["r1", "r2"]
    *quarantined, (folder_name, _, folder_reason) = _quarantined(landed)
    assert folder_name == "late" and folder_reason.startswith("late is a folder (files in it are not read)")
    assert [(name, number) for name, number, _ in quarantined] == [("a.json", 0), ("d.jsonl.gz", 0)]
    for name, _, reason in quarantined:
        assert (
            reason.startswith(f"{name} is not a landing file") and ".jsonl" in reason and ".parquet" in reason
        )
    # The quarantine table takes a whole-file row as it takes a row of a file.
    with open_store(tmp_path / "cache.duckdb") as con:
        replace_partition(
            con, "quarantine", "2026-01-05", landed.quarantined.with_columns(partition=pl.lit("2026-01-05"))
        )
        assert con.sql("SELECT source_file FROM quarantine ORDER BY 1").fetchall() == [
            ("a.json",),
            ("d.jsonl.gz",),
            ("late",),
        ]


def test_parquet_params_struct_keys_as_the_same_request_in_jsonl(tmp_path, settings):
    requests = [
        {**GOOD, "params": {"temperature": 0}},
        {**GOOD, "request_id": "r2", "input": "Opening hours?", "params": {"max_new_tokens": 6}},
    ]
    _write_jsonl(tmp_path / "jsonl" / "a.jsonl", requests)
    (tmp_path / "parquet").mkdir()
    # Polars gives both rows both struct fields, the one a row lacks as null.
    pl.DataFrame(requests).write_parquet(tmp_path / "parquet" / "a.parquet")
    from_jsonl = key_requests(read_landing(tmp_path / "jsonl", settings).accepted, settings)
    from_parquet = key_requests(read_landing(tmp_path / "parquet", settings).accepted, settings)
    assert from_parquet["params_json"].to_list() == ['{"temperature":0}', '{"max_new_tokens":6}']
    assert from_parquet["key"].to_list() == from_jsonl["key"].to_list()


def test_an_unreadable_parquet_file_is_one_quarantine_row_and_the_day_goes_on(tmp_path, settings):
    _write_jsonl(tmp_path / "day" / "a.jsonl", [GOOD])
    (tmp_path / "day" / "broken.parquet").write_bytes(b"PAR1 truncated upload")
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted["request_id"].to_list() == ["r1"]
    [(source_file, row_number, reason)] = _quarantined(landed)
    assert (source_file, row_number) == ("broken.parquet", 0)
    assert (
        reason.startswith("could not read broken.parquet as Parquet (") and "out of specification" in reason
    )


def test_a_parquet_date_is_read_as_midnight(tmp_path, settings):
    (tmp_path / "day").mkdir()
    pl.DataFrame([{**GOOD, "submitted_at": date(2026, 1, 5)}]).write_parquet(tmp_path / "day" / "a.parquet")
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted["submitted_at"].to_list() == [datetime(2026, 1, 5)]


BAD_PARAMS = [
    ("tiny-llm", {"max_new_tokens": None}, "params.max_new_tokens is null: leave it out"),
    ("tiny-llm", {"max_new_tokens": -3}, "params.max_new_tokens is -3 (int): it must be a whole number of 1"),
    ("tiny-llm", {"max_new_tokens": 0}, "params.max_new_tokens is 0 (int)"),
    ("tiny-llm", {"max_new_tokens": "6"}, 'params.max_new_tokens is "6" (str)'),
    ("tiny-llm", {"max_new_tokens": 2.5}, "params.max_new_tokens is 2.5 (float)"),
    ("tiny-llm", {"max_new_tokens": True}, "params.max_new_tokens is true (bool)"),
    (
        "tiny-llm",
        {"temperature": "hot"},
        'params.temperature is "hot" (str): it must be a number of 0 or more',
    ),
    ("tiny-llm", {"temperature": -0.5}, "params.temperature is -0.5 (float)"),
    (
        "intent-classifier",
        {"labels": "billing"},
        'params.labels is "billing" (str): it must be a non-empty list',
    ),
    ("intent-classifier", {"labels": []}, "params.labels is [] (list)"),
    ("intent-classifier", {"labels": ["a", "a"]}, "distinct"),
]


@pytest.mark.parametrize(("model", "params", "expected"), BAD_PARAMS)
def test_params_a_backend_reads_are_checked(tmp_path, settings, model, params, expected):
    _write_jsonl(tmp_path / "day" / "a.jsonl", [{**GOOD, "model": model, "params": params}])
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted.height == 0
    assert expected in landed.quarantined["reason"][0]


def test_params_no_backend_reads_and_integral_floats_pass(tmp_path, settings):
    rows = [
        {**GOOD, "params": {"max_new_tokens": 6.0, "temperature": 0.7, "prompt_template": None}},
        {**GOOD, "request_id": "r2", "params": {"labels": "not read by a causal LM"}},
        {**GOOD, "request_id": "r3", "model": "intent-classifier", "params": {"max_new_tokens": -1}},
    ]
    _write_jsonl(tmp_path / "day" / "a.jsonl", rows)
    landed = read_landing(tmp_path / "day", settings)
    assert landed.quarantined.height == 0
    assert json.loads(landed.accepted["params_json"][0])["max_new_tokens"] == 6


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"request_id": 5}, "request_id must be a string, got int 5: send it as a string"),
        ({"tenant": ["acme"]}, 'tenant must be a string, got list ["acme"]'),
        ({"input": 5}, "input must be a string, got int 5"),
        ({"input": ["a"]}, "input must be a string, got list"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_as_such(tmp_path, settings, changes, expected):
    _write_jsonl(tmp_path / "day" / "a.jsonl", [{**GOOD, **changes}])
    assert read_landing(tmp_path / "day", settings).quarantined["reason"][0].startswith(expected)


def test_an_integer_request_id_from_parquet_is_not_coerced(tmp_path, settings):
    (tmp_path / "day").mkdir()
    pl.DataFrame([{**GOOD, "request_id": 7, "params": "{}"}]).write_parquet(tmp_path / "day" / "a.parquet")
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted.height == 0
    assert landed.quarantined["reason"][0].startswith("request_id must be a string, got int 7")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_a_jsonl_file_in_utf16_or_utf32_is_one_quarantine_row_saying_so(tmp_path, settings, encoding):
    text = "\r\n".join(json.dumps({**GOOD, "request_id": f"r{i}"}) for i in range(3)) + "\r\n"
    (tmp_path / "day").mkdir()
    (tmp_path / "day" / "a.jsonl").write_bytes(text.encode(encoding))
    _write_jsonl(tmp_path / "day" / "b.jsonl", [{**GOOD, "request_id": "b1"}])
    landed = read_landing(tmp_path / "day", settings)
    assert landed.accepted["request_id"].to_list() == ["b1"]
    [(source_file, row_number, reason)] = _quarantined(landed)
    assert (source_file, row_number) == ("a.jsonl", 0)
    assert "not UTF-8: save it as UTF-8" in reason and "UTF-" in reason
