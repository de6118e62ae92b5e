"""The shipped pair verifier: loads offline from the repository, scores pairs sensibly."""

from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.data.training_overlap import training_file_names
from inference.dtypes import native_bfloat16, resolve_dtype
from inference.pair_verifier import SHIPPED_MODELS, load_verifier, shipped_records
from storage.config import load_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def verifier():
    settings = load_settings()
    base = settings.embedding_model("all-MiniLM-L6-v2").model_folder()
    return load_verifier(str(base), dtype=settings.verifier_dtype)


@pytest.fixture(scope="module")
def first_stage(verifier):
    """The shipped verifier's first stage alone (its models, no second stage)."""
    return type(verifier)(verifier.models, verifier.tokenizer, verifier.dtype)


def test_scores_are_symmetric_probabilities(verifier):
    pairs = [("How do I reset my password?", "How can I reset my password?")]
    forward, backward = verifier.score(pairs)[0], verifier.score([pairs[0][::-1]])[0]
    assert 0.0 <= forward <= 1.0
    assert forward == pytest.approx(backward)


def _tuning_pairs() -> list[dict]:
    """The held-out workload's tuning pairs (never trained on)."""
    import json

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "holdout_tuning_pairs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_paraphrases_score_well_above_near_misses_on_the_held_out_tuning_pairs(verifier):
    """On average. Single pairs still fail: "fruits toxic to dogs" / "dog safe fruits"
    passes the model (the checks veto it), "brake fluid" / "transmission fluid" passes both.
    """
    pairs = _tuning_pairs()
    scores = verifier.score([(p["a"], p["b"]) for p in pairs])
    duplicate = np.array([p["duplicate"] for p in pairs])
    assert scores[duplicate].mean() > scores[~duplicate].mean() + 0.25
    assert (scores[~duplicate] >= 0.8).mean() < 0.1


def test_a_vetoed_pair_is_never_accepted_whatever_the_model_says(verifier, first_stage):
    pair = ("Reset after 3 failed attempts", "Reset after 5 failed attempts")
    # The first stage alone: with both, a pair it scores under SECOND_STAGE_FLOOR scores 0.
    assert first_stage.score([pair], vetoes=False)[0] > 0.0
    assert first_stage.score([pair])[0] == 0.0 and verifier.score([pair])[0] == 0.0


def test_a_cautioned_pair_is_served_only_where_the_verifier_is_sure_of_it(verifier, monkeypatch):
    """A negation on one side of two reworded requests: the learned score stands from
    CAUTIONED_MIN_SCORE up and is 0 under it. Both pairs come from development workloads."""
    import inference.pair_verifier as pair_verifier
    from inference.pair_conflicts import REWORDED_NEGATION, checked

    sure = (
        "waze mute voice",
        "I like seeing the route on Waze, but I don't want it talking while I'm listening to podcasts. "
        "How do I silence the voice?",
    )
    unsure = (
        "turn off notifications for a group on whatsapp",
        "I was added to a neighborhood group on WhatsApp that I don't want to be in. How do I get out of it?",
    )
    assert checked([sure, unsure])[1] == [REWORDED_NEGATION] * 2  # both cautioned, neither vetoed
    learned = verifier.score([sure, unsure], vetoes=False)
    # Above the defaults' verify threshold (0.7): the near miss would be served but for the caution.
    assert 0.7 <= learned[1] < pair_verifier.CAUTIONED_MIN_SCORE - 0.05
    assert verifier.score([unsure])[0] == 0.0
    # With the bar between the two, the pair above it keeps its learned score (the shipped bar,
    # 0.98, lies within a hundredth of what the surest pairs score, too close for a test).
    assert learned[0] > learned[1] + 0.05
    between = float(learned[0] + learned[1]) / 2
    monkeypatch.setitem(pair_verifier.CAUTION_MIN_SCORES, REWORDED_NEGATION, between)
    served = verifier.score([sure, unsure])
    assert served[0] == pytest.approx(learned[0], abs=5e-3) and served[1] == 0.0


