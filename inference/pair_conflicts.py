"""Explainable vetoes for two requests that read alike but need different answers.

The learned verifier (inference/pair_verifier.py) scores how alike two requests
mean; these checks name the differences it is known to miss, and any one of them
vetoes a semantic hit whatever the score:

- numbers: after reading dates, number words and thousands separators alike
  ("March 3, 2025" = "2025-03-03", "five years" = "5 years"), each side has a
  number the other lacks. A number on one side only ("a cup" / "1 cup") is left
  to the model.
- codes: model or version codes differ (S23 / S24, Python2 / Python3).
- polarity: an odd number of flips between the two, counting a negation on one
  side only and each word swapped for its opposite (increase / decrease,
  safe / unsafe). "not safe" against "unsafe" is two flips and passes.
- direction: two things both requests name stand in the opposite order around a
  direction word (from Milan to Florence / from Florence to Milan, USD to EUR /
  EUR to USD).
- units: each side names a different unit of one kind (Mbps / MB/s, Celsius /
  Fahrenheit, monthly / yearly, Friday / Monday).

Each check compares words present on one side only, so rewording that keeps the
meaning (a different verb, another sentence shape) is not touched.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from inference.lexicon import (
    DIRECTION_WORDS,
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    OPPOSITES,
    SCALE_SUFFIXES,
    SCALE_WORDS,
    SCALES,
    SITUATED,
    UNIT_ALIASES,
    UNIT_KINDS,
    VARIANTS,
)

_CONTRACTIONS = (
    (re.compile(r"\bcan'?t\b|\bcannot\b"), "can not"),
    (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\b(do|does|did|is|are|was|were|should|would|could|has|have|had|must)n'?t\b"), r"\1 not"),
)
_NOT_SUFFIX = re.compile(r"n't\b")
# "non-compete" = "noncompete", "wi-fi" = "wifi"; spelled numbers keep their parts ("twenty-five").
_HYPHEN = re.compile(r"\b([a-z]+)-(?=[a-z])")
# unsafe, uninsured, nonprofit; not under, union, unique, unit, universe, uniform, until, uncle, unless.
_NEGATIVE_PREFIX = re.compile(
    r"^(?:un|non)(?!der|ion|ique|it|iver|ifor|ify|ix|icode|ited|animous|til|cle|to|less)[a-z]{4,}$"
)
# Past this many differing content words, polarity and units are left to the model.
REWORDED_LIMIT = 1000
# How many words a thing on either side of a direction word can span ("a community college").
_PHRASE_WORDS = 3
_DETERMINERS = frozenset("a an the my your our their his her its this that these those some".split())
_TOKEN = re.compile(r"->|→|[$€£¥%]|[a-z0-9]+(?:[./,][a-z0-9]+)*")
_DATE_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_DATE_SLASH = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{2,4})\b")
_NUMBER = re.compile(r"^\d+(?:,\d{3})*(?:\.\d+)?$|^\d+(?:\.\d+)?$")
_NUMBER_WITH_SUFFIX = re.compile(r"^(\d+(?:\.\d+)?)([a-z/]+)$")
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th|s)$")
_HAS_DIGIT = re.compile(r"\d")
_LEADING_ZEROS = re.compile(r"(?<!\d)0+(?=\d)")
_STOPWORDS = frozenset(
    "a an the of and or is are was were be been do does did can could should would will shall may might "
    "must i me my we our you your it its this that these those what which who whom how why when where "
    "there here for with at by as if so s t about please".split()
)


def _inflections(word: str) -> set[str]:
    """Regular inflected forms of a base word (thin -> thinner, cheap -> cheapest, log -> logged)."""
    forms = {word, word + "s", word + "es", word + "ed", word + "ing", word + "er", word + "est", word + "ly"}
    if word.endswith("e"):
        forms |= {word + "d", word + "r", word + "st", word[:-1] + "ing"}
    if word.endswith("y") and len(word) > 2:
        stem = word[:-1]
        forms |= {stem + "ies", stem + "ied", stem + "ier", stem + "iest", stem + "ily"}
    if len(word) >= 3 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou" and word[-3] not in "aeiou":
        double = word + word[-1]
        forms |= {double + "er", double + "est", double + "ed", double + "ing"}
    return forms


@lru_cache(maxsize=1)
def _base_forms() -> dict[str, str]:
    """Every inflected form of a lexicon word -> the word (first writer wins, base forms first)."""
    words = {w for pair in OPPOSITES for w in pair} | set(NEGATIONS)
    words |= {w for ends in SCALES for end in ends for w in end}
    words |= {u for units in UNIT_KINDS.values() for u in units} | set(UNIT_ALIASES)
    table: dict[str, str] = {w: w for w in words}
    for word in sorted(words):
        for form in _inflections(word):
            table.setdefault(form, word)
    table.update({"children": "child", "kids": "kid", "feet": "ft", "people": "person"})
    return table


def base_form(word: str) -> str:
    base = _base_forms().get(word, word)
    return UNIT_ALIASES.get(base, base)


@lru_cache(maxsize=1)
def _opposites() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    scale_pairs = [(high, low) for highs, lows in SCALES for high in highs for low in lows]
    for one, other in (*OPPOSITES, *scale_pairs):
        table.setdefault(one, set()).add(other)
        table.setdefault(other, set()).add(one)
    return {word: frozenset(others) for word, others in table.items()}


@lru_cache(maxsize=1)
def _unit_kinds() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for kind, units in UNIT_KINDS.items():
        for unit in units:
            table.setdefault(UNIT_ALIASES.get(unit, unit), set()).add(kind)
    return {unit: frozenset(kinds) for unit, kinds in table.items()}


def words(text: str) -> list[str]:
    lowered = text.lower().replace("’", "'")
    for pattern, replacement in _CONTRACTIONS:
        lowered = pattern.sub(replacement, lowered)
    lowered = _NOT_SUFFIX.sub(" not", lowered)
    lowered = _HYPHEN.sub(lambda m: m.group(1) + (" " if m.group(1) in NUMBER_WORDS else ""), lowered)
    lowered = _DATE_ISO.sub(r"\1 \2 \3", lowered)
    lowered = _DATE_SLASH.sub(r"\1 \2 \3", lowered)
    return _TOKEN.findall(lowered)


@dataclass(frozen=True)
class Reading:
    """What the checks need from one request."""

    bases: tuple[str, ...]
    numbers: Counter
    codes: frozenset[str]
    negations: int
    # number -> the unit written next to it ("250 euros", "$800", "180 degrees Celsius")
    quantities: dict[float, str]


def _number_value(token: str) -> float | None:
    if _NUMBER.match(token):
        return float(token.replace(",", ""))
    ordinal = _ORDINAL.match(token)
    if ordinal:
        return float(ordinal.group(1))
    return None


def _is_unit(base: str) -> bool:
    return base in _unit_kinds()


def _unit_near(bases: list[str], tokens: list[str], position: int) -> str | None:
    """The unit written right before a number ($800) or within two words after it (180 degrees Celsius)."""
    if bases and _is_unit(bases[-1]) and not bases[-1].isalpha():
        return bases[-1]
    for token in tokens[position + 1 : position + 3]:
        if _is_unit(base_form(token)):
            return base_form(token)
    return None


def read(text: str) -> Reading:
    tokens = words(text)
    bases: list[str] = []
    numbers: Counter = Counter()
    codes: set[str] = set()
    quantities: dict[float, str] = {}
    spoken = 0.0  # a number being spelled out ("twenty five", "two hundred")
    spelling = False
    for position, token in enumerate(tokens):
        if token in NUMBER_WORDS:
            spoken, spelling = spoken + NUMBER_WORDS[token], True
            continue
        if token in SCALE_WORDS and spelling:
            spoken, spelling = max(spoken, 1.0) * SCALE_WORDS[token], True
            continue
        if spelling:
            numbers[spoken] += 1
            unit = _unit_near(bases, tokens, position - 1)
            if unit:
                quantities.setdefault(spoken, unit)
            spoken, spelling = 0.0, False
        value = _number_value(token)
        if value is not None:
            following = tokens[position + 1] if position + 1 < len(tokens) else ""
            value *= SCALE_WORDS.get(following, 1)
            numbers[value] += 1
            unit = _unit_near(bases, tokens, position)
            if unit:
                quantities.setdefault(value, unit)
            continue
        with_suffix = _NUMBER_WITH_SUFFIX.match(token)
        suffix = with_suffix.group(2) if with_suffix else ""
        if with_suffix and (suffix in SCALE_SUFFIXES or _is_unit(base_form(suffix))):
            numbers[float(with_suffix.group(1)) * SCALE_SUFFIXES.get(suffix, 1)] += 1
            if suffix not in SCALE_SUFFIXES:
                bases.append(base_form(suffix))
            continue
        if _HAS_DIGIT.search(token):
            codes.add(_LEADING_ZEROS.sub("", token))  # S04E02 = S4E2
            continue
        month = MONTHS.get(token)
        near_number = any(
            _HAS_DIGIT.search(tokens[p]) for p in (position - 1, position + 1) if 0 <= p < len(tokens)
        )
        if month is not None and (near_number or (len(token) > 3 and token != "march")):
            numbers[float(month)] += 1
            continue
        bases.append(base_form(token))
    if spelling:
        numbers[spoken] += 1
    negations = sum(1 for b in bases if b in NEGATIONS or _NEGATIVE_PREFIX.match(b))
    return Reading(tuple(bases), numbers, frozenset(codes), negations, quantities)


def _only(one: tuple[str, ...], other: tuple[str, ...]) -> list[str]:
    return list((Counter(one) - Counter(other)).elements())


def _neighbours(bases: tuple[str, ...], word: str) -> set[tuple[str, str]]:
    return {("left", bases[i - 1] if i else "") for i, w in enumerate(bases) if w == word} | {
        ("right", bases[i + 1] if i + 1 < len(bases) else "") for i, w in enumerate(bases) if w == word
    }


def _opposite_swaps(ra: Reading, rb: Reading, only_a: list[str], only_b: list[str]) -> list[tuple[str, str]]:
    """Words of one side swapped for their opposite on the other. A particle (on/off, in/out)
    counts only against another particle standing by the same word: "turn on" / "turn off",
    not "look up" / "cheap"."""
    swaps, used = [], set()
    for word in only_a:
        for other in only_b:
            if other in used or other not in _opposites().get(word, ()):
                continue
            if (word in SITUATED or other in SITUATED) and not (
                word in SITUATED
                and other in SITUATED
                and _neighbours(ra.bases, word) & _neighbours(rb.bases, other)
            ):
                continue
            swaps.append((word, other))
            used.add(other)
            break
    return swaps


def _phrase(bases: tuple[str, ...], step: int, start: int) -> list[str]:
    """Up to three content words next to position `start` going by `step`, past determiners,
    stopping at any other function word: the thing a direction word points from or to."""
    found: list[str] = []
    position = start
    while 0 <= position < len(bases) and len(found) < _PHRASE_WORDS:
        word = bases[position]
        if word in _DETERMINERS and not found:
            position += step
            continue
        if word in _STOPWORDS or word in _DETERMINERS or word in DIRECTION_WORDS or word in NEGATIONS:
            break
        found.append(word)
        position += step
    return found


def _directed_pairs(bases: tuple[str, ...]) -> set[tuple[str, str]]:
    """(x, y) for every "x <direction word> y" in the text: from Milan to Florence -> (milan, florence)."""
    pairs = set()
    for position, word in enumerate(bases):
        if word in DIRECTION_WORDS:
            before, after = _phrase(bases, -1, position - 1), _phrase(bases, 1, position + 1)
            pairs |= {(x, y) for x in before for y in after if x != y}
    return pairs


def _direction_swap(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str] | None:
    pairs_b = _directed_pairs(b)
    for x, y in sorted(_directed_pairs(a)):
        if (y, x) in pairs_b and (x, y) not in pairs_b:
            return x, y
    return None


def _unit_change(only_a: list[str], only_b: list[str]) -> tuple[str, str] | None:
    kinds = _unit_kinds()
    for unit in only_a:
        for other in only_b:
            if unit != other and kinds.get(unit, frozenset()) & kinds.get(other, frozenset()):
                return unit, other
    return None


def _quantity_change(ra: Reading, rb: Reading) -> tuple[str, str, str] | None:
    kinds = _unit_kinds()
    for number, unit in ra.quantities.items():
        other = rb.quantities.get(number)
        if other and other != unit and kinds[unit] & kinds[other]:
            return f"{number:g}", unit, other
    return None


def _variant_added(ra: Reading, rb: Reading, only_a: list[str]) -> str | None:
    """A variant word (Pro, Ultra, Mini) on one side only, right after a name both sides share."""
    shared = set(ra.bases) & set(rb.bases)
    for i, word in enumerate(ra.bases):
        previous = ra.bases[i - 1] if i else ""
        named = previous in shared and previous not in _STOPWORDS and previous not in _DETERMINERS
        if word in VARIANTS and word in only_a and named:
            return f"{previous} {word}"
    return None


def conflict(a: str, b: str, max_changed: int | None = None) -> str | None:
    """Why `a` and `b` cannot share an answer, or None when no check objects.

    The polarity and unit checks apply only where at most `max_changed` content words
    differ (default REWORDED_LIMIT); past that the request was reworded, and a negative
    meaning is often carried by a word ("toxic", "lost the receipt"): the model decides.
    """
    max_changed = REWORDED_LIMIT if max_changed is None else max_changed
    ra, rb = read(a), read(b)
    numbers_a, numbers_b = ra.numbers - rb.numbers, rb.numbers - ra.numbers
    if numbers_a and numbers_b:
        return f"different numbers: {_show(numbers_a)} / {_show(numbers_b)}"
    codes_a, codes_b = ra.codes - rb.codes, rb.codes - ra.codes
    if codes_a and codes_b:
        return f"different codes: {', '.join(sorted(codes_a))} / {', '.join(sorted(codes_b))}"
    only_a, only_b = _only(ra.bases, rb.bases), _only(rb.bases, ra.bases)
    changed = [w for w in (*only_a, *only_b) if w not in _STOPWORDS and w not in _DETERMINERS]
    swaps = _opposite_swaps(ra, rb, only_a, only_b)
    negation_flip = (ra.negations - rb.negations) % 2
    if len(changed) <= max_changed and (len(swaps) + negation_flip) % 2:
        if swaps:
            return "opposites: " + ", ".join(f"{x} / {y}" for x, y in swaps)
        return "negation on one side only"
    direction = _direction_swap(ra.bases, rb.bases)
    if direction:
        return f"direction swapped: {direction[0]} and {direction[1]} in the opposite order"
    unit = _unit_change(only_a, only_b) if len(changed) <= max_changed else None
    if unit:
        return f"different units: {unit[0]} / {unit[1]}"
    quantity = _quantity_change(ra, rb) or _quantity_change(rb, ra)
    if quantity:
        return f"different units: {quantity[0]} {quantity[1]} / {quantity[0]} {quantity[2]}"
    variant = _variant_added(ra, rb, only_a) or _variant_added(rb, ra, only_b)
    if variant:
        return f"a variant on one side only: {variant}"
    return None


def _show(numbers: Counter) -> str:
    return ", ".join(f"{n:g}" for n in sorted(numbers.elements()))
