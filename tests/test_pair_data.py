"""Training and evaluation data for the verifier: the QQP split and family pairs."""

import json

import pytest

from inference.pair_data import family_of, family_pairs, read_workload, split_by_question


def test_pairs_sharing_a_question_stay_on_one_side():
    pairs = [{"a": f"q{i}", "b": f"q{i + 1}", "duplicate": True} for i in range(0, 400, 2)]
    pairs += [{"a": "q0", "b": "q399", "duplicate": False}]  # ties two chains together
    train, heldout = split_by_question(pairs)
    assert train and heldout and len(train) + len(heldout) == len(pairs)
    train_questions = {q for p in train for q in (p["a"], p["b"])}
    assert not train_questions & {q for p in heldout for q in (p["a"], p["b"])}


def test_family_pairs_label_same_group_duplicates_and_other_groups_near_misses():
    rows = [
        {"text": "cancel my order", "group": "f1-a"},
        {"text": "how do I cancel an order", "group": "f1-a"},
        {"text": "cancel my subscription", "group": "f1-b"},
        {"text": "weather in Oslo", "group": "f2-a"},
    ]
    pairs = {(p["a"], p["b"]): p["duplicate"] for p in family_pairs(rows)}
    assert pairs == {
        ("cancel my order", "how do I cancel an order"): True,
        ("cancel my order", "cancel my subscription"): False,
        ("how do I cancel an order", "cancel my subscription"): False,
    }
    assert family_of("w2-013-c") == "w2-013"


def test_a_workload_row_without_a_group_is_refused_with_its_line(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_text(json.dumps({"text": "x", "group": "g-a"}) + "\n" + json.dumps({"text": "y"}) + "\n")
    with pytest.raises(ValueError, match=r"w.jsonl:2: .*group"):
        read_workload(path)


def test_the_clean_report_half_leaves_out_every_family_that_overlaps_training():
    """benchmarks/data/training_overlap.py is rerun after the training families change;
    the clean report half must be the report half less the families it lists."""
    from benchmarks.data.training_overlap import HERE

    overlap = json.loads((HERE / "holdout_training_overlap.json").read_text())["holdouts"]
    overlap = overlap["adversarial_holdout.jsonl"]
    report = read_workload(HERE / "holdout_report.jsonl")
    clean = read_workload(HERE / "holdout_report_clean.jsonl")
    assert clean == [row for row in report if family_of(row["group"]) not in overlap]
    assert len(clean) < len(report)  # the report half does share some intents with training
    written = {
        row["text"].lower()
        for path in (HERE.parents[1] / "inference" / "verifier_data" / "written").glob("*.jsonl")
        for row in read_workload(path)
    }
    reported = report + read_workload(HERE / "adversarial_holdout2_clean.jsonl")
    assert not written & {row["text"].lower() for row in reported}  # no reported text is trained on
