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


def test_the_clean_held_out_files_leave_out_every_family_that_overlaps_training():
    """benchmarks/data/training_overlap.py is rerun after the training files change; the
    clean files must be the reported rows less the families its list names."""
    from benchmarks.data.training_overlap import CLEANED, HERE, training_file_names, training_texts

    record = json.loads((HERE / "holdout_training_overlap.json").read_text(encoding="utf-8"))
    assert record["training_files"] == training_file_names(), "training files changed: rerun training_overlap"
    trained = {text.lower() for text in training_texts()}
    for holdout, (to_clean, clean_file) in CLEANED.items():
        overlap = record["holdouts"][holdout]
        rows = read_workload(HERE / to_clean)
        clean = read_workload(HERE / clean_file)
        assert clean == [row for row in rows if family_of(row["group"]) not in overlap]
        assert 0 < len(clean) < len(rows)  # some families overlap, most do not
        assert not trained & {row["text"].lower() for row in clean}  # no reported text is trained on
