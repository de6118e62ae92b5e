"""Which way a request bounds a number: "at least 20 GB", "a minimum of 20 GB" and "20 GB or
more" ask for 20 or above; "at most 20 GB", "up to 20 GB" and "20 GB or less" for 20 or below.

The polarity check (inference/pair_conflicts.py) compares single words, and bounds are
phrases it misreads: "minimum" is the low end of a scale yet "a minimum of 20 GB" asks for
more, "or more" / "at most" holds no pair of opposites, and "no more than $500" negates
nothing. Read as directions on the numbers they bound, "a minimum of 20 GB" / "20 GB or
less" is a veto, and "a minimum of 20 GB" / "20 GB or more" passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from inference.lexicon import NUMBER_WORDS

ABOVE, BELOW = "at least", "at most"
# Written before the number ("at least 20", "a minimum of 20", "under $500").
_BEFORE: dict[tuple[str, ...], str] = {
    **dict.fromkeys(
        [("at", "least"), ("no", "less", "than"), ("not", "less", "than"), ("no", "fewer", "than")]
        + [("minimum", "of"), ("minimum",), ("min",), ("more", "than"), ("greater", "than")]
        + [("over",), ("above",), ("upwards", "of"), ("in", "excess", "of"), ("exceeding",)],
        ABOVE,
    ),
    **dict.fromkeys(
        [("at", "most"), ("no", "more", "than"), ("not", "more", "than"), ("maximum", "of")]
        + [("maximum",), ("up", "to"), ("under",), ("below",), ("less", "than"), ("fewer", "than")]
        + [("a", "cap", "of"), ("capped", "at"), ("not", "exceeding"), ("no", "higher", "than")],
        BELOW,
    ),
}
# Written after it, a few words on ("20 GB of data or less", "18 years or older").
_AFTER: dict[tuple[str, ...], str] = {
    **dict.fromkeys(
        [("or", w) for w in ("more", "higher", "above", "greater", "over", "bigger", "larger", "longer")]
        + [("or", "later"), ("or", "newer"), ("or", "older"), ("and", "up"), ("and", "above")]
        + [("and", "over"), ("and", "older"), ("and", "newer"), ("and", "later"), ("and", "higher")]
        + [("at", "least"), ("minimum",)],
        ABOVE,
    ),
    **dict.fromkeys(
        [("or", w) for w in ("less", "fewer", "lower", "under", "below", "smaller", "shorter", "cheaper")]
        + [("or", "earlier"), ("or", "younger"), ("and", "under"), ("and", "below"), ("and", "younger")]
        + [("and", "lower"), ("and", "less"), ("and", "earlier"), ("at", "most"), ("maximum",), ("tops",)],
        BELOW,
    ),
}
# What may stand between a bound written before a number and the number ("under $500").
_BEFORE_NUMBER = frozenset({"$", "€", "£", "¥", "a", "an"})
# How many words (a unit, "of data") may stand between a number and a bound after it.
_WORDS_BEFORE_AFTER_BOUND = 3
_LONGEST = max(map(len, (*_BEFORE, *_AFTER)))
# A number, perhaps with its unit run in ("20gb", "30k", "5%"); a year is no amount.
_AMOUNT = re.compile(r"^\d[\d,.]*[a-z/%]*$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
_NOT_OF_A_NUMBER = re.compile(r"[^\d.]")
_ZERO_FRACTION = re.compile(r"\.0+$")


@dataclass(frozen=True)
class Bound:
    """One bound a request sets: which way, on which number, in which words."""

    direction: str  # ABOVE or BELOW
    number: str  # the number as digits ("20" for "20gb", "twenty", "20 GB")
    words: tuple[str, ...]


def _number_key(token: str) -> str | None:
    """The number a token states, if it states one a bound can hold ("20", "20gb", "1,500",
    "twenty"): not a code ("ps5", "m.2") and not a year ("the maximum 2024 contribution")."""
    if token in NUMBER_WORDS:
        return str(NUMBER_WORDS[token])
    if not _AMOUNT.match(token) or _YEAR.match(token):
        return None
    return _ZERO_FRACTION.sub("", _NOT_OF_A_NUMBER.sub("", token).strip("."))  # "$500.00": 500


def _phrase_at(tokens: tuple[str, ...], position: int, phrases: dict) -> tuple[str, int]:
    """The longest phrase of `phrases` starting at `position`: its direction and length."""
    for length in range(_LONGEST, 0, -1):
        direction = phrases.get(tuple(tokens[position : position + length]))
        if direction:
            return direction, length
    return "", 0


def _number_after(tokens: tuple[str, ...], position: int) -> str | None:
    while position < len(tokens) and tokens[position] in _BEFORE_NUMBER:
        position += 1
    return _number_key(tokens[position]) if position < len(tokens) else None


def _number_before(tokens: tuple[str, ...], position: int) -> str | None:
    start = max(0, position - 1 - _WORDS_BEFORE_AFTER_BOUND)
    for earlier in range(position - 1, start - 1, -1):
        number = _number_key(tokens[earlier])
        if number is not None:
            return number
        if _phrase_at(tokens, earlier, _AFTER)[0] or _phrase_at(tokens, earlier, _BEFORE)[0]:
            return None  # another bound stands between: "over 18 and under ..."
    return None


def read_bounds(tokens: tuple[str, ...]) -> frozenset[Bound]:
    """The bounds a request's words (pair_reading.words) set on its numbers."""
    bounds: set[Bound] = set()
    position = 0
    while position < len(tokens):
        direction, length = _phrase_at(tokens, position, _BEFORE)
        number = _number_after(tokens, position + length) if direction else None
        if number is None:
            direction, length = _phrase_at(tokens, position, _AFTER)
            # "18 and under 65": "under" bounds the 65 after it, not the 18 before it.
            bounds_the_next = direction and _number_after(tokens, position + length) is not None
            number = _number_before(tokens, position) if direction and not bounds_the_next else None
        if number is None:
            position += 1
            continue
        bounds.add(Bound(direction, number, tokens[position : position + length]))
        position += length
    return frozenset(bounds)


def _directions(bounds: frozenset[Bound]) -> dict[str, set[str]]:
    by_number: dict[str, set[str]] = {}
    for bound in bounds:
        by_number.setdefault(bound.number, set()).add(bound.direction)
    return by_number


def opposite_bounds(one: frozenset[Bound], other: frozenset[Bound]) -> tuple[str, str, str] | None:
    """(number, one's direction, the other's) where one request bounds a number only from
    below and the other bounds the same number only from above ("at least 20 GB" / "20 GB
    or less"); a range ("over 18 and under 65") bounds each number one way."""
    theirs = _directions(other)
    for number, directions in sorted(_directions(one).items()):
        others = theirs.get(number, set())
        if len(directions) == 1 and len(others) == 1 and directions != others:
            return number, next(iter(directions)), next(iter(others))
    return None
