"""Training the pair verifier (inference/train_verifier.py) end to end on a few real pairs:
a 1-layer cross-encoder from the installed MiniLM, a handful of steps on the CPU."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from inference.pair_verifier import WORD_EMBEDDINGS, PairVerifier, build_cross_encoder
from inference.train_verifier import (
    ALL_FAMILIES,
    DEFAULT_FAMILIES,
    DEVELOPMENT_FAMILIES,
    _learning_rate,
    _parser,
    _progress,
    main,
)
from storage.config import load_settings

pytestmark = pytest.mark.slow

PAIRS = [
    ("How do I cancel my order?", "How can I cancel my order?", True),
    ("How do I cancel my order?", "How do I cancel my subscription?", False),
    ("What is the capital of France?", "Which city is the capital of France?", True),
    ("What is the capital of France?", "What is the capital of Spain?", False),
    ("How do I increase my credit limit?", "How can I raise my credit limit?", True),
    ("How do I increase my credit limit?", "How do I decrease my credit limit?", False),
]


@pytest.fixture
def base() -> Path:
    return load_settings().embedding_model("all-MiniLM-L6-v2").model_folder()


@pytest.fixture
def training_files(tmp_path: Path) -> dict[str, Path]:
    qqp = tmp_path / "qqp.jsonl.gz"
    rows = [{"a": a, "b": b, "duplicate": duplicate} for a, b, duplicate in PAIRS * 4]
    with gzip.open(qqp, "wt") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)
    family = tmp_path / "family.jsonl"
    family.write_text(
        "".join(
            json.dumps({"text": text, "group": group}) + "\n"
            for text, group in [
                ("convert 10 USD to EUR", "fx.usd-eur"),
                ("10 dollars in euros", "fx.usd-eur"),
                ("convert 10 EUR to USD", "fx.eur-usd"),
            ]
        )
    )
    return {"qqp": qqp, "family": family, "missing": tmp_path / "none.jsonl"}


def _train(training_files: dict[str, Path], out: Path, *extra: str) -> dict:
    argv = ["--qqp", str(training_files["qqp"]), "--adversarial", str(training_files["missing"])]
    argv += ["--families", str(training_files["family"]), "--layers", "1", "--batch", "4", "--out", str(out)]
    assert main(argv + list(extra)) == 0
    return json.loads((out / "training.json").read_text())


def test_progress_runs_by_steps_or_by_the_clock_whichever_ends_first():
    assert _progress(50, 100, seconds=10.0, max_minutes=None) == 0.5
    assert _progress(50, 100, seconds=30.0, max_minutes=1.0) == 0.5
    assert _progress(10, 100, seconds=45.0, max_minutes=1.0) == 0.75
    assert _progress(90, 100, seconds=6.0, max_minutes=1.0) == 0.9


def test_the_learning_rate_warms_up_then_decays_to_zero():
    assert _learning_rate(1e-4, step=0, progress=0.0) == pytest.approx(1e-6)
    assert _learning_rate(1e-4, step=99, progress=0.0) == pytest.approx(1e-4)
    assert _learning_rate(1e-4, step=500, progress=0.75) == pytest.approx(2.5e-5)
    assert _learning_rate(1e-4, step=500, progress=1.0) == 0.0


def test_a_trained_verifier_is_saved_without_word_embeddings_and_loads(training_files, base, tmp_path):
    out = tmp_path / "verifier"
    record = _train(training_files, out, "--steps", "6", "--seed", "3")

    assert record["steps"] == 6 and record["examples_seen"] == 24 and record["device"] == "cpu"
    # The record names the run's own arguments (not the test runner's command line).
    assert record["command"].startswith("python -m inference.train_verifier --qqp ")
    assert record["command"].endswith("--steps 6 --seed 3")
    weights = load_file(out / "weights.safetensors")
    assert WORD_EMBEDDINGS not in weights
    assert {tensor.dtype for tensor in weights.values() if tensor.is_floating_point()} == {torch.float16}
    scores = PairVerifier.load(base, (out,)).score([PAIRS[0][:2], PAIRS[0][1::-1]], vetoes=False)
    assert 0.0 < scores[0] < 1.0 and scores[0] == pytest.approx(scores[1])


def test_only_the_top_layers_train_and_are_saved_as_int8_rows_over_the_base(training_files, base, tmp_path):
    from inference.pair_verifier import load_delta_model

    out = tmp_path / "verifier"
    # A large peak learning rate (warm-up holds the first steps near 1/100 of it): four Adam
    # steps move each weight by far more than an int8 step.
    top = ("--layers", "2", "--train-top-layers", "1", "--lr", "5")
    record = _train(training_files, out, "--steps", "4", *top)
    assert record["trained_layers"] == "1 to 1 of 2, and the head"
    stored = load_file(out / "weights.safetensors")
    assert stored and all(
        name.startswith("classifier.") or ".pooler." in name or ".encoder.layer.1." in name for name in stored
    )
    assert stored["bert.encoder.layer.1.output.dense.weight"].dtype == torch.int8
    # Loaded over the base: the frozen layer 0 is the base's, layer 1 what training made.
    model = load_delta_model(base, out)
    untrained = build_cross_encoder(base, 2)
    layer_0, layer_1 = "bert.encoder.layer.0.output.dense.weight", "bert.encoder.layer.1.output.dense.weight"
    assert torch.equal(model.state_dict()[layer_0], untrained.state_dict()[layer_0])
    moved = (model.state_dict()[layer_1] - untrained.state_dict()[layer_1]).abs()
    assert moved.mean() > 0.05
    # A delta without the head the base lacks is refused, not scored with a random head.
    headless = {name: t for name, t in stored.items() if not name.startswith("classifier.")}
    save_file(headless, out / "weights.safetensors")
    with pytest.raises(ValueError, match="neither the base nor the delta holds classifier"):
        load_delta_model(base, out)


def test_the_clock_ends_training_before_the_steps_do(training_files, tmp_path):
    # 0.0001 minutes is 6 ms: the first step already takes longer.
    record = _train(training_files, tmp_path / "verifier", "--steps", "1000", "--max-minutes", "0.0001")
    assert 1 <= record["steps"] < 1000


def test_near_miss_families_add_their_near_misses_without_their_paraphrases(training_files, tmp_path):
    # One family: a paraphrase pair in group a, and group b's request, a near miss of both.
    family = tmp_path / "near_misses.jsonl"
    rows = [
        ("convert 10 USD to EUR", "fx-a"),
        ("10 dollars in euros", "fx-a"),
        ("convert 10 EUR to USD", "fx-b"),
    ]
    family.write_text("".join(json.dumps({"text": text, "group": group}) + "\n" for text, group in rows))
    extra = ["--steps", "2", "--near-miss-families", str(family), "--near-miss-repeats", "3"]
    record = _train(training_files, tmp_path / "verifier", *extra)
    without = _train(training_files, tmp_path / "plain", "--steps", "2")
    assert record["near_miss_pairs"] == 2 and record["near_miss_repeats"] == 3
    assert record["training_examples"] == without["training_examples"] + 2 * 3
    assert record["near_miss_family_files"] == [str(family)]


def test_a_time_limit_of_zero_is_refused(training_files, tmp_path, capsys):
    with pytest.raises(SystemExit):
        _train(training_files, tmp_path / "verifier", "--max-minutes", "0")
    assert "--max-minutes must be above 0" in capsys.readouterr().err


def test_a_half_precision_copy_of_the_base_still_trains_float32_weights(base, tmp_path):
    # A GPU machine is sent a float16 copy of MiniLM (half the bytes to move); the
    # model built from it must still hold float32 weights for the optimizer.
    copy = tmp_path / "base16"
    copy.mkdir()
    for name in (
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "vocab.txt",
        "special_tokens_map.json",
    ):
        (copy / name).write_bytes((base / name).read_bytes())
    weights = load_file(base / "model.safetensors")
    save_file(
        {name: tensor.to(torch.float16) for name, tensor in weights.items()}, copy / "model.safetensors"
    )

    model = build_cross_encoder(copy, num_layers=1)
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}


def test_the_development_families_are_left_out_unless_named():
    assert len(DEVELOPMENT_FAMILIES) == 6 and all(path.exists() for path in DEVELOPMENT_FAMILIES)
    assert set(DEFAULT_FAMILIES) == set(ALL_FAMILIES) - set(DEVELOPMENT_FAMILIES)
    assert _parser().parse_args(["--out", "x"]).families == DEFAULT_FAMILIES
    named = _parser().parse_args(["--out", "x", "--families", str(DEVELOPMENT_FAMILIES[0])])
    assert named.families == [DEVELOPMENT_FAMILIES[0]]
    assert not any("holdout" in path.name for path in ALL_FAMILIES)


def test_a_gpu_asked_for_where_there_is_none_is_refused_before_any_work(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path / "verifier"), "--device", "cuda", "--qqp", str(tmp_path / "absent.gz")])
    assert "--device cuda: this machine has no GPU" in capsys.readouterr().err


def test_a_delta_continues_from_init_and_keeps_its_record(training_files, base, tmp_path):
    from inference.pair_verifier import load_delta_model

    top = ("--layers", "2", "--train-top-layers", "1")
    first = tmp_path / "first"
    _train(training_files, first, "--steps", "4", "--lr", "5", *top)
    # With a learning rate of 0 the continued model is the first run's, not the base's
    # (up to storing int8 rows again).
    unmoved = tmp_path / "unmoved"
    record = _train(training_files, unmoved, "--steps", "2", "--lr", "0", "--init", str(first), *top)
    assert record["total_steps"] == 6 and record["earlier_stages"][0]["steps"] == 4
    layer_1 = "bert.encoder.layer.1.output.dense.weight"
    before, after = (load_delta_model(base, folder).state_dict()[layer_1] for folder in (first, unmoved))
    untrained = build_cross_encoder(base, 2).state_dict()[layer_1]
    assert (before - untrained).abs().mean() > 0.05
    torch.testing.assert_close(after, before, atol=1e-3, rtol=0)
    # And with a learning rate it moves on from there.
    moved = tmp_path / "moved"
    _train(training_files, moved, "--steps", "2", "--lr", "5", "--init", str(first), *top)
    assert (load_delta_model(base, moved).state_dict()[layer_1] - before).abs().mean() > 0.01


def _refused(training_files, tmp_path, capsys, *argv: str) -> str:
    """The error of a refused run; the QQP file is absent, so a refusal that came after the
    data was read would fail otherwise."""
    with pytest.raises(SystemExit):
        main(["--qqp", str(tmp_path / "absent.gz"), "--out", str(tmp_path / "refused"), *argv])
    return capsys.readouterr().err


@pytest.fixture
def two_layer_delta(training_files, tmp_path) -> Path:
    """A 2-layer MiniLM cross-encoder with both layers trained, stored as a delta."""
    delta = tmp_path / "delta"
    _train(training_files, delta, "--steps", "2", "--layers", "2", "--train-top-layers", "2")
    return delta


def test_an_init_that_cannot_continue_as_asked_is_refused_before_the_data_is_read(
    training_files, two_layer_delta, tmp_path, capsys
):
    delta = two_layer_delta
    whole = tmp_path / "whole"
    _train(training_files, whole, "--steps", "2")
    capsys.readouterr()

    error = _refused(
        training_files, tmp_path, capsys, "--init", str(delta), "--layers", "2", "--train-top-layers", "1"
    )
    assert "bert.encoder.layer.0." in error and "train at least as many top layers" in error
    error = _refused(training_files, tmp_path, capsys, "--init", str(delta), "--train-top-layers", "1")
    assert "has 2 layers, not --layers 6" in error
    error = _refused(training_files, tmp_path, capsys, "--init", str(delta), "--layers", "2")
    assert "continue it with --train-top-layers and --base" in error
    error = _refused(training_files, tmp_path, capsys, "--init", str(whole), "--train-top-layers", "1")
    assert "continues only an --init saved the same way" in error
    error = _refused(training_files, tmp_path, capsys, "--init", str(tmp_path), "--layers", "2")
    assert "not a trained verifier folder" in error


def test_a_delta_over_another_kind_of_base_is_refused(training_files, two_layer_delta, tmp_path, capsys):
    from inference.mpnet_base import mpnet_folder

    capsys.readouterr()
    top = ("--layers", "2", "--train-top-layers", "2", "--base", str(mpnet_folder()))
    error = _refused(training_files, tmp_path, capsys, "--init", str(two_layer_delta), *top)
    assert "was trained over a bert base" in error and "(mpnet)" in error


def test_a_focused_run_records_what_the_focus_kept(training_files, tmp_path):
    from inference.pair_verifier import SHIPPED_MODELS

    first_stage = [str(folder) for folder in SHIPPED_MODELS]
    record = _train(training_files, tmp_path / "focused", "--steps", "1", "--focus-first-stage", *first_stage)
    unfocused = _train(training_files, tmp_path / "plain", "--steps", "1")
    assert record["examples_before_focus"] == unfocused["training_examples"]
    assert 0 < record["training_examples"] < record["examples_before_focus"]
    # Shown relative to the repository, as every path of a record is.
    assert record["focus_first_stage"] == ["inference/verifier_model_a", "inference/verifier_model_b"]
    assert record["focus_min_cosine"] == 0.6 and record["focus_min_score"] == 0.1


CLOSE_REWORDING = {"a": "How do I cancel my order?", "b": "How can I cancel my order?", "duplicate": True}
FAR_APART = {"a": "How do I cancel my order?", "b": "What is the capital of France?", "duplicate": False}


def test_the_focus_drops_pairs_under_the_cosine_and_keeps_repeats(minilm):
    from inference.pair_focus import focused_pairs

    def passes_everything(pairs):
        return np.ones(len(pairs), dtype=np.float32)

    repeated = {"a": CLOSE_REWORDING["b"], "b": CLOSE_REWORDING["a"], "duplicate": True}  # the same pair
    examples = [CLOSE_REWORDING, FAR_APART, repeated]
    assert focused_pairs(examples, minilm, passes_everything, min_cosine=0.6, min_score=0.1) == [
        CLOSE_REWORDING,
        repeated,
    ]
    # And every pair once its cosine is no bar.
    assert focused_pairs(examples, minilm, passes_everything, min_cosine=-1.0, min_score=0.1) == examples


def test_the_focus_drops_what_the_first_stage_does_not_pass(minilm):
    from inference.pair_conflicts import vetoed
    from inference.pair_focus import focused_pairs
    from inference.pair_verifier import SHIPPED_MODELS, load_verifier

    base = load_settings().embedding_model("all-MiniLM-L6-v2").model_folder()
    first_stage = load_verifier(
        str(base), tuple(map(str, SHIPPED_MODELS)), dtype="float32", second_stage=None
    )
    near_misses = [
        {"a": "convert 10 USD to EUR", "b": "convert 10 EUR to USD", "duplicate": False},
        {
            "a": "How do I increase my credit limit?",
            "b": "How do I decrease my credit limit?",
            "duplicate": False,
        },
    ]
    # The conflict checks veto both (direction, opposites), so the second stage never reads them.
    assert vetoed([(row["a"], row["b"]) for row in near_misses]).all()
    kept = focused_pairs(
        [CLOSE_REWORDING, *near_misses], minilm, first_stage.score, min_cosine=0.6, min_score=0.1
    )
    assert kept == [CLOSE_REWORDING]


def test_a_positive_weight_under_one_trains_a_stricter_score(training_files, base, tmp_path):
    scores = {}
    for weight in ("1.0", "0.1"):
        out = tmp_path / f"verifier-{weight}"
        record = _train(training_files, out, "--steps", "8", "--seed", "5", "--positive-weight", weight)
        assert record["positive_weight"] == float(weight)
        pairs = [(a, b) for a, b, _ in PAIRS]
        scores[weight] = PairVerifier.load(base, (out,)).score(pairs, vetoes=False).mean()
    # Near misses weigh ten times a duplicate: every pair scores lower.
    assert scores["0.1"] < scores["1.0"]