def test_a_word_swapped_is_served_only_where_the_verifier_is_sure_of_it(verifier):
    """One content word swapped for a word WordNet does not pair with it: a rewording the
    verifier is sure of is served (a veto once refused it), one it passes only at the defaults'
    0.7 is not, and the near miss scores 0. All three come from a development workload."""
    from inference.pair_conflicts import SWAPPED_WORD, checked
    from inference.pair_verifier import SWAPPED_WORD_MIN_SCORE

    sure = ("unblock a number in whatsapp", "How do I unblock someone on WhatsApp?")
    unsure = ("I want to cancel overdraft protection", "turn off overdraft protection")
    near_miss = ("leave whatsapp group", "mute whatsapp group")
    pairs = [sure, unsure, near_miss]
    vetoed, cautions = checked(pairs)
    assert not vetoed.any() and cautions == [SWAPPED_WORD] * 3
    learned = verifier.score(pairs, vetoes=False)
    assert learned[0] >= SWAPPED_WORD_MIN_SCORE + 0.01
    assert 0.7 <= learned[1] < SWAPPED_WORD_MIN_SCORE - 0.01
    assert learned[2] < 0.5
    served = verifier.score(pairs, at_least=[0.7] * 3)
    assert served[0] == pytest.approx(learned[0], abs=5e-3)
    assert served[1] == 0.0 and served[2] == 0.0


def test_a_batch_scores_each_pair_as_alone_and_never_runs_the_model_on_a_vetoed_one(verifier):
    """Pairs are batched by length and vetoed ones skipped: each score must still land on
    its own pair, equal to scoring that pair alone."""
    pairs = [
        ("How do I reset my password?", "How can I reset my password?"),
        ("Reset after 3 failed attempts", "Reset after 5 failed attempts"),
        ("cancel my order", "cancel my subscription"),
        (
            "What is the best way to learn to play the guitar as an adult with little free time?",
            "How can a busy adult learn guitar?",
        ),
        ("weather tomorrow", "weather today"),
    ]
    alone = np.array([verifier.score([pair])[0] for pair in pairs])
    together = verifier.score(pairs)
    # bfloat16 kernels (AMX on Intel, for one) round differently for another batch shape:
    # scores move by up to 1e-3 there. A score landing on another pair moves by far more.
    np.testing.assert_allclose(together, alone, atol=1e-5 if verifier.dtype == "float32" else 5e-3)
    assert together[1] == 0.0 and together[0] > 0.5

    seen: list[tuple[str, str]] = []
    original = verifier.logits

    def counting_logits(batch, **options):
        seen.extend(batch)
        return original(batch, **options)

    verifier.logits = counting_logits
    try:
        verifier.score(pairs)
    finally:
        del verifier.logits
    # The model reads every pair no check vetoed ("cancel my order" / "... subscription" is only
    # cautioned, and scores 0 under its bar), and no vetoed one.
    vetoed, _ = verifier.checks(pairs)
    assert vetoed.tolist() == [False, True, False, False, True]
    assert tuple(sorted(pairs[1])) not in seen and len(seen) == int((~vetoed).sum())
    assert together[2] == 0.0


def test_each_shipped_model_has_a_record_of_how_it_was_made(verifier):
    from inference.pair_verifier import SECOND_STAGE_MODEL

    records = shipped_records()
    assert set(records) == {folder.name for folder in (*SHIPPED_MODELS, SECOND_STAGE_MODEL)}
    first_stage = [records[folder.name] for folder in SHIPPED_MODELS]
    assert len(first_stage) == len(verifier.models) == 2
    for record in first_stage:
        assert record["qqp_heldout_pairs_not_trained_on"] > 0 and record["steps"] > 0
        assert record["layers"] == 6 and record["device"] == "cuda"
        assert record["examples_seen"] == record["steps"] * record["batch"]
        # Both trained on every written family file (29 to 34 too, before they were left out
        # by default) and on no holdout workload. New family files wait in
        # inference/verifier_data/queued/ until a shipped model is trained on them.
        assert record["family_files"] == training_file_names()[:-1]


