"""benchmarks/pair_scores.py: a second day read from kept scores decides as one read afresh."""

import json

import pytest

from benchmarks.common import WORKLOADS_FOLDER
from benchmarks.pair_scores import main

pytestmark = pytest.mark.slow


def test_the_second_day_reads_fewer_pairs_and_gives_the_same_counts(tmp_path, capsys):
    # The first 120 requests of the fourth holdout: enough for paraphrases to meet again.
    rows = (WORKLOADS_FOLDER / "adversarial_holdout4.jsonl").read_text().splitlines()[:120]
    workload = tmp_path / "workload.jsonl"
    workload.write_text("\n".join(rows) + "\n")
    assert main(["--workload", str(workload), "--rounds", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["requests_per_day"] == 120
    every, kept = report["day2"]["reading_every_pair"], report["day2"]["reading_kept_scores"]
    assert report["day2_same_counts"] and every["semantic_hits"] == kept["semantic_hits"] > 0
    assert report["day1"]["scores_kept"] == report["day1"]["pairs_read"]
    # Day 2 meets day 1's pairs again (every pair it reads afresh here), and kept scores spare them.
    assert 0 < every["pairs_read"]["first_stage"]
    assert kept["pairs_read"]["first_stage"] < every["pairs_read"]["first_stage"]
