"""How the conflict checks read one request (inference/pair_conflicts.py compares two readings).

A reading holds the request's words as base forms (thinner -> thin, disabled -> disable),
and apart from them what the checks compare: numbers read alike however written ("March
3, 2025" = "2025-03-03", "five years" = "5 years", "$64.00" = "$64"), codes (S23, 401k),
ordinals ("second" = "2nd", "the second to last"), negations (not, never, unsafe), the unit
written beside each number, product variants (15 Pro), versions run into words (python3)
and bounds (inference/pair_bounds.py).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from inference.lexicon import (
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    OPPOSITES,
    ORDINAL_WORDS,
    REVERSIBLE,
    SCALE_SUFFIXES,
    SCALE_WORDS,
    SCALES,
    UNIT_ALIASES,
    UNIT_KINDS,
    VARIANTS,
)
from inference.pair_bounds import Bound, read_bounds
from inference.wordnet import parts_of_speech

_CONTRACTIONS = (
    # A hedge in chatty padding negates nothing the request asks: "I honestly don't know which
    # planet has the most moons" asks what "which planet has the most moons" asks.
    (
        re.compile(
            r"\b(?:(?:i|we)(?: honestly| really| just)? (?:do not|don'?t) know"
            r"|(?:i'?m|i am|we'?re|we are) not sure|i have no idea)"
            # ... standing alone: "I don't know how to swim" or "I'm not sure if I'm allergic"
            # states a fact the answer depends on.
            r"(?=\s*(?:[.,;:!?]|$))"
        ),
        "",
    ),
    (re.compile(r"\bokay\b"), "ok"),
    # "Ok so which plants are toxic?": a discourse marker, not "ok" against "toxic".
    (re.compile(r"(?:^|(?<=[.!?]\s))(?:ok|alright)\b[,.!]?"), ""),
    (re.compile(r"\bcan'?t\b|\bcannot\b"), "can not"),
    (re.compile(r"\bwon'?t\b"), "will not"),
    # "Should I get a flu shot or not?" asks the same as "Should I get a flu shot?"
    (re.compile(r"\b(?:whether )?or not\b"), ""),
    (re.compile(r"\b(do|does|did|is|are|was|were|should|would|could|has|have|had|must)n'?t\b"), r"\1 not"),
)
_NOT_SUFFIX = re.compile(r"n't\b")
# A verb and its particle written as one word or hyphenated read as the two words ("check-in",
# "checkout", "login", "sign-up"), so that "check in" / "checkout" are the particles' opposites
# and "login" / "log in" the same words.
_PHRASAL_COMPOUND = re.compile(r"\b(?:(check)-?(in|out)|(log|sign)-?(in|out|on|up))\b")
# "non-compete" = "noncompete", "wi-fi" = "wifi"; spelled numbers keep their parts ("twenty-five").
_HYPHEN = re.compile(r"\b([a-z]+)-(?=[a-z])")
# "second-to-last" keeps its words: a position counted from the end (see _from_the_end).
_COUNTED_FROM_END = re.compile(r"\b([a-z0-9]+)-(to|from)-(last)\b")
# unsafe, uninsured, nonprofit; not under, union, unique, unit, universe, uniform, until, uncle, unless.
NEGATIVE_PREFIX = re.compile(
    r"^(?:un|non)(?!der|ion|ique|it|iver|ifor|ify|ix|icode|ited|animous|til|cle|to|less)[a-z]{4,}$"
)
_TOKEN = re.compile(r"->|→|[$€£¥%]|[a-z0-9]+(?:[./,][a-z0-9]+)*")
# Spans of time said with an article: "in a decade" = "in 10 years" ("which decade" stays a word).
_TIME_SPANS = (
    (re.compile(r"\b(?:a|one) decade\b"), "10 years"),
    (re.compile(r"\b(?:a|one) century\b"), "100 years"),
    (re.compile(r"\b(?:a|one) fortnight\b"), "2 weeks"),
)
# US retirement plans are named by a tax-code section and a letter, written "401(k)" as
# often as "401k": both read as one code, so 401(k) / 403(b) differ and "401k" is no
# 401,000.
_PLAN_SECTIONS, _PLAN_LETTERS = "401|403|457", "abk"
_PLAN_SECTION = re.compile(rf"\b({_PLAN_SECTIONS})\(([{_PLAN_LETTERS}])\)")
_PLAN_CODE = re.compile(rf"^(?:{_PLAN_SECTIONS})[{_PLAN_LETTERS}]$")
# "25 degrees C", "25°F", "-40 deg F": the letter is the scale.
_DEGREES = re.compile(r"(\d)\s*(?:[°º]\s*|\s+degrees?\s+|\s*deg\s+)([cfk])\b")
_DEGREE_SCALES = {"c": "celsius", "f": "fahrenheit", "k": "kelvin"}
# A word run into its number (python3, ps5, ipv6) reads as the word and the number:
# "python3" = "Python 3", and "python3" / "Python 2" differ in number.
_WORD_NUMBER = re.compile(r"^([a-z]{2,})(\d+)$")
_DATE_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_DATE_SLASH = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{2,4})\b")
_NUMBER = re.compile(r"^\d+(?:,\d{3})*(?:\.\d+)?$|^\d+(?:\.\d+)?$")
_NUMBER_WITH_SUFFIX = re.compile(r"^(\d+(?:\.\d+)?)([a-z/]+)$")
_ZERO_FRACTION = re.compile(r"\.0+$")
_ORDINAL = re.compile(r"^(\d+)(st|nd|rd|th|s)$")  # "s": a decade (1990s), no position
_ORDINAL_WORD_OF = {value: word for word, value in ORDINAL_WORDS.items()}
# Before "second", these make it the unit of time: "30 second", "per second", "wait a second".
_BEFORE_SECOND_OF_TIME = frozenset({"per", "one", "split", "half", "leap"}) | frozenset(NUMBER_WORDS)
_YEAR = re.compile(r"^\d{4}$")
_HAS_DIGIT = re.compile(r"\d")
_LEADING_ZEROS = re.compile(r"(?<!\d)0+(?=\d)")


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
def unit_kinds() -> dict[str, frozenset[str]]:
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
    lowered = _PHRASAL_COMPOUND.sub(lambda m: " ".join(part for part in m.groups() if part), lowered)
    lowered = _PLAN_SECTION.sub(r"\1\2", lowered)
    lowered = _COUNTED_FROM_END.sub(r"\1 \2 \3", lowered)
    lowered = _HYPHEN.sub(lambda m: m.group(1) + (" " if m.group(1) in NUMBER_WORDS else ""), lowered)
    for pattern, replacement in _TIME_SPANS:
        lowered = pattern.sub(replacement, lowered)
    lowered = _DEGREES.sub(lambda m: f"{m.group(1)} degrees {_DEGREE_SCALES[m.group(2)]}", lowered)
    lowered = _DATE_ISO.sub(r"\1 \2 \3", lowered)
    lowered = _DATE_SLASH.sub(r"\1 \2 \3", lowered)
    return _TOKEN.findall(lowered)


@dataclass(frozen=True)
class Reading:
    """What the checks need from one request."""

    bases: tuple[str, ...]
    numbers: Counter  # written-alike keys: "2500", "3.10", "2026"
    codes: frozenset[str]
    negations: int
    # number -> the unit written next to it ("250 euros", "$800", "180 degrees Celsius")
    quantities: dict[str, str]
    variants: frozenset[str]  # variant words right after a number or code (15 Pro, S23 Ultra)
    versions: frozenset[str]  # numbers run into a word (py3, python2): a version, refined by 3.11
    ordinals: Counter  # positions: "second" and "2nd" both give "2"
    # "1st" as the word "first": for the opposites check only ("1st" / "last day"); the
    # one-word swap check leaves it out, or "1st album" / "debut album" would be a swap.
    ordinal_words: tuple[str, ...]
    tokens: tuple[str, ...]  # the words as read, for the undoing check (pair_undoing)
    bounds: frozenset[Bound]  # which way it bounds its numbers: "at least 20 GB" (pair_bounds)
    bound_words: frozenset[str]  # the base forms of the bounds' words ("at", "least")
    # The negations written as words (not, never, without), the rest being prefixes (unsafe):
    # only a word cancels an opposite ("not safe" / "dangerous"; pair_conflicts).
    negation_words: int


def _number_value(token: str) -> float | None:
    if _NUMBER.match(token):
        return float(token.replace(",", ""))
    ordinal = _ORDINAL.match(token)
    if ordinal:
        return float(ordinal.group(1))
    return None


def negative_by_prefix(word: str) -> bool:
    """unsafe, uninsured, nonprofit, nonrefundable; not uninstall or unlock (they undo), not
    nonstop, and not a name whose rest is no word (Uniqlo, Unilever, unifunds.com)."""
    if not NEGATIVE_PREFIX.match(word) or word == "nonstop":
        return False
    stem = word[3:] if word.startswith("non") else word[2:]
    if not _is_word(stem):
        return False
    return _base_forms().get(stem, stem) not in REVERSIBLE and not any(
        stem.startswith(verb) for verb in REVERSIBLE
    )


def _is_word(word: str) -> bool:
    """A word WordNet lists, or an -able / -ible form of one (refundable, sharable, skippable)."""
    if parts_of_speech(word):
        return True
    if not word.endswith(("able", "ible")):
        return False
    root = word[:-4]
    undoubled = root[:-1] if len(root) > 2 and root[-1] == root[-2] else None
    return any(parts_of_speech(form) for form in (root, root + "e", undoubled) if form)


def _is_unit(base: str) -> bool:
    return base in unit_kinds()


def _unit_near(tokens: list[str], position: int) -> str | None:
    """The unit written right before a number ($800) or within two words after it (180 degrees Celsius)."""
    # A symbol is read by its token: its base word ("$" -> "usd") would read like a word, and
    # the unit after the number would win ("$250 in euros" is in dollars, not euros).
    previous = tokens[position - 1] if position else ""
    if previous and not previous.isalnum() and _is_unit(base_form(previous)):
        return base_form(previous)
    for token in tokens[position + 1 : position + 3]:
        if _is_unit(base_form(token)):
            return base_form(token)
    return None


def _key(value: float) -> str:
    # 15 significant digits: 1,234,567 and 1,234,568 stay apart (":g" would round both to 1.23457e+06).
    return f"{value:.15g}" if abs(value) < 1e15 else str(value)


class _SpelledNumber:
    """Reads spelled-out numbers: "two thousand five hundred" = 2500, "twenty-five" = 25,
    and years said in pairs: "twenty twenty-six" = 2026, "nineteen ninety" = 1990."""

    def __init__(self) -> None:
        self.total, self.group, self.active = 0, 0, False

    def take(self, token: str) -> bool:
        if token in NUMBER_WORDS:
            value = NUMBER_WORDS[token]
            if self.group and 10 <= value and 10 <= self.group < 100 and not self.total:
                self.group = self.group * 100 + value  # a year: twenty | sixteen
            else:
                self.group += value
            self.active = True
            return True
        if token in SCALE_WORDS and self.active:
            scale = SCALE_WORDS[token]
            if scale == 100:
                self.group = max(self.group, 1) * 100
            else:
                self.total += max(self.group, 1) * scale
                self.group = 0
            return True
        return False

    def completes_with(self, ordinal: int, after_and: bool) -> bool:
        """Whether an ordinal word ends the number read so far: "twenty-first" = 21st, "one
        hundred twenty-first" = 121st, and after "and" a round hundred or thousand: "one
        hundred and first" = 101st (but "one hundred first graders" are a hundred of them)."""
        if not self.active:
            return False
        rest = self.group % 100
        if rest == 0 and (self.group or self.total):
            return after_and and ordinal < 100
        return rest in range(20, 100, 10) and ordinal < 10

    def continues_after_and(self, tokens: list[str], position: int) -> bool:
        """ "one hundred and five" = 105, "two thousand and first": "and" joins a round hundred
        or thousand to what is below it; "one hundred and two hundred" stays two numbers."""
        if not self.active or self.group % 100 or not (self.group or self.total):
            return False
        following = position + 1
        while following < len(tokens) and tokens[following] in NUMBER_WORDS:
            if NUMBER_WORDS[tokens[following]] >= 100:
                return False
            following += 1
        after = tokens[following] if following < len(tokens) else ""
        if following > position + 1:  # number words: "and five", but not "and two hundred"
            return after not in SCALE_WORDS
        return after in ORDINAL_WORDS  # "and first"

    def finish_with(self, ones: int) -> str:
        self.group += ones
        return self.finish()

    def finish(self) -> str:
        value = self.total + self.group
        self.total, self.group, self.active = 0, 0, False
        return _key(value)


