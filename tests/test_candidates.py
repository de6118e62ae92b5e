"""benchmarks/candidates.py: comparing pair-verifier candidates on development workloads."""

import argparse
import json

import pytest

from benchmarks.candidates import _candidate, _second_stage_candidate, main, pooled, pooled_grid, summary
from benchmarks.common import REPO
from storage.calibration import Operating

MODEL_A = str(REPO / "inference" / "verifier_model_a")
SECOND_STAGE = str(REPO / "inference" / "verifier_model_mpnet")


def test_a_candidate_names_its_folders_and_they_must_hold_weights(tmp_path):
    assert _candidate(f"a={MODEL_A}") == ("a", (MODEL_A,))
    with pytest.raises(argparse.ArgumentTypeError, match="expected NAME=FOLDER"):
        _candidate(MODEL_A)
    with pytest.raises(argparse.ArgumentTypeError, match=f"no verifier weights in {tmp_path}"):
        _candidate(f"a={MODEL_A},{tmp_path}")


def test_a_second_stage_candidate_is_one_folder():
    assert _second_stage_candidate(f"s={SECOND_STAGE}") == ("s", SECOND_STAGE)
    with pytest.raises(argparse.ArgumentTypeError, match="a second stage is one folder, not 2"):
        _second_stage_candidate(f"s={SECOND_STAGE},{SECOND_STAGE}")


def test_two_candidates_of_one_name_are_refused(capsys):
    with pytest.raises(SystemExit):
        main(["--candidate", f"shipped={MODEL_A}"])
    assert "each candidate needs its own name" in capsys.readouterr().err


def test_workloads_pool_by_setting_and_the_frontier_takes_the_most_recall():
    first = [
        Operating.counted(0.72, 0.7, 10, 9, 20),
        Operating.counted(0.75, 0.8, 20, 20, 20),
        Operating.counted(0.8, 0.9, 5, 5, 20),
    ]
    second = [
        Operating.counted(0.72, 0.7, 30, 29, 40),
        Operating.counted(0.75, 0.8, 20, 19, 40),
        Operating.counted(0.8, 0.9, 10, 10, 40),
    ]
    totals = pooled({"one": first, "two": second})
    assert totals == {(0.72, 0.7): [40, 38, 60], (0.75, 0.8): [40, 39, 60], (0.8, 0.9): [15, 15, 60]}
    report = summary({"one": first, "two": second}, defaults=(0.72, 0.7))
    assert report["defaults"] == {"served": 40, "wrong": 2, "precision": 0.95, "recall": 38 / 60}
    assert report["strict"]["precision"] == 1.0
    # 0.99 is reached only at the strict setting; 0.97 there and at (0.75, 0.8), which has
    # more recall (39 / 60 against 15 / 60), so the frontier takes it.
    assert report["best_recall_at_precision"]["0.99"] == {"recall": 0.25, "setting": (0.8, 0.9)}
    assert report["best_recall_at_precision"]["0.97"] == {"recall": 39 / 60, "setting": (0.75, 0.8)}
    assert report["each_workload_at_defaults"]["one"]["wrong"] == 1
    assert pooled_grid({"one": first, "two": second})[0] == {
        "threshold": 0.72,
        "verify_threshold": 0.7,
        "served": 40,
        "wrong": 2,
    }


@pytest.mark.slow
def test_the_shipped_verifier_and_a_candidate_replay_a_development_workload(capsys, monkeypatch):
    import inference.pair_verifier

    loaded = []
    load_verifier = inference.pair_verifier.load_verifier

    def recording_load_verifier(base, folders, *, dtype, second_stage):
        loaded.append((tuple(folders), str(second_stage)))
        return load_verifier(base, folders, dtype=dtype, second_stage=second_stage)

    monkeypatch.setattr(inference.pair_verifier, "load_verifier", recording_load_verifier)
    second = ["--second-stage-candidate", f"same_second={SECOND_STAGE}/"]
    grid = ["--grid", "--cosine-grid", "0.75", "--verify-grid", "0.98"]
    assert (
        main(["--candidate", f"a={MODEL_A}", *second, *grid, "--workloads", "family_file_29", "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    # The grid asked for, with the defaults and the strict setting always replayed.
    settings = {
        (row["threshold"], row["verify_threshold"]) for row in report["candidates"]["a"]["pooled_grid"]
    }
    assert settings == {(t, v) for t in (0.72, 0.75, 0.8) for v in (0.7, 0.9, 0.98)}
    assert list(report["candidates"]) == ["shipped", "a", "same_second"]
    # A second-stage candidate keeps the shipped first stage: with the shipped second stage
    # under another name, every figure is the shipped verifier's.
    same = report["candidates"]["same_second"]
    # Each candidate's verifier was loaded with its own second stage (the trailing slash
    # tells the candidate's from the shipped one's).
    shipped_folders = tuple(report["candidates"]["shipped"]["folders"])
    assert loaded == [
        (shipped_folders, SECOND_STAGE),
        ((MODEL_A,), SECOND_STAGE),
        (shipped_folders, SECOND_STAGE + "/"),
    ]
    assert same["second_stage"] == SECOND_STAGE + "/" and same["folders"] == list(shipped_folders)
    assert {k: v for k, v in same.items() if k != "second_stage"} == {
        k: v for k, v in report["candidates"]["shipped"].items() if k != "second_stage"
    }
    for candidate in report["candidates"].values():
        defaults = candidate["defaults"]
        assert defaults == candidate["each_workload_at_defaults"]["family_file_29"]  # one workload
        assert defaults["served"] > 0 and 0.0 <= defaults["precision"] <= 1.0
        assert candidate["strict"]["served"] <= defaults["served"]
    # One model of the two scores its own way: the pair and the single model differ somewhere.
    shipped, alone = report["candidates"]["shipped"], report["candidates"]["a"]
    assert (shipped["defaults"], shipped["strict"]) != (alone["defaults"], alone["strict"])


def test_every_named_workload_is_a_file_and_the_defaults_are_named():
    from benchmarks.candidates import DEFAULT_WORKLOADS, WORKLOADS

    assert set(DEFAULT_WORKLOADS) <= set(WORKLOADS)
    missing = [str(path) for path, _ in WORKLOADS.values() if not path.is_file()]
    assert not missing, f"workloads named but not in the repository: {missing}"
