"""benchmarks/candidates.py: comparing pair-verifier candidates on development workloads."""

import argparse
import json

import pytest

from benchmarks.candidates import _candidate, main, pooled, summary
from storage.calibration import Operating


def test_a_candidate_names_its_folders_and_they_must_hold_weights(tmp_path):
    assert _candidate("a=inference/verifier_model_a") == ("a", ("inference/verifier_model_a",))
    with pytest.raises(argparse.ArgumentTypeError, match="expected NAME=FOLDER"):
        _candidate("inference/verifier_model_a")
    with pytest.raises(argparse.ArgumentTypeError, match=f"no verifier weights in {tmp_path}"):
        _candidate(f"a=inference/verifier_model_a,{tmp_path}")


def test_workloads_pool_by_setting_and_the_frontier_takes_the_most_recall():
    first = [Operating.counted(0.72, 0.7, 10, 9, 20), Operating.counted(0.8, 0.9, 5, 5, 20)]
    second = [Operating.counted(0.72, 0.7, 30, 29, 40), Operating.counted(0.8, 0.9, 10, 10, 40)]
    assert pooled({"one": first, "two": second}) == {(0.72, 0.7): [40, 38, 60], (0.8, 0.9): [15, 15, 60]}
    report = summary({"one": first, "two": second}, defaults=(0.72, 0.7))
    assert report["defaults"] == {"served": 40, "wrong": 2, "precision": 0.95, "recall": 38 / 60}
    assert report["strict"]["precision"] == 1.0
    # Precision 0.99 is reached only at the strict setting; 0.95 at the defaults, with more recall.
    assert report["best_recall_at_precision"]["0.99"] == {"recall": 0.25, "setting": (0.8, 0.9)}
    assert report["best_recall_at_precision"]["0.97"]["setting"] == (0.8, 0.9)
    assert report["each_workload_at_defaults"]["one"]["wrong"] == 1


@pytest.mark.slow
def test_the_shipped_verifier_and_a_candidate_replay_a_development_workload(capsys):
    assert (
        main(["--candidate", "a=inference/verifier_model_a", "--workloads", "family_file_29", "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert list(report["candidates"]) == ["shipped", "a"]
    for candidate in report["candidates"].values():
        defaults = candidate["defaults"]
        assert defaults == candidate["each_workload_at_defaults"]["family_file_29"]  # one workload
        assert defaults["served"] > 0 and 0.0 <= defaults["precision"] <= 1.0
        assert candidate["strict"]["served"] <= defaults["served"]
    # One model of the two scores its own way: the pair and the single model differ somewhere.
    shipped, alone = report["candidates"]["shipped"], report["candidates"]["a"]
    assert (shipped["defaults"], shipped["strict"]) != (alone["defaults"], alone["strict"])