def _second_of_time(tokens: list[str], position: int) -> bool:
    """ "30 second plank", "per second", "a split second": the unit, not the ordinal.
    A year before it ("2023 second quarter") leaves it an ordinal."""
    previous = tokens[position - 1] if position else ""
    after_a_count = bool(_HAS_DIGIT.search(previous)) and not _YEAR.match(previous)
    return tokens[position] == "second" and (previous in _BEFORE_SECOND_OF_TIME or after_a_count)


# An ordinal counted from the end is keyed "2 from the end"; a bare "the last" is LAST.
FROM_THE_END_KEY = " from the end"
LAST = "1" + FROM_THE_END_KEY
# How an ordinal is counted from the end: "second to last", "2nd to the last", "third from
# last", "second from the end", "second last".
_FROM_THE_END = (
    ("to", "the", "last"),
    ("from", "the", "last"),
    ("from", "the", "end"),
    ("to", "last"),
    ("from", "last"),
    ("last",),
)
# After "to last" / "from last", these make "last" a verb or a time: "the first to last a year
# in space", "the second to last longer", "the third from last year's class".
_LAST_NOT_A_POSITION = frozenset(
    {"a", "an", "longer", "for", "until", "through", "over", "night", "time", "weekend"}
    | {"year", "years", "week", "weeks", "month", "months", "summer", "winter", "spring", "fall", "autumn"}
)


