"""Bad labelled files and options are refused with where and what, before any model loads."""

import gzip
import json
from pathlib import Path

import pytest

from inference.pair_data import LabelledFileError, read_pairs, read_workload
from orchestration.cli import main
from orchestration.evaluation import (
    CalibrationSource,
    _distinct_pairs,
    _require_enough_evidence,
    _require_enough_rows,
    effective_namespace,
)
from storage.calibration import (
    Operating,
    choose,
    could_qualify,
    minimum_served,
    right_needed,
    within_target,
)
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
        ({"a": 5, "b": "y", "duplicate": True}, r':1: "a" must be a non-empty string, not 5'),
        ({"a": "x", "b": "  ", "duplicate": True}, r":1: \"b\" must be a non-empty string, not '  '"),
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
    path = _lines(
        tmp_path / "w.jsonl",
        {"text": "a", "group": 7},
        {"text": "b", "group": 7.0},  # as tables with gaps write whole numbers
        {"text": "c", "group": "7"},
        {"text": "d", "group": "g"},
    )
    assert [r["group"] for r in read_workload(path)] == ["7", "7", "7", "g"]
    for group in (None, [1], {"g": 1}, True, 1.5, " ", 1e16):  # 1e16 + 1 would read as 1e16
        with pytest.raises(LabelledFileError, match=r'w.jsonl:1: "group" must be a non-empty'):
            read_workload(_lines(tmp_path / "w.jsonl", {"text": "a", "group": group}))
    with pytest.raises(LabelledFileError, match=r'w.jsonl:1: "text" must be a non-empty string, not 3'):
        read_workload(_lines(tmp_path / "w.jsonl", {"text": 3, "group": "g"}))


def test_one_text_typed_two_ways_is_still_one_text(tmp_path):
    composed, decomposed = "caf\u00e9 opening hours", "cafe\u0301 opening hours"
    path = _lines(tmp_path / "w.jsonl", {"text": composed, "group": "a"}, {"text": decomposed, "group": "b"})
    with pytest.raises(LabelledFileError, match=r"w.jsonl:2: .* is in group 'b' here and in 'a' at line 1"):
        read_workload(path)


def test_files_as_other_tools_save_them_are_read(tmp_path):
    rows = [{"text": "reset my password", "group": "pw"}, {"text": "password reset", "group": "pw"}]
    lines = "".join(json.dumps(r) + "\r\n" for r in rows)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + lines.encode())
    packed = tmp_path / "w.jsonl.gz"
    packed.write_bytes(gzip.compress(lines.encode()))
    assert read_workload(bom) == rows and read_workload(packed) == rows
    # Classic Mac line ends (a CR alone), also mixed with the others; a bad row is named by
    # the line an editor shows it on.
    mac = tmp_path / "mac.jsonl"
    mac.write_bytes("".join(json.dumps(r) + "\r" for r in rows).encode())
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes((json.dumps(rows[0]) + "\r" + json.dumps(rows[1]) + "\r\n").encode())
    # A CR between a row's tokens is JSON whitespace: that row is still one row.
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_bytes(
        b'{"text": "reset my password",\r"group": "pw"}\n' + (json.dumps(rows[1]) + "\n").encode()
    )
    assert read_workload(mac) == rows and read_workload(mixed) == rows and read_workload(spaced) == rows
    mac.write_bytes((json.dumps(rows[0]) + "\r" + json.dumps(rows[1]) + "\r{oops\r").encode())
    with pytest.raises(LabelledFileError, match=r"mac.jsonl:3: not valid JSON"):
        read_workload(mac)


