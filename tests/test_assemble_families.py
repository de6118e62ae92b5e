"""benchmarks/data/assemble_families.py: hand-written families into a workload file."""

import json

import pytest

from benchmarks.data.assemble_families import assemble, main
from inference.pair_data import family_of

FAMILIES = [
    {
        "topic": "banking",
        "groups": [
            {"intent": "charged twice", "texts": ["I was charged twice", "double charge on my card"]},
            {"intent": "not charged", "texts": ["I was never charged", "no charge showed up"]},
        ],
    },
    {
        "topic": "internet",
        "groups": [
            {"intent": "slow", "texts": ["my internet is slow"]},
            {"intent": "down", "texts": ["my internet is down"]},
        ],
    },
]


def test_groups_are_named_by_family_and_letter():
    rows, meta = assemble(FAMILIES, "s1")
    assert [row["group"] for row in rows] == ["s1-001-a"] * 2 + ["s1-001-b"] * 2 + ["s1-002-a", "s1-002-b"]
    assert {family_of(row["group"]) for row in rows} == {"s1-001", "s1-002"}
    assert meta[0]["groups"][1] == {"group": "s1-001-b", "intent": "not charged", "texts": 2}


def test_a_text_written_twice_is_refused_with_both_groups_named():
    twice = json.loads(json.dumps(FAMILIES))
    twice[1]["groups"][1]["texts"].append("I was  charged TWICE")
    with pytest.raises(ValueError, match="is in s1-001-a and s1-002-b: keep one"):
        assemble(twice, "s1")


def test_the_file_is_shuffled_with_the_seed_and_described_beside_it(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps(FAMILIES))
    out = tmp_path / "workload.jsonl"
    assert main([str(raw), "s1", str(out), "--seed", "5", "--written", "by a test"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    written_order = [t for f in FAMILIES for g in f["groups"] for t in g["texts"]]
    assert [row["text"] for row in rows] != written_order
    assert sorted(row["text"] for row in rows) == sorted(
        t for f in FAMILIES for g in f["groups"] for t in g["texts"]
    )
    meta = json.loads((tmp_path / "workload.meta.json").read_text())
    assert (meta["families"], meta["groups"], meta["rows"], meta["written"]) == (2, 4, 6, "by a test")
    assert main([str(raw), "s1", str(tmp_path / "again.jsonl"), "--seed", "5"]) == 0
    assert (tmp_path / "again.jsonl").read_text() == out.read_text()


def test_a_family_of_one_group_is_a_clear_error(tmp_path, capsys):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps([{"topic": "alone", "groups": FAMILIES[0]["groups"][:1]}]))
    assert main([str(raw), "s1", str(tmp_path / "out.jsonl"), "--seed", "1"]) == 1
    assert "family 1 (alone) has 1 groups: give 2 to 26" in capsys.readouterr().err


def test_a_family_without_texts_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"family 2 \(internet\) needs groups, each with texts"):
        assemble([FAMILIES[0], {"topic": "internet", "groups": [{"intent": "slow"}]}], "s1")