def _position(key: str, tokens: list[str], position: int) -> tuple[str, int]:
    """The key of the ordinal at `position` ("2", or "2 from the end" where the words after it
    say so) and how many of those words it takes."""
    taken = _from_the_end(tokens, position)
    return (key + FROM_THE_END_KEY if taken else key), taken


def _from_the_end(tokens: list[str], position: int) -> int:
    """How many words after the ordinal at `position` count it from the end, 0 when none do.
    Beside a month it is a date ("from June 2nd to last Friday")."""
    if _beside(tokens, position, MONTHS):
        return 0
    after = tokens[position + 1 : position + 5]
    for phrase in _FROM_THE_END:
        if tuple(after[: len(phrase)]) == phrase:
            following = after[len(phrase)] if len(after) > len(phrase) else ""
            if phrase[-1] == "last" and (following in _LAST_NOT_A_POSITION or _HAS_DIGIT.search(following)):
                return 0
            return len(phrase)
    return 0


def _beside(tokens: list[str], position: int, words: dict[str, int]) -> bool:
    """A word of `words` right next to `position`, or across "of": a spelled day and its
    month ("May fifth", "the fourth of July")."""
    for step in (-1, 1):
        near, far = position + step, position + 2 * step
        if 0 <= near < len(tokens) and tokens[near] in words:
            return True
        if 0 <= far < len(tokens) and tokens[near] == "of" and tokens[far] in words:
            return True
    return False