def test_an_unreadable_file_is_refused_with_what_it_is(tmp_path):
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"text": "ok", "group": "g"}\n{"text": "caf\u00e9", "group": "g"}\n'.encode("latin-1"))
    with pytest.raises(LabelledFileError, match=r"latin.jsonl:2: not UTF-8 text \(byte 0xe9 at byte 14 of"):
        read_workload(latin)
    assert len(read_workload(latin, limit=1)) == 1  # the limit stops before the bad line
    plain = tmp_path / "plain.jsonl.gz"
    plain.write_text('{"text": "a", "group": "g"}\n')
    with pytest.raises(LabelledFileError, match=r"plain.jsonl.gz: not a whole gzip file.*drop the .gz"):
        read_workload(plain)
    packed = gzip.compress(b'{"a": "x", "b": "y", "duplicate": true}\n' * 200)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed[:60])
    with pytest.raises(LabelledFileError, match=r"cut.jsonl.gz: not a whole gzip file"):
        read_pairs(cut)
    damaged = tmp_path / "damaged.JSONL.GZ"  # the suffix is read in any case
    damaged.write_bytes(packed[:12] + bytes(b ^ 0x5A for b in packed[12:-8]) + packed[-8:])
    with pytest.raises(LabelledFileError, match=r"damaged.JSONL.GZ: not a whole gzip file"):
        read_pairs(damaged)
    huge = _lines(tmp_path / "huge.jsonl", '{"text": "a", "group": ' + "9" * 5000 + "}")
    with pytest.raises(LabelledFileError, match=r"huge.jsonl:1: not usable JSON"):
        read_workload(huge)
    deep = _lines(tmp_path / "deep.jsonl", '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(LabelledFileError, match=r"deep.jsonl:1: JSON nested too deep"):
        read_workload(deep)
    lone = _lines(tmp_path / "lone.jsonl", '{"text": "hello \\ud800 world", "group": "g"}')
    with pytest.raises(LabelledFileError, match=r"lone.jsonl:1: holds an unpaired surrogate"):
        read_workload(lone)
    paired = _lines(tmp_path / "paired.jsonl", '{"text": "thumbs \\ud83d\\udc4d", "group": "g"}')
    assert read_workload(paired)[0]["text"] == "thumbs \U0001f44d"
    with pytest.raises(LabelledFileError, match=r": is a folder; give one .jsonl"):
        read_workload(tmp_path)


def test_a_limit_stops_reading_before_a_bad_row(tmp_path):
    path = _lines(tmp_path / "w.jsonl", {"text": "a", "group": "g"}, {"text": "b", "group": "g"}, "not json")
    assert len(read_workload(path, limit=2)) == 2
    with pytest.raises(LabelledFileError, match=r"w.jsonl:3: not valid JSON"):
        read_workload(path)
    pairs = _lines(tmp_path / "p.jsonl", {"a": "x", "b": "y", "duplicate": True}, "not json")
    assert len(read_pairs(pairs, limit=1)) == 1


def test_a_missing_file_is_said_as_such(tmp_path):
    with pytest.raises(LabelledFileError, match=r"nothing.jsonl: no such file"):
        read_pairs(tmp_path / "nothing.jsonl")


@pytest.mark.parametrize(
    "option, value", [("threshold", -1.0), ("threshold", 1.5), ("verify_threshold", 7.0)]
)
def test_evaluate_overrides_are_held_to_the_configured_ranges(option, value):
    with pytest.raises(ConfigError, match=f"--{option.replace('_', '-')} {value}"):
        effective_namespace(load_settings(), "default", None, **{option: value})


@pytest.mark.parametrize("rate", [0.001, 0.005, 0.01, 0.02, 0.025, 0.05, 0.1, 0.3, 0.7, 0.85, 0.95])
def test_the_fewest_right_hits_needed_is_what_choose_accepts(rate):
    floor = minimum_served(rate)
    needed = right_needed(rate)

    def at(served, right):
        return Operating.counted(0.8, None, served=served, right=right, positives=served)

    assert choose([at(floor, needed)], rate) is not None
    assert choose([at(floor, needed - 1)], rate) is None
    assert could_qualify(at(floor, needed), rate) and not could_qualify(at(floor - 1, floor - 1), rate)


def test_ninety_nine_right_of_a_hundred_meets_one_in_a_hundred():
    assert within_target(100, 99, 0.01) and not within_target(100, 98, 0.01)
    assert choose([Operating.counted(0.8, None, served=100, right=99, positives=120)], 0.01) is not None


@pytest.mark.parametrize(
    "served, right", [(30, 30), (99, 99), (150, 50)], ids=["few", "one short", "few right"]
)
def test_too_little_data_is_refused(served, right):
    points = [Operating.counted(0.8, None, served=served, right=right, positives=right)]
    with pytest.raises(
        LabelledFileError,
        match=rf"at least 100 hits, 99 of them right.*serves {served}.*most right at any is {right}"
        ".*settings were left as they were",
    ):
        _require_enough_evidence(Path("p.jsonl"), points, 0.01)


def test_copies_of_a_served_rewording_count_towards_the_evidence(tmp_path):
    """A row served is not inserted, so each later copy of it may be served again: sixty
    copies of one rewording can be sixty right hits, enough at 0.05 (19 needed)."""
    rows = [{"text": "What is the capital of France?", "group": "g"}]
    rows += [{"text": "What is the capital of Spain?", "group": "h"}]
    rows += [{"text": "what's the capital of france", "group": "g"}] * 60
    source = CalibrationSource(workload=_lines(tmp_path / "w.jsonl", *rows))
    _require_enough_rows(source, read_workload(source.workload), 0.05)  # no error
    with pytest.raises(LabelledFileError, match="at most 60 of its rows follow another wording"):
        _require_enough_rows(source, read_workload(source.workload), 0.01)


def test_too_low_a_precision_on_enough_data_is_an_answer():
    imprecise = [Operating.counted(0.8, None, served=400, right=300, positives=300)]
    _require_enough_evidence(Path("p.jsonl"), imprecise, 0.01)  # enough evidence: no error
    assert choose(imprecise, 0.01) is None  # and calibrate writes semantic reuse off


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
        (
            ["calibrate", "--pairs", "{tmp}/p.jsonl", "--tenant", "t", "--namespace", "n"],
            "the file labels 1 distinct pairs of two texts duplicates",
        ),
        (
            ["calibrate", "--workload", "{tmp}/w.jsonl", "--tenant", "t", "--namespace", "n"],
            "at most 0 of its rows follow another wording of their group",
        ),
    ],
)
def test_the_command_line_says_what_was_wrong_without_a_traceback(tmp_path, monkeypatch, capsys, argv, said):
    monkeypatch.setenv("INFERCACHE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    _lines(tmp_path / "w.jsonl", {"text": "a", "group": "g"}, {"text": "b", "group": "h"})
    _lines(
        tmp_path / "p.jsonl", {"a": "x", "b": "y", "duplicate": True}, {"a": "x", "b": "z", "duplicate": 0}
    )
    (tmp_path / "empty.jsonl").write_text("\n")
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert said.format(tmp=tmp_path) in err and "Traceback" not in err
    assert not (tmp_path / "home" / "config").exists()  # nothing written


@pytest.mark.parametrize(
    "option, value",
    [
        ("--max-wrong-rate", "1.5"),
        ("--max-wrong-rate", "0"),
        ("--max-wrong-rate", "1e-320"),  # would need more served hits than any file holds
        ("--limit", "0"),
        ("--limit", "-3"),
    ],
)
def test_calibrate_options_out_of_range_are_usage_errors(capsys, option, value):
    with pytest.raises(SystemExit) as stopped:
        main(["calibrate", "--pairs", "p.jsonl", "--tenant", "t", "--namespace", "n", option, value])
    assert stopped.value.code == 2
    assert f"{option}: expected" in capsys.readouterr().err


def test_pairs_of_one_text_and_repeated_lines_are_no_evidence(tmp_path):
    """The cache answers one text twice with an exact hit, and a line repeated is the
    same evidence as the first: 25 of each must not pass for the 20 served that 0.05 asks."""
    # One text typed with a combining accent and with a composed one: one request (NFC).
    same = [
        {"a": f"Caf\u00e9 {i} hours?", "b": f"Cafe\u0301 {i} hours?", "duplicate": True} for i in range(25)
    ]
    repeated = [
        {"a": "How do I reset my password?", "b": "How can I reset my password?", "duplicate": True}
    ] * 25
    near_miss = {"a": "How do I reset my password?", "b": "How do I change my email?", "duplicate": False}
    both_ways = {**near_miss, "duplicate": True}
    kept, left_out = _distinct_pairs([*same, *repeated, near_miss, both_ways])
    assert kept == [repeated[0], near_miss, both_ways]  # a pair labelled both ways stays both ways
    assert left_out == {"pairs_left_out": {"same_text": 25, "repeated": 24}}
    source = CalibrationSource(pairs=_lines(tmp_path / "p.jsonl", *kept))
    with pytest.raises(LabelledFileError, match="labels 2 distinct pairs of two texts duplicates"):
        _require_enough_rows(source, kept, 0.05)


def test_a_file_without_a_non_duplicate_or_of_one_group_is_refused(tmp_path):
    """Precision without a single near miss is 1.0 at every setting, and the loosest would be written."""
    pairs = [{"a": f"question {i}", "b": f"the question {i}", "duplicate": True} for i in range(40)]
    source = CalibrationSource(pairs=_lines(tmp_path / "p.jsonl", *pairs))
    with pytest.raises(LabelledFileError, match="every pair is labelled a duplicate"):
        _require_enough_rows(source, pairs, 0.05)
    rows = [{"text": f"wording {i}", "group": "g"} for i in range(40)]
    source = CalibrationSource(workload=_lines(tmp_path / "w.jsonl", *rows))
    with pytest.raises(LabelledFileError, match="every row is in one group"):
        _require_enough_rows(source, rows, 0.05)


def test_a_replay_is_chosen_by_right_hits_not_by_a_recall_a_wrong_hit_raised():
    """In a replay a wrong hit on a group's first rewording keeps it from being inserted,
    which takes later rows of the group out of recall's denominator: 20 right of 21 at 0.7
    reads recall 0.8, 20 right of 20 at 0.75 reads 0.77. The stricter one is no worse."""
    looser = Operating.counted(0.7, None, served=21, right=20, positives=25)
    stricter = Operating.counted(0.75, None, served=20, right=20, positives=26)
    assert looser.recall > stricter.recall
    assert choose([looser, stricter], 0.05) == stricter
    assert minimum_served(1e-6) == 1_000_000  # counted exactly, not through 1 / float
