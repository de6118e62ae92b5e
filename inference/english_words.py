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


def english_word_share(text: str) -> float:
    """The share of the text's words (runs of letters) that are English; 1.0 for none."""
    words = [word.lower() for word in _WORD.findall(text)]
    if not words:
        return 1.0
    english = sum(word in FUNCTION_WORDS or (len(word) >= 4 and bool(lemmas(word))) for word in words)
    return english / len(words)
