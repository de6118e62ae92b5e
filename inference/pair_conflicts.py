"""Explainable vetoes for two requests that read alike but need different answers.

The learned verifier (inference/pair_verifier.py) scores how alike two requests
mean; these checks name the differences it is known to miss, and any one of them
vetoes a semantic hit whatever the score:

- numbers: after reading dates, number words and thousands separators alike
  ("March 3, 2025" = "2025-03-03", "five years" = "5 years"), each side has a
  number the other lacks. A number on one side only ("a cup" / "1 cup") is left
  to the model.
- ordinals: each side names a position the other does not (the first / the second
  man on the moon, a second / a 3rd booster, the 2nd / the 2nd to last episode).
  Ordinals are compared only with ordinals: "first aid for a toddler" / "... for a
  2 year old" is left alone.
- codes: model or version codes differ (S23 / S24, Python2 / Python3).
- bounds: one side bounds a number both name from below, the other from above
  ("a minimum of 20 GB" / "20 GB or less"); inference/pair_bounds.py.
- polarity: a word swapped for its opposite (increase / decrease, safe / unsafe,
  a late check-out / an early check-in), or a negation on one side only. A negation
  cancels one opposite: "not safe" against "unsafe" passes. A negation
  alone vetoes only where the requests otherwise differ in a few words; in requests
  reworded further it is a caution: the pair is served only where the verifier is
  sure of it ("don't want Google Home listening" / "turn off its microphone").
- direction: two things both requests name stand in the opposite order around a
  direction word (from Milan to Florence / from Florence to Milan, USD to EUR /
  EUR to USD).
- units: each side names a different unit of one kind (Mbps / MB/s, Celsius /
  Fahrenheit, monthly / yearly, Friday / Monday).
- substitution: the requests say the same content words in the same order but one,
  swapped for a word that is not a synonym (brake fluid / transmission fluid, wired /
  wireless headphones). Synonyms are WordNet's (inference/wordnet.py);
  inflections, spelling variants and words of different parts of speech pass.
- undoing: one side undoes an action the other asks for, though both may name it
  (reveal hidden columns / hide columns, thaw a frozen report / freeze my credit,
  turn the mics back on / mute everyone); inference/pair_undoing.py reads which words
  ask for an action.
- places, last: the same words, with two things trading places around words that stay
  (PS4 games on the PS5 / PS5 games on the PS4, has Nadal beaten Federer / has Federer
  beaten Nadal); inference/pair_places.py.

Each check but the undoing and places ones compares words present on one side only, so most
rewording that keeps the meaning (another sentence shape, several words changed) is not
touched. The substitution check is the strict one: a single word swapped for a synonym WordNet
does not list ("easy" / "simple") is vetoed too, which costs a miss, not a wrong answer.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

import numpy as np

from inference.lexicon import (
    DIRECTION_WORDS,
    LIGHT_WORDS,
    MONTHS,
    NEGATIONS,
    NUMBER_WORDS,
    OPPOSITES,
    ORDINAL_WORDS,
    REVERSIBLE,
    SCALE_SUFFIXES,
    SCALE_WORDS,
    SCALES,
    SITUATED,
    UNIT_ALIASES,
    UNIT_KINDS,
    VARIANTS,
)
from inference.pair_bounds import Bound, opposite_bounds, read_bounds
from inference.pair_places import traded_places
from inference.pair_undoing import undone_by_first
from inference.wordnet import lemmas, parts_of_speech, share_a_sense

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
_NEGATIVE_PREFIX = re.compile(
    r"^(?:un|non)(?!der|ion|ique|it|iver|ifor|ify|ix|icode|ited|animous|til|cle|to|less)[a-z]{4,}$"
)
# Spelling variants are compared from this length on (shorter words differ by design).
_SHARED_STEM = 5
# Spellings of one word (favourite / favorite, colour / color).
_SPELLING_RATIO = 0.85
# Endings that make one word from another without changing what it names.
_ENDINGS = frozenset(
    "s es d ed ing er ers or ors ion ions ation ations ment ments ness ly al ity ive able ible "
    "ic ical ist ists ism y".split()
)
_NOUN = frozenset({"n"})
# A negation on one side only vetoes where at most this many content words differ ("can" /
# "can't dogs eat", "with" / "without a receipt"). Past it the requests were reworded, and a
# negation is as often part of the telling ("I don't want Google Home listening" / "turn off
# its microphone"): the pair is then only cautioned, served where the verifier is sure of it
# (pair_verifier.CAUTIONED_MIN_SCORE). Among the development workloads' candidate pairs the
# negation check vetoed, the near misses made by a negation alone changed 1 to 3 content
# words, while 400 of the 406 pairs of one group changed more than 4 (benchmarks/RESULTS.md,
# session 19).
NEGATION_VETO_MAX_CHANGED = 4
NEGATION = "negation on one side only"
REWORDED_NEGATION = f"{NEGATION}, the requests otherwise reworded"
# How many words a thing on either side of a direction word can span ("a community college").
_PHRASE_WORDS = 3
_DETERMINERS = frozenset("a an the my your our their his her its this that these those some".split())
_DESTINATION_WORDS = frozenset({"to", "into", "onto", "toward", "towards", "->", "→"})
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
_STOPWORDS = frozenset(
    "a an the of and or is are was were be been do does did can could should would will shall may might "
    "must i me my we our you your it its this that these those what which who whom how why when where "
    "there here for with at by as if so s t about please".split()
)


# What the substitution check looks past: words that carry no content of their own.
_NOT_CONTENT = _STOPWORDS | _DETERMINERS | LIGHT_WORDS


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


def _number_value(token: str) -> float | None:
    if _NUMBER.match(token):
        return float(token.replace(",", ""))
    ordinal = _ORDINAL.match(token)
    if ordinal:
        return float(ordinal.group(1))
    return None


def _negative_by_prefix(word: str) -> bool:
    """unsafe, uninsured, nonprofit, nonrefundable; not uninstall or unlock (they undo), not
    nonstop, and not a name whose rest is no word (Uniqlo, Unilever, unifunds.com)."""
    if not _NEGATIVE_PREFIX.match(word) or word == "nonstop":
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
    return base in _unit_kinds()


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


# An ordinal counted from the end is keyed "2 from the end"; a bare "the last" is _LAST.
_FROM_THE_END_KEY = " from the end"
_LAST = "1" + _FROM_THE_END_KEY
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
    return (key + _FROM_THE_END_KEY if taken else key), taken


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
            ordinals[_LAST] += 1  # "the last book" / "the second to last book"
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
    negations = sum(1 for b in bases if b in NEGATIONS or _negative_by_prefix(b)) - bound_negations
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
    )


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
    """(source, destination) pairs: "from Milan to Florence", "Milan to Florence" and
    "to Florence from Milan" all give (milan, florence); "A than B", "A over B" give (a, b)."""
    sources: list[str] = []
    destinations: list[str] = []
    pairs: set[tuple[str, str]] = set()
    for position, word in enumerate(bases):
        after = _phrase(bases, 1, position + 1)
        if word == "from":
            sources += after
        elif word in _DESTINATION_WORDS:
            destinations += after
            if "from" not in bases:
                sources += _phrase(bases, -1, position - 1)
        elif word in DIRECTION_WORDS:
            before = _phrase(bases, -1, position - 1)
            pairs |= {(x, y) for x in before for y in after if x != y}
    pairs |= {(x, y) for x in sources for y in destinations if x != y}
    return pairs


def _direction_swap(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, str] | None:
    pairs_b = _directed_pairs(b)
    for x, y in sorted(_directed_pairs(a)):
        if (y, x) in pairs_b and (x, y) not in pairs_b:
            return x, y
    return None


def _unit_change(only_a: list[str], only_b: list[str]) -> tuple[str, str] | None:
    """Another unit of one kind on each side; time units only next to numbers (_quantity_change)."""
    kinds = _unit_kinds()
    for unit in only_a:
        for other in only_b:
            shared = (kinds.get(unit, frozenset()) & kinds.get(other, frozenset())) - {"time"}
            if unit != other and shared:
                return unit, other
    return None


def _quantity_change(ra: Reading, rb: Reading) -> tuple[str, str, str] | None:
    kinds = _unit_kinds()
    for number, unit in ra.quantities.items():
        other = rb.quantities.get(number)
        if other and other != unit and kinds[unit] & kinds[other]:
            return number, unit, other
    return None


def _variant_added(ra: Reading, rb: Reading, only_a: list[str]) -> str | None:
    """A variant word (Pro, Ultra, Mini) on one side only, right after a model number or
    code ("iPhone 15 Pro", "Galaxy S23 Ultra"): not "tire air pressure", "a tax pro"."""
    for word in ra.variants:
        if word in only_a:
            return word
    return None


def _unrefined(numbers: Counter, reading: Reading, others: Counter) -> Counter:
    """`numbers` less the versions the other side refines: py3 / Python 3.11, python2 / 2.7."""
    refined = Counter(v for v in reading.versions if any(o.startswith(v + ".") for o in others))
    return numbers - refined  # one count each: "python3 on 3 cores" keeps its other 3


def _content(bases: tuple[str, ...]) -> list[str]:
    return [w for w in bases if w not in _NOT_CONTENT]


def _related_forms(one: str, other: str) -> bool:
    """One word made from the other by an ending (graduate / graduation, develop /
    developer) or spelled another way (favourite / favorite): a rewording, not another
    thing. A shared start alone is not enough: Austria / Australia, Java / JavaScript."""
    if not lemmas(one).isdisjoint(lemmas(other)):
        return True
    shorter, longer = sorted((one, other), key=lambda word: (len(word), word))
    for stem in (shorter, shorter[:-1] if shorter.endswith("e") else None):
        if stem and len(stem) >= 3 and longer.startswith(stem) and longer[len(stem) :] in _ENDINGS:
            return True
    # Sorted, so the ratio (which depends on the order) is the same both ways.
    return (
        len(shorter) >= _SHARED_STEM
        and len(longer) - len(shorter) <= 1  # colour / color, not Austria / Australia
        and longer[0] == shorter[0]
        and SequenceMatcher(a=shorter, b=longer).ratio() >= _SPELLING_RATIO
    )


def _same_side(one: str, other: str) -> bool:
    """Two words at the same end of one scale say the same (reduce / lower, more / greater)."""
    return any(one in end and other in end for ends in SCALES for end in ends)


def _substitution(ra: Reading, rb: Reading) -> tuple[str, str] | None:
    """The one content word swapped, where the content words of both requests are the
    same, in the same order, but for it (brake / transmission in "when is a brake fluid
    flush due"), and the two words are not synonyms. Words WordNet does not list (most
    names: Catalina / Mojave) count as nouns."""
    content_a, content_b = _content(ra.bases), _content(rb.bases)
    matcher = SequenceMatcher(a=content_a, b=content_b, autojunk=False)
    edits = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(edits) != 1:
        return None
    kind, start_a, end_a, start_b, end_b = edits[0]
    if kind != "replace" or end_a - start_a != 1 or end_b - start_b != 1:
        return None
    one, other = content_a[start_a], content_b[start_b]
    if ra.negations != rb.negations:
        return None  # the polarity check balanced this swap against a negation ("not safe" / "unsafe")
    undone = (one in (f"un{other}", f"non{other}") and not _negative_by_prefix(one)) or (
        other in (f"un{one}", f"non{one}") and not _negative_by_prefix(other)
    )
    if undone:
        return one, other  # install / uninstall, subscribe / unsubscribe: the verb undone
    # Opposites are the polarity check's to judge, and an un- word against another word is
    # left to the model ("uninstall" / "remove").
    if other in _opposites().get(one, ()) or _NEGATIVE_PREFIX.match(one) or _NEGATIVE_PREFIX.match(other):
        return None
    if _related_forms(one, other) or share_a_sense(one, other) or _same_side(one, other):
        return None
    # "return policy" / "return an item" swaps a noun for a noun; "compensation" / "sue"
    # says the same thing with another part of speech, and passes.
    if (parts_of_speech(one) or _NOUN).isdisjoint(parts_of_speech(other) or _NOUN):
        return None
    return one, other


@dataclass(frozen=True)
class Assessment:
    """The checks' verdict on a pair: a veto (never served), else perhaps a caution (served
    only where the verifier is sure of it), else neither."""

    veto: str | None
    caution: str | None


@lru_cache(maxsize=65536)
def assess(a: str, b: str) -> Assessment:
    """What the checks say of `a` and `b`: the first veto, else a caution, else neither.

    Cached, as `read` is: `evaluate` counts each candidate pair's verdict and then has the
    verifier score the pair, which asks again."""
    ra, rb = read(a), read(b)
    flips = _flips(ra, rb)
    veto = _veto(ra, rb, flips)
    if veto is None and flips.negation_only:
        return Assessment(None, REWORDED_NEGATION)  # _veto let it pass for the words changed
    return Assessment(veto, None)


def conflict(a: str, b: str) -> str | None:
    """Why `a` and `b` cannot share an answer, or None when no check objects."""
    return assess(a, b).veto


@dataclass(frozen=True)
class _Flips:
    opposites: list[tuple[str, str]]
    negation_only: bool  # an odd number of flips, none of them an opposite
    changed: int  # content words on one side only


def _flips(ra: Reading, rb: Reading) -> _Flips:
    with_ordinals_a = _only(ra.bases + ra.ordinal_words, rb.bases + rb.ordinal_words)
    with_ordinals_b = _only(rb.bases + rb.ordinal_words, ra.bases + ra.ordinal_words)
    changed = [
        w for w in (*with_ordinals_a, *with_ordinals_b) if w not in _STOPWORDS and w not in _DETERMINERS
    ]
    # Two bounds are the bounds check's to judge, alike ("a minimum of 20 GB" / "20 GB or more")
    # or on two numbers ("delayed over 3 hours" / "a flight under 1,500 km"); a bound against
    # a plain word stays a swap ("more than one year" / "less than a year").
    bound_a, bound_b = _bound_words(ra), _bound_words(rb)
    swaps = [
        (word, other)
        for word, other in _opposite_swaps(ra, rb, with_ordinals_a, with_ordinals_b)
        if not (word in bound_a and other in bound_b)
    ]
    negated = (ra.negations - rb.negations) % 2
    # A negation cancels one opposite ("not safe" / "unsafe"); two opposites do not cancel
    # each other ("a late check-out" / "an early check-in").
    flipped = len(swaps) > negated
    return _Flips(swaps if flipped else [], negated == 1 and not swaps, len(changed))


def _bound_words(reading: Reading) -> set[str]:
    return {base_form(word) for bound in reading.bounds for word in bound.words}


def _veto(ra: Reading, rb: Reading, flips: _Flips) -> str | None:
    numbers_a, numbers_b = ra.numbers - rb.numbers, rb.numbers - ra.numbers
    numbers_a, numbers_b = _unrefined(numbers_a, ra, numbers_b), _unrefined(numbers_b, rb, numbers_a)
    if numbers_a and numbers_b:
        return f"different numbers: {_show(numbers_a)} / {_show(numbers_b)}"
    ordinals_a, ordinals_b = _positions(ra.ordinals, rb.ordinals), _positions(rb.ordinals, ra.ordinals)
    if ordinals_a and ordinals_b:
        return f"different ordinals: {_show(ordinals_a)} / {_show(ordinals_b)}"
    codes_a, codes_b = ra.codes - rb.codes, rb.codes - ra.codes
    if codes_a and codes_b:
        return f"different codes: {', '.join(sorted(codes_a))} / {', '.join(sorted(codes_b))}"
    bounds = opposite_bounds(ra.bounds, rb.bounds)
    if bounds:
        return f"opposite bounds: {bounds[1]} {bounds[0]} / {bounds[2]} {bounds[0]}"
    only_a, only_b = _only(ra.bases, rb.bases), _only(rb.bases, ra.bases)
    if flips.opposites:
        return "opposites: " + ", ".join(f"{x} / {y}" for x, y in flips.opposites)
    if flips.negation_only and flips.changed <= NEGATION_VETO_MAX_CHANGED:
        return NEGATION
    direction = _direction_swap(ra.bases, rb.bases)
    if direction:
        return f"direction swapped: {direction[0]} and {direction[1]} in the opposite order"
    unit = _unit_change(only_a, only_b)
    if unit:
        return f"different units: {unit[0]} / {unit[1]}"
    quantity = _quantity_change(ra, rb) or _quantity_change(rb, ra)
    if quantity:
        return f"different units: {quantity[0]} {quantity[1]} / {quantity[0]} {quantity[2]}"
    variant = _variant_added(ra, rb, only_a) or _variant_added(rb, ra, only_b)
    if variant:
        return f"a product variant on one side only: {variant}"
    first, second = sorted((ra, rb), key=lambda reading: reading.bases)  # the same both ways
    swapped = _substitution(first, second)
    if swapped:
        return f"one word swapped for another: {swapped[0]} / {swapped[1]}"
    undone = undone_by_first(ra.tokens, rb.tokens) or undone_by_first(rb.tokens, ra.tokens)
    if undone:
        return f"one undoes what the other does: {undone[0]} / {undone[1]}"
    places = traded_places(ra.tokens, rb.tokens)
    if places:
        return f"places traded: {places[0]} / {places[1]}"
    return None


def _positions(own: Counter, other: Counter) -> Counter:
    """The positions one side names and the other does not. A bare "the last" counts only
    against another position from the end ("the second to last"): against "the third" it may
    be the same one ("the final film" of a trilogy)."""
    different = own - other
    if not any(key.endswith(_FROM_THE_END_KEY) and key != _LAST for key in other):
        del different[_LAST]
    return different


def _show(numbers: Counter) -> str:
    return ", ".join(sorted(numbers.elements()))


def vetoed(pairs: list[tuple[str, str]]) -> np.ndarray:
    """True where a check objects to the pair."""
    return checked(pairs)[0]


def checked(pairs: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Two masks over the pairs: vetoed, and cautioned (served only at a high verifier score)."""
    verdicts = [assess(a, b) for a, b in pairs]
    return (
        np.array([v.veto is not None for v in verdicts], dtype=bool),
        np.array([v.caution is not None for v in verdicts], dtype=bool),
    )
