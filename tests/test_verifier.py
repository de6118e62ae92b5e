"""The shipped pair verifier: loads offline from the repository, scores pairs sensibly."""

import pytest

from inference.pair_verifier import SHIPPED_MODEL, load_verifier, numbers_differ, training_record
from storage.config import load_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def verifier():
    base = load_settings().embedding_model("all-MiniLM-L6-v2").model_folder()
    return load_verifier(str(base), str(SHIPPED_MODEL))


def test_numbers_rule():
    assert numbers_differ("reset after 3 attempts", "reset after 5 attempts")
    assert not numbers_differ("flight 2 to Rome at 10", "at 10, flight 2 to Rome")


def test_scores_are_symmetric_probabilities(verifier):
    pairs = [("How do I reset my password?", "How can I reset my password?")]
    forward, backward = verifier.score(pairs)[0], verifier.score([pairs[0][::-1]])[0]
    assert 0.0 <= forward <= 1.0
    assert forward == pytest.approx(backward)


def test_paraphrases_score_above_near_misses(verifier):
    paraphrases = [
        ("How do I reset my password?", "How can I reset my password?"),
        ("What are your opening hours?", "When are you open?"),
        ("Do you ship internationally?", "Do you ship to other countries?"),
    ]
    near_misses = [
        ("How do I cancel my order?", "How do I cancel my subscription?"),
        ("How do I increase my credit limit?", "How do I decrease my credit limit?"),
        ("Convert 100 USD to EUR", "Convert 100 EUR to USD"),
    ]
    para, near = verifier.score(paraphrases), verifier.score(near_misses)
    assert para.mean() > near.mean() + 0.3


def test_numbers_that_differ_are_never_accepted(verifier):
    assert verifier.score([("Reset after 3 failed attempts", "Reset after 5 failed attempts")])[0] == 0.0


def test_the_training_record_says_how_it_was_made():
    record = training_record()
    assert record["qqp_heldout_pairs_not_trained_on"] > 0 and record["steps"] > 0