def test_the_verifier_averages_its_models_logits(verifier):
    pairs = [("How do I reset my password?", "How can I reset my password?"), ("cats", "dogs")]
    alone = [
        type(verifier)([model], verifier.tokenizer, verifier.dtype).logits(pairs) for model in verifier.models
    ]
    assert torch.allclose(verifier.logits(pairs), sum(alone) / len(alone), atol=1e-5)


def test_bfloat16_arithmetic_decides_as_float32_does():
    """bfloat16 (the default where the CPU computes it natively) must not change what is
    served: on the tuning pairs, 99 scores in 100 within two hundredths (the largest move
    seen here: 0.32 to 0.37, far from any threshold) and the same decisions at the
    defaults' 0.7 for all but one pair in a hundred."""
    base = str(load_settings().embedding_model("all-MiniLM-L6-v2").model_folder())
    # Every other pair of the 1,312 (656: each of the four scorings below takes about 20 s
    # in bfloat16 on 2 cores; a share of 0.01 is still 6 pairs).
    pairs = [(p["a"], p["b"]) for p in _tuning_pairs()][::2]
    if not native_bfloat16():
        # Emulated (no AVX512-BF16 or AMX, where "auto" picks float32 anyway), bfloat16 made
        # this test take ten minutes on the 1,312 pairs: every sixteenth pair (on every
        # eighth here, the largest move was 0.018 and no decision changed).
        pairs = pairs[::8]
    full = load_verifier(base, dtype="float32", second_stage=None)
    half = load_verifier(base, dtype="bfloat16", second_stage=None)
    assert (full.dtype, half.dtype) == ("float32", "bfloat16")
    exact, fast = full.score(pairs, vetoes=False), half.score(pairs, vetoes=False)
    assert not np.array_equal(exact, fast)  # the arithmetic really differs
    assert np.quantile(np.abs(exact - fast), 0.99) < 0.02
    assert np.abs(exact - fast).max() < 0.1
    assert ((exact >= 0.7) != (fast >= 0.7)).mean() <= 0.01
    # With the second stage: a pair whose first-stage score crosses SECOND_STAGE_FLOOR
    # between the two arithmetics jumps (the second stage runs on one side only), far below
    # any threshold it could cross; what is served stays the same.
    exact = load_verifier(base, dtype="float32").score(pairs, vetoes=False)
    fast = load_verifier(base, dtype="bfloat16").score(pairs, vetoes=False)
    assert np.quantile(np.abs(exact - fast), 0.99) < 0.02
    assert ((exact >= 0.7) != (fast >= 0.7)).mean() <= 0.01


def test_an_unknown_dtype_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown dtype 'float16': use one of auto"):
        resolve_dtype("float16")
    assert resolve_dtype("auto") == ("bfloat16" if native_bfloat16() else "float32")