@lru_cache(maxsize=65536)
def read(text: str) -> Reading:
    """A text's reading; cached, since a request is compared with many candidates."""
    tokens = words(text)
    bases: list[str] = []
    numbers: Counter = Counter()
    codes: set[str] = set()
    quantities: dict[str, str] = {}
    versions: set[str] = set()
    ordinals: Counter = Counter()
    ordinal_words: list[str] = []
    spelled = _SpelledNumber()
    skipped_until = 0
    for position, token in enumerate(tokens):
        if position < skipped_until:
            continue
        if token == "and" and spelled.continues_after_and(tokens, position):
            continue
        if token in SCALE_WORDS and not spelled.active and position and tokens[position - 1] == "a":
            spelled.take("one")  # "a hundred and fifty" = 150, "a thousand and one" = 1001
        if spelled.take(token):
            continue
        after_and = position > 0 and tokens[position - 1] == "and"
        if token in ORDINAL_WORDS and spelled.completes_with(ORDINAL_WORDS[token], after_and):
            # "twenty-second" = "22nd"
            key, taken = _position(spelled.finish_with(ORDINAL_WORDS[token]), tokens, position)
            ordinals[key] += 1
            skipped_until = position + 1 + taken
            bases.append(token)
            continue
        if spelled.active:
            key = spelled.finish()
            numbers[key] += 1
            unit = _unit_near(tokens, position - 1)
            if unit:
                quantities.setdefault(key, unit)
        if token in ("last", "final") and position and tokens[position - 1] == "the":
            ordinals[LAST] += 1  # "the last book" / "the second to last book"
        if token in ORDINAL_WORDS and not _second_of_time(tokens, position):
            key, taken = _position(_key(ORDINAL_WORDS[token]), tokens, position)
            ordinals[key] += 1
            if taken:
                skipped_until = position + 1 + taken
                continue
            if _beside(tokens, position, MONTHS):
                numbers[_key(ORDINAL_WORDS[token])] += 1  # a day, as a number: "May fifth" = "May 5"
            else:
                bases.append(token)  # still a word too: first / last are opposites
            continue
        value = _number_value(token)
        if value is not None:
            numbered_ordinal = _ORDINAL.match(token)
            if numbered_ordinal and numbered_ordinal.group(2) != "s":
                # and a number, as it always was ("2nd" / "3rd"), unless counted from the end
                key, taken = _position(_key(value), tokens, position)
                ordinals[key] += 1
                if taken:
                    skipped_until = position + 1 + taken
                    continue
                if value in _ORDINAL_WORD_OF and not _beside(tokens, position, MONTHS):
                    ordinal_words.append(_ORDINAL_WORD_OF[value])
            following = tokens[position + 1] if position + 1 < len(tokens) else ""
            # A decimal keeps its written form: version 3.10 is not 3.1. A number whose decimals
            # are all zeros is the whole number: $64.00 = $64, version 3.0 = version 3.
            scaled = _key(value * SCALE_WORDS.get(following, 1))
            written_decimal = "." in token and not _ZERO_FRACTION.search(token)
            key = token if written_decimal and following not in SCALE_WORDS else scaled
            numbers[key] += 1
            unit = _unit_near(tokens, position)
            if unit:
                quantities.setdefault(key, unit)
            continue
        with_suffix = _NUMBER_WITH_SUFFIX.match(token)
        suffix = with_suffix.group(2) if with_suffix else ""
        if (
            with_suffix
            and not _PLAN_CODE.match(token)
            and (suffix in SCALE_SUFFIXES or _is_unit(base_form(suffix)))
        ):
            numbers[_key(float(with_suffix.group(1)) * SCALE_SUFFIXES.get(suffix, 1))] += 1
            if suffix not in SCALE_SUFFIXES:
                bases.append(base_form(suffix))
            continue
        word_number = _WORD_NUMBER.match(token)
        if word_number:
            bases.append(base_form(word_number.group(1)))
            version = _key(float(word_number.group(2)))
            numbers[version] += 1
            versions.add(version)
            continue
        if _HAS_DIGIT.search(token):
            codes.add(_LEADING_ZEROS.sub("", token))  # S04E02 = S4E2
            continue
        month = MONTHS.get(token)
        near_number = any(
            _HAS_DIGIT.search(tokens[p]) for p in (position - 1, position + 1) if 0 <= p < len(tokens)
        ) or _beside(tokens, position, ORDINAL_WORDS)
        if month is not None and (near_number or (len(token) > 3 and token != "march")):
            numbers[_key(month)] += 1
            continue
        bases.append(base_form(token))
    if spelled.active:
        numbers[spelled.finish()] += 1
    bounds = read_bounds(tuple(tokens))
    # "no more than $500" bounds a number and negates nothing.
    bound_negations = sum(1 for bound in bounds for word in bound.words if word in NEGATIONS)
    negation_words = sum(1 for b in bases if b in NEGATIONS) - bound_negations
    negations = negation_words + sum(1 for b in bases if b not in NEGATIONS and negative_by_prefix(b))
    variants = frozenset(
        token
        for i, token in enumerate(tokens)
        if token in VARIANTS and i and _HAS_DIGIT.search(tokens[i - 1])
    )
    return Reading(
        tuple(bases),
        numbers,
        frozenset(codes),
        negations,
        quantities,
        variants,
        frozenset(versions),
        ordinals,
        tuple(ordinal_words),
        tuple(tokens),
        bounds,
        frozenset(base_form(word) for bound in bounds for word in bound.words),
        negation_words,
    )
