"""Bad labelled files and options are refused with where and what, before any model loads."""

import json
from pathlib import Path

import pytest

from inference.pair_data import LabelledFileError, read_pairs, read_workload
from orchestration.cli import main
from orchestration.evaluation import _require_enough_evidence, effective_namespace
from storage.calibration import Operating
from storage.config import ConfigError, load_settings


def _lines(path: Path, *rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_a_pairs_label_must_be_one_of_the_two(tmp_path):
    for label in ("no", "false", 2, None, 0.5):
        path = _lines(
            tmp_path / "p.jsonl",
            {"a": "x", "b": "y", "duplicate": True},
            {"a": "x", "b": "z", "duplicate": label},
        )
        with pytest.raises(LabelledFileError, match=r'p.jsonl:2: "duplicate" must be true or false'):
            read_pairs(path)
    path = _lines(
        tmp_path / "q.jsonl", {"a": "x", "b": "y", "duplicate": 1}, {"a": "x", "b": "z", "duplicate": 0}
    )
    assert [p["duplicate"] for p in read_pairs(path)] == [True, False]


@pytest.mark.parametrize(
    "row, message",
    [
        ('{"a": "x", "b": ', r":1: not valid JSON \(.* at column \d+\)"),
        ("[1, 2]", r":1: each line must be one JSON object"),
        ({"a": 5, "b": "y", "duplicate": True}, r':1: "a" and "b" must be non-empty strings'),
        ({"a": "x", "b": "  ", "duplicate": True}, r':1: "a" and "b" must be non-empty strings'),
        ({"a": "x", "duplicate": True}, r":1: a pair needs the fields a, b and duplicate"),
    ],
)
def test_a_bad_pair_row_is_named_by_its_line(tmp_path, row, message):
    with pytest.raises(LabelledFileError, match=message):
        read_pairs(_lines(tmp_path / "p.jsonl", row))


def test_a_workload_text_stands_in_one_group_only(tmp_path):
    path = _lines(
        tmp_path / "w.jsonl",
        {"text": "cancel my order", "group": "order"},
        {"text": "cancel my subscription", "group": "subscription"},
        {"text": "cancel my order", "group": "subscription"},
    )
    with pytest.raises(
        LabelledFileError,
        match=r"w.jsonl:3: 'cancel my order' is in group 'subscription' here and in 'order' at line 1",
    ):
        read_workload(path)


def test_a_workload_group_is_text_or_a_whole_number(tmp_path):
    path = _lines(tmp_path / "w.jsonl", {"text": "a", "group": 7}, {"text": "b", "group": "g"})
    assert [r["group"] for r in read_workload(path)] == ["7", "g"]
    for group in (None, [1], {"g": 1}, True, 1.5, " "):
        with pytest.raises(
            LabelledFileError, match=r'w.jsonl:1: each row needs a non-empty string "text" and a "group"'
        ):
            read_workload(_lines(tmp_path / "w.jsonl", {"text": "a", "group": group}))


def test_a_limit_stops_reading_before_a_bad_row(tmp_path):
    path = _lines(tmp_path / "w.jsonl", {"text": "a", "group": "g"}, {"text": "b", "group": "g"}, "not json")
    assert len(read_workload(path, limit=2)) == 2
    with pytest.raises(LabelledFileError, match=r"w.jsonl:3: not valid JSON"):
        read_workload(path)


def test_a_missing_file_is_said_as_such(tmp_path):
    with pytest.raises(LabelledFileError, match=r"nothing.jsonl: no such file"):
        read_pairs(tmp_path / "nothing.jsonl")


@pytest.mark.parametrize(
    "option, value", [("threshold", -1.0), ("threshold", 1.5), ("verify_threshold", 7.0)]
)
def test_evaluate_overrides_are_held_to_the_configured_ranges(option, value):
    with pytest.raises(ConfigError, match=f"--{option.replace('_', '-')} {value}"):
        effective_namespace(load_settings(), "default", None, **{option: value})


def test_too_little_data_is_refused_but_too_low_a_precision_is_an_answer():
    few = [Operating.counted(0.8, None, served=30, right=30, positives=30)]
    with pytest.raises(
        LabelledFileError,
        match=r"at least 100 hits, 99 of them right.*serves 30 right here.*nothing was written",
    ):
        _require_enough_evidence(Path("p.jsonl"), few, 0.01)
    imprecise = [Operating.counted(0.8, None, served=400, right=300, positives=300)]
    _require_enough_evidence(Path("p.jsonl"), imprecise, 0.01)  # enough evidence: no error


@pytest.mark.parametrize(
    "argv, said",
    [
        (
            ["evaluate", "--workload", "{tmp}/none.jsonl"],
            "infercache evaluate: {tmp}/none.jsonl: no such file",
        ),
        (
            ["evaluate", "--workload", "{tmp}/w.jsonl", "--threshold", "2"],
            "infercache evaluate: --threshold 2.0 is not",
        ),
        (["evaluate", "--workload", "{tmp}/w.jsonl", "--model", "nope"], "unknown embedding model 'nope'"),
        (["evaluate", "--workload", "{tmp}/empty.jsonl"], "empty.jsonl holds no rows"),
        (
            ["calibrate", "--pairs", "{tmp}/w.jsonl", "--tenant", "t", "--namespace", "n"],
            "w.jsonl:1: a pair needs the fields",
        ),
    ],
)
def test_the_command_line_says_what_was_wrong_without_a_traceback(tmp_path, monkeypatch, capsys, argv, said):
    monkeypatch.setenv("INFERCACHE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    _lines(tmp_path / "w.jsonl", {"text": "a", "group": "g"})
    (tmp_path / "empty.jsonl").write_text("\n")
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert said.format(tmp=tmp_path) in err and "Traceback" not in err
    assert not (tmp_path / "home" / "config").exists()  # nothing written


@pytest.mark.parametrize(
    "option, value",
    [("--max-wrong-rate", "1.5"), ("--max-wrong-rate", "0"), ("--limit", "0"), ("--limit", "-3")],
)
def test_calibrate_options_out_of_range_are_usage_errors(capsys, option, value):
    with pytest.raises(SystemExit) as stopped:
        main(["calibrate", "--pairs", "p.jsonl", "--tenant", "t", "--namespace", "n", option, value])
    assert stopped.value.code == 2
    assert f"{option}: expected" in capsys.readouterr().err