def test_the_second_stage_turns_down_near_misses_the_first_passes_and_keeps_rewordings(verifier, first_stage):
    """On MPNet, with more of the world in it: macOS versions and kinds of bike are not
    interchangeable. Both near misses come from development holdouts no stage trained on."""
    from inference.pair_verifier import SECOND_STAGE_FLOOR

    near_misses = [
        ("What is the default shell in macOS Catalina?", "macos mojave default shell"),
        ("road bike tire pressure", "mtb tire pressure"),
    ]
    rewordings = [
        ("How do I speed up LLM inference", "how to make LLM inference faster"),
        ("What is the capital of France?", "Which city is the capital of France?"),
        ("How do I cancel my order?", "How can I cancel my order?"),
    ]
    assert (first_stage.score(near_misses) > 0.9).all()  # the first stage alone serves them
    assert (verifier.score(near_misses) < 0.3).all()
    assert (verifier.score(rewordings) > 0.8).all()
    # The second stage only reads pairs the first passes at SECOND_STAGE_FLOOR; these score
    # the lower of the two (none is one the second stage is sure of and the first doubts).
    pairs = near_misses + rewordings + [("How do I cancel my order?", "How do I cancel my subscription?")]
    both, first = verifier.score(pairs), first_stage.score(pairs)
    assert (both <= first + 1e-6).all() and both[-1] == first[-1] == 0.0
    # Under SECOND_STAGE_FLOOR a pair scores 0: nothing is served on the first stage alone,
    # whatever the verify threshold.
    unrelated = [("What is the capital of France?", "How do I bake sourdough bread at home?")]
    assert 0.0 < first_stage.score(unrelated, vetoes=False)[0] < SECOND_STAGE_FLOOR
    assert verifier.score(unrelated, vetoes=False)[0] == 0.0


def test_a_rewording_the_second_stage_is_sure_of_is_served_at_its_score(verifier, first_stage):
    """The first stage doubts these rewordings (0.8 and 0.88 on the development workloads),
    the second is sure of them: they score the second stage's own, over what the first
    gives; a pair the first stage all but turns down (under SURE_FIRST_STAGE_MIN) does not."""
    from inference.pair_verifier import SECOND_STAGE_SURE, SURE_FIRST_STAGE_MIN, two_stage_scores

    rewordings = [
        ("port number verizon to tmobile", "What is required to port a Verizon number to T-Mobile?"),
        ("puppy shots timeline", "puppy vaccination schedule"),
    ]
    first, second = first_stage.score(rewordings), verifier.second_stage.score(rewordings)
    assert (first < SECOND_STAGE_SURE).all() and (second >= SECOND_STAGE_SURE).all()
    assert np.allclose(verifier.score(rewordings), second, atol=1e-6)
    doubted = two_stage_scores(np.array([SURE_FIRST_STAGE_MIN - 0.01, 0.99]), np.array([0.99, 0.6]))
    assert doubted.tolist() == pytest.approx([SURE_FIRST_STAGE_MIN - 0.01, 0.6])


def test_the_second_stage_ships_small_and_its_record_says_what_was_trained():
    from inference.pair_verifier import RECORD_FILE, SECOND_STAGE_MODEL, WEIGHTS_FILE, training_record

    assert (SECOND_STAGE_MODEL / WEIGHTS_FILE).stat().st_size < 50e6  # int8 rows: 43 MB
    record = training_record(SECOND_STAGE_MODEL)
    assert (SECOND_STAGE_MODEL / RECORD_FILE).exists()
    assert record["trained_layers"] == "6 to 11 of 12, and the head"
    assert "all-mpnet-base-v2" in record["base_model"]


