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
# Letters joined by hyphens: Wi-Fi and e-mail are "wifi" and "email" to WordNet.
_HYPHENATED = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
# What English hangs on a word after an apostrophe (where's, you're, I've, we'll, he'd, I'm).
_CLITICS = frozenset({"s", "re", "ve", "ll", "d", "m"})
_SENTENCE_END = re.compile(r"[.!?¿¡:;]")
# Fewer lower-case words than this and the text is in Title Case (or too short to tell).
_LOWER_CASE_WORDS_FOR_NAMES = 2


def english_word_share(text: str) -> float:
    """The share of the text's words (runs of letters) that are English; 1.0 for none.

    A capitalised word that is not English and does not begin a sentence is a name
    ("Flights from São Paulo to Rio de Janeiro"), neither English nor foreign: it is left
    out of the count (German capitalises its nouns; its other words still count). Only
    where the text has lower-case words to judge by: in Title Case every word is
    capitalised, and none is taken for a name."""
    text = _HYPHENATED.sub(_joined_if_english, text.translate(_APOSTROPHES))
    words = list(_WORD.finditer(text))
    names_possible = sum(word.group().islower() for word in words) >= _LOWER_CASE_WORDS_FOR_NAMES
    english = counted = 0
    previous_end = 0
    for word in words:
        token = word.group()
        begins_sentence = previous_end == 0 or bool(_SENTENCE_END.search(text, previous_end, word.start()))
        previous_end = word.end()
        if _is_english(token.lower()):
            english += 1
        elif names_possible and not begins_sentence and token.istitle():  # acronyms (CSV) count
            continue
        counted += 1
    return english / counted if counted else 1.0


def _joined_if_english(hyphenated: re.Match) -> str:
    """One English word where the parts make one (Wi-Fi); else the parts stay words of
    their own, so that French inversions (est-il, allez-vous) still count as French."""
    joined = hyphenated.group().replace("-", "")
    return joined if _is_english(joined.lower()) else hyphenated.group()


def _is_english(word: str) -> bool:
    if word in FUNCTION_WORDS or (len(word) >= 4 and bool(lemmas(word))):
        return True
    stem, apostrophe, clitic = word.partition("'")
    if not apostrophe:
        return False
    if clitic == "t" and stem.endswith("n"):  # hasn't, wouldn't, isn't
        return _is_english(stem[:-1])
    return clitic in _CLITICS and _is_english(stem)
