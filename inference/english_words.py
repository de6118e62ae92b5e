"""How much of a text is English words: a language detector's second opinion.

Short English requests full of units, brands and names ("What is 180°C in Fahrenheit?")
read as German to an n-gram detector; their words are still English. A word counts if
it is a common function word, or a WordNet word of four letters or more (shorter WordNet
entries include abbreviations that are function words elsewhere: "de", "la", "est").
"""

from __future__ import annotations

import re

from inference.wordnet import lemmas

FUNCTION_WORDS: frozenset[str] = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being
    am do does did done have has had i you he she it we they me him her us them my your his its
    our their this that these those what which who whom whose when where why how not no yes can
    could will would shall should may might must there here than then so too very just also
    about into over under up down out off again more most less least some any all each every
    both few many much such own same other another only don't doesn't isn't aren't won't didn't
    can't i'm it's let let's vs etc ok""".split()
)
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
# What English hangs on a word after an apostrophe (where's, you're, I've, we'll, he'd, I'm).
_CLITICS = frozenset({"s", "re", "ve", "ll", "d", "m"})


def english_word_share(text: str) -> float:
    """The share of the text's words (runs of letters) that are English; 1.0 for none.

    A capitalised word after the first that is not English is a name ("Flights from São
    Paulo to Rio de Janeiro"), neither English nor foreign: it is left out of the count
    (German capitalises its nouns; its other words still count)."""
    tokens = _WORD.findall(text.translate(_APOSTROPHES))
    english = counted = 0
    for position, token in enumerate(tokens):
        if _is_english(token.lower()):
            english += 1
        elif position > 0 and token.istitle():  # an acronym (CSV, USB) still counts
            continue
        counted += 1
    return english / counted if counted else 1.0


def _is_english(word: str) -> bool:
    if word in FUNCTION_WORDS or (len(word) >= 4 and bool(lemmas(word))):
        return True
    stem, apostrophe, clitic = word.partition("'")
    if not apostrophe:
        return False
    if clitic == "t" and stem.endswith("n"):  # hasn't, wouldn't, isn't
        return _is_english(stem[:-1])
    return clitic in _CLITICS and _is_english(stem)