def test_held_to_a_threshold_the_second_stage_reads_only_pairs_that_could_pass(verifier, monkeypatch):
    """Look-ups pass each pair's verify threshold: a pair the first stage scores under it
    and under SURE_FIRST_STAGE_MIN fails whatever the second says, so the second is spared
    it and no decision changes."""
    pairs = [
        ("How do I speed up LLM inference", "how to make LLM inference faster"),
        ("What is the capital of France?", "Which city is the capital of France?"),
        ("road bike tire pressure", "mtb tire pressure"),
        ("What is the capital of France?", "What is the population of France?"),
        ("How do I exit a WhatsApp group?", "I want to stop getting alerts from one WhatsApp group."),
        ("How do I learn Python quickly?", "What is the best way to learn Java?"),
        ("standard check-in hour for Marriott properties", "What time do I have to check out of a Marriott?"),
        # Two the first stage scores between SECOND_STAGE_FLOOR and 0.7: one well under
        # SURE_FIRST_STAGE_MIN (0.26), which the bound spares the second stage, and one over
        # it (0.59), which the second stage still reads.
        ("How do I cancel a flight I booked with Delta?", "I need to cancel my Delta reservation online"),
        (
            "Can you give me a vegetarian brownie recipe?",
            "How do I bake brownies that are vegetarian-friendly? Eggs and butter are fine.",
        ),
    ]
    read: list[int] = []
    second_score = verifier.second_stage.score

    def counting(batch, **options):
        read.append(len(batch))
        return second_score(batch, **options)

    monkeypatch.setattr(verifier.second_stage, "score", counting)
    unbounded = verifier.score(pairs)
    read_unbounded = sum(read)
    read.clear()
    bounded = verifier.score(pairs, at_least=[0.7] * len(pairs))
    assert sum(read) < read_unbounded  # some pair reached the second stage only without the bound
    assert ((bounded >= 0.7) == (unbounded >= 0.7)).all()
    assert np.allclose(bounded[bounded > 0], unbounded[bounded > 0])
    assert (unbounded >= 0.7).any()


def test_a_pair_longer_than_the_verifier_reads_is_not_scored(verifier, monkeypatch):
    """Cut to fit, two long texts that differ only past the cut would read as one: such a
    pair scores 0 and never reaches a model; shorter pairs in the same call are unchanged,
    and one past the trained length but within the reading length is read whole."""
    from inference.pair_verifier import MAX_PAIR_TOKENS, READ_PAIR_TOKENS

    start = (
        "I bought a laptop from your store last week and the screen started flickering after a "
        "couple of days, and the keyboard also has a sticky key that repeats letters. "
    )
    middling = (start + "Can I get my money back?", start + "Can you send someone to repair it at home?")
    story = start + "I called support twice and waited on hold for an hour each time without an answer. "
    long_pair = (story * 2 + "Can I get my money back?", story * 2 + "Can you send someone to repair it?")
    short_pair = ("How do I reset my password?", "How can I reset my password?")
    assert MAX_PAIR_TOKENS < len(verifier.tokenizer(*middling)["input_ids"]) <= READ_PAIR_TOKENS - 10
    assert verifier.unread([long_pair, middling, short_pair]).tolist() == [True, False, False]
    # At the limit: a pair's length is its texts' plus the separators, under each stage's
    # tokenizer (MPNet's separators take one more piece than MiniLM's).
    words = (story * 2).split()
    results = {}
    for count in range(50, 64):
        pair = (" ".join(words[:count]), " ".join(words[:count]) + " ok")
        lengths = [len(stage.tokenizer(*pair)["input_ids"]) for stage in (verifier, verifier.second_stage)]
        results[tuple(lengths)] = bool(verifier.unread([pair])[0])
        assert results[tuple(lengths)] == (max(lengths) > READ_PAIR_TOKENS), (count, lengths)
    assert True in results.values() and False in results.values()  # the range spans the limit

    read: list[tuple[str, str]] = []
    for stage in (verifier, verifier.second_stage):
        original = stage.logits

        def reading(batch, original=original, **options):
            read.extend(batch)
            return original(batch, **options)

        monkeypatch.setattr(stage, "logits", reading)
    scores = verifier.score([long_pair, middling, short_pair])
    assert scores[0] == 0.0 and scores[2] > 0.7
    assert tuple(sorted(long_pair)) not in read and tuple(sorted(short_pair)) in read
    assert tuple(sorted(middling)) in read
    # the learned score alone (vetoes=False, as benchmarks read it) still reads it, cut to fit
    verifier.score([long_pair], vetoes=False)
    assert tuple(sorted(long_pair)) in read


