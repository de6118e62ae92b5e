"""Training pairs made by editing real requests (inference/pair_augment.py)."""

import re

from inference.pair_augment import common_words, perturbed_pairs, sibling_swapped_pairs

PARAPHRASES = [
    {"a": "Which museums in Paris are open on Monday?", "b": "paris museums open monday", "duplicate": True},
    {"a": "Can my hamster eat grapes?", "b": "are grapes safe for a hamster", "duplicate": True},
]
# "dog" or "fox" would not do: they are verbs too, and only words that are nothing but
# nouns are swapped.
VOCABULARY = {"monday", "tuesday", "wednesday", "paris", "london", "rome", "hamster", "gerbil", "grapes"}


def test_sibling_swaps_change_one_shared_noun_into_another_of_its_kind():
    pairs = sibling_swapped_pairs(PARAPHRASES, 20, VOCABULARY, seed=3)
    assert len(pairs) == 20 and not any(pair["duplicate"] for pair in pairs)
    for pair in pairs:
        source = next(p for p in PARAPHRASES if {p["a"], p["b"]} & {pair["a"], pair["b"]})
        edited = pair["b"]
        original = source["b"] if pair["a"] == source["a"] else source["a"]
        before = re.findall(r"\w+", original.lower())
        after = re.findall(r"\w+", edited.lower())
        changed = [(x, y) for x, y in zip(before, after, strict=True) if x != y]
        assert len(changed) == 1  # exactly one word swapped, the rest kept
        word, sibling = changed[0]
        assert sibling in VOCABULARY and word in pair["a"].lower()  # a shared word, a common sibling
    sources = {p["a"] for p in PARAPHRASES if any(p["a"] in (q["a"], q["b"]) for q in pairs)}
    assert len(sources) == len(PARAPHRASES)  # both paraphrase pairs yielded near misses


def test_sibling_swaps_need_a_shared_noun_with_a_known_sibling():
    unrelated = [{"a": "How do I stay calm?", "b": "ways to relax quickly", "duplicate": True}]
    assert sibling_swapped_pairs(unrelated, 5, VOCABULARY) == []


def test_perturbed_pairs_are_mostly_near_misses_with_some_surface_variants():
    questions = ["How do I increase my credit limit?", "Is it legal to drive from Paris to Rome?"] * 10
    pairs = perturbed_pairs(questions, 50, seed=1)
    assert len(pairs) == 50
    assert any(pair["duplicate"] for pair in pairs) and sum(not pair["duplicate"] for pair in pairs) > 25


def test_common_words_keep_frequent_words_only():
    assert common_words(["the cat sat", "the cat ran", "a dog"], min_count=2) == {"the", "cat"}


def test_antonym_swaps_change_one_content_word_never_a_preposition():
    import random

    from inference.pair_augment import ANTONYMS, _antonym

    assert not {"in", "out", "on", "off", "up", "down"} & {word for pair in ANTONYMS for word in pair}
    question = "Can I buy the cheap one online in winter and sell it later?"
    rng = random.Random(0)
    swaps = {_antonym(question, rng) for _ in range(40)}
    assert swaps >= {
        "Can I sell the cheap one online in winter and sell it later?",
        "Can I buy the expensive one online in winter and sell it later?",
        "Can I buy the cheap one offline in winter and sell it later?",
    }
    for swapped in swaps:
        changed = [(x, y) for x, y in zip(question.split(), swapped.split(), strict=True) if x != y]
        assert len(changed) == 1