def test_a_pair_whose_unknown_characters_differ_is_not_scored(verifier):
    """Emoji and many symbols are one unknown word piece to both stages' tokenizers, so
    "👍" / "👎" read as the very same pair of texts (a review saw it served at 0.97). Where
    the unknown pieces stand for the same text, or there are none, the pair is read."""
    thumbs = ("what does the 👍 emoji mean", "what does the 👎 emoji mean")
    same_emoji = ("what does the 👍 emoji mean", "meaning of the 👍 emoji")
    one_side = ("what does the 👍 emoji mean", "what does the thumbs up emoji mean")
    plain = ("How do I reset my password?", "How can I reset my password?")
    ids = [verifier.tokenizer(text)["input_ids"] for text in thumbs]
    assert ids[0] == ids[1]  # what the model would see
    assert verifier.unread([thumbs, same_emoji, one_side, plain]).tolist() == [True, False, True, False]
    scores = verifier.score([thumbs, plain])
    assert scores[0] == 0.0 and scores[1] > 0.7


HSA = (
    "Does money in my HSA carry over to next year?",
    "It's December and I still have $2,000 sitting in the health savings account that goes with "
    "my high-deductible plan. Do I need to spend it before the year ends or lose it?",
)


def test_in_bfloat16_a_pair_near_its_threshold_is_decided_the_same_whatever_its_call_holds():
    """In bfloat16 this pair scored 0.6943 alone and 0.7001 beside 63 other pairs (a review):
    served at 0.7 or not by what else the partition held. Near a cut it is scored in float32,
    which gives it one score in any company; far from every cut bfloat16 stands."""
    from inference.pair_verifier import SECOND_STAGE_MODEL

    base = str(load_settings().embedding_model("all-MiniLM-L6-v2").model_folder())
    in_bfloat16 = load_verifier(base, dtype="bfloat16", second_stage=SECOND_STAGE_MODEL)
    in_float32 = load_verifier(base, dtype="float32", second_stage=SECOND_STAGE_MODEL)
    # Shorter pairs beside it change the batch's shape (without the float32 score: 0.6984).
    others = [(f"short one {n}. Can I get my money back?", "short one. Refund?") for n in range(63)]
    alone = in_bfloat16.score([HSA], at_least=[0.7])[0]
    among = in_bfloat16.score([HSA, *others], at_least=[0.7] * 64)[0]
    assert alone == among == pytest.approx(in_float32.score([HSA], at_least=[0.7])[0], abs=1e-5)
    assert in_bfloat16.exact.pairs_read >= 1
    # Held to 0.1 only, the pair is far from every cut: its bfloat16 score stands.
    far = in_bfloat16.score([HSA], at_least=[0.1])[0]
    assert far != pytest.approx(in_float32.score([HSA], at_least=[0.1])[0], abs=1e-5)


def test_in_bfloat16_a_cautioned_pair_just_under_its_cut_is_read_again_in_float32(monkeypatch):
    """The caution's cut (CAUTIONED_MIN_SCORE) zeroed the pair before the nearness was looked
    at, so such a pair stayed decided in bfloat16 (a review); the cut is moved next to the
    pair's score here, as the shipped 0.98 lies too close to the surest pairs to pick one."""
    import inference.pair_verifier as pair_verifier
    from inference.pair_conflicts import REWORDED_NEGATION, checked

    base = str(load_settings().embedding_model("all-MiniLM-L6-v2").model_folder())
    in_bfloat16 = load_verifier(base, dtype="bfloat16")
    waze = (
        "waze mute voice",
        "I like seeing the route on Waze, but I don't want it talking while I'm listening to "
        "podcasts. How do I silence the voice?",
    )
    assert checked([waze])[1] == [REWORDED_NEGATION]  # cautioned: a negation on one side
    learned = float(in_bfloat16.score([waze], vetoes=False)[0])
    monkeypatch.setitem(pair_verifier.CAUTION_MIN_SCORES, REWORDED_NEGATION, learned + 1e-5)
    before = in_bfloat16.exact.pairs_read
    in_bfloat16.score([waze], at_least=[0.7])
    assert in_bfloat16.exact.pairs_read == before + 1


READ_IN_COMPANY = [  # pairs scored between 0.3 and 0.85, where a logit's last bits show
    (
        "leave bags at hotel after checkout",
        "Do hotels typically hold guests' bags after they have checked out?",
    ),
    (
        "Are portable chargers allowed in cabin baggage on commercial flights?",
        "is it ok to put a battery pack in the bag that goes in the hold",
    ),
    (
        "What is the recommended frequency for scooping a cat's litter box?",
        "How frequently should cat litter be fully replaced and the tray washed?",
    ),
    ("how often do i need to scoop my cats litter", "scooping litter daily or less?"),
    (
        "can landlord deduct normal wear and tear from deposit",
        "thinking of skipping my last rent payment and letting the landlord keep my deposit to cover "
        "it, can i do that or will i get in trouble",
    ),
    ("how do i stop duplicate emails from being inserted into my users table", "sql prevent duplicate rows"),
    (
        "my spanish teacher keeps saying 'que yo tenga' — what are the rest of the subjunctive "
        "forms of tener",
        "How do you conjugate tener in the present tense?",
    ),
]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_pair_held_to_a_cut_at_its_own_score_is_decided_the_same_whatever_its_call_holds(dtype):
    """Read in a batch, a float32 score moves in its last bits with the other pairs' lengths
    (1.3e-6 here), so a pair at its cut could be served in one replay block and not in
    another. Near a cut every pair is read again alone, whatever the dtype: its score is then
    the same in any company, to the bit."""
    if dtype == "bfloat16" and not native_bfloat16():
        pytest.skip("bfloat16 is not native on this CPU: the verifier runs in float32 here")
    base = str(load_settings().embedding_model("all-MiniLM-L6-v2").model_folder())
    verifier = load_verifier(base, dtype=dtype)
    scores = verifier.score(READ_IN_COMPANY, at_least=[0.1] * len(READ_IN_COMPANY))
    assert ((scores > 0.3) & (scores < 0.9)).all()
    cuts = scores.tolist()  # each pair's cut at its own score: every pair is near its cut
    long_company = [
        (f"{n} I would like to know, in some detail, how the weather will be on the weekend", "the weekend")
        for n in range(20)
    ]
    short_company = [(f"tea {n}", f"tea {n}?") for n in range(20)]
    pairs_one = [*READ_IN_COMPANY, *long_company]
    pairs_two = [*short_company, *READ_IN_COMPANY[::-1]]
    one = verifier.score(pairs_one, at_least=[*cuts, *[0.5] * 20])[: len(READ_IN_COMPANY)]
    two = verifier.score(pairs_two, at_least=[*[0.5] * 20, *cuts[::-1]])[20:][::-1]
    alone = np.array(
        [verifier.score([pair], at_least=[cut])[0] for pair, cut in zip(READ_IN_COMPANY, cuts, strict=True)]
    )
    assert one.tolist() == two.tolist() == alone.tolist()
    # Each pair is served at its cut or not, the same way in every company.
    assert ((one >= np.array(cuts)) == (alone >= np.array(cuts))).all()


def test_a_stage_reading_each_pair_alone_keeps_its_scores_apart_from_a_batched_one():
    """A score kept from a batch (the pair-score memory) must not stand in for a pair read alone."""
    from inference.pair_verifier import models_digest, stage_identity

    digest = models_digest(SHIPPED_MODELS)
    assert stage_identity(digest, "float32", read_alone=True) != stage_identity(digest, "float32")
    base = str(load_settings().embedding_model("all-MiniLM-L6-v2").model_folder())
    verifier = load_verifier(base, dtype="float32")
    assert verifier.exact is not None and verifier.exact.read_alone and verifier.exact.exact is None
    assert verifier.exact.identity != verifier.identity
    assert verifier.exact.second_stage.read_alone
    assert verifier.exact.second_stage.identity != verifier.second_stage.identity
