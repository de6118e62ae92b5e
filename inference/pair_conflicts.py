"""Explainable vetoes for two requests that read alike but need different answers.

The learned verifier (inference/pair_verifier.py) scores how alike two requests
mean; these checks name the differences it is known to miss, and any one of them
vetoes a semantic hit whatever the score, but for two that only caution (a pair is then
served only at a high score):

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
- substitution, a caution: the requests say the same content words in the same order but
  one, swapped for a word that is not a synonym (brake fluid / transmission fluid, wired /
  wireless headphones). Synonyms are WordNet's (inference/wordnet.py); inflections,
  spelling variants and words of different parts of speech pass. The pair is served only
  where the verifier is sure of it. It vetoes a verb undone by its prefix (install /
  uninstall), and a swap in a request of more than SWAP_CAUTION_MAX_CONTENT content words.
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
does not list ("easy" / "simple") is cautioned too (vetoed in a longer request), which costs a
miss where the verifier is not sure of the pair, not a wrong answer.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

import numpy as np

from inference.lexicon import (
    DIRECTION_WORDS,
    LIGHT_WORDS,
    NEGATIONS,
    OPPOSITES,
    SCALES,
    SITUATED,
)
from inference.pair_bounds import opposite_bounds
from inference.pair_places import traded_places
from inference.pair_reading import (
    FROM_THE_END_KEY,
    LAST,
    NEGATIVE_PREFIX,
    Reading,
    negative_by_prefix,
    read,
    unit_kinds,
)
from inference.pair_undoing import undone_by_first
from inference.wordnet import lemmas, parts_of_speech, share_a_sense

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
# One content word swapped for a word that is not a synonym, all else kept: a caution, not a
# veto. Over the candidate pairs of the eight written workloads (each row's 8 nearest earlier
# rows at MiniLM cosine 0.65 or more; session 40), the check vetoed 317 near misses, none of
# which the learned verifier scores above 0.37, and 43 rewordings, 34 of which it passes at
# 0.5 or more ("ibuprofen dose for kids" / "how much ibuprofen can i give my kid", "block a
# number" / "block someone on WhatsApp"): WordNet pairs few synonyms. A swapped pair is still
# held to a high score (pair_verifier.CAUTION_MIN_SCORES), as the verifier is less sure of
# swaps it never met: on held-out QQP it scores "the best gift you've ever given" / "...
# received" 0.94. A verb undone by its prefix (install / uninstall) stays a veto.
SWAPPED_WORD = "one word swapped for another"
# ... and so does a swap in a longer request, all else the same: there the one word is the
# whole difference, and the verifier, trained on QQP's noisy labels, reads such pairs as one
# ("What is the Gobi, and how do the average temperatures there compare to the ones in the
# Mojave Desert?" / "... Sonoran Desert?" 0.95 to 0.97, a review's finding). Of the 34
# rewordings above none has more than 5 content words; of the 317 near misses, 49 have more.
SWAP_CAUTION_MAX_CONTENT = 5
SWAPPED_WORD_IN_LONG = f"{SWAPPED_WORD} in a longer request"
UNDONE = "one undoes what the other does"
# How many words a thing on either side of a direction word can span ("a community college").
_PHRASE_WORDS = 3
_DETERMINERS = frozenset("a an the my your our their his her its this that these those some".split())
_DESTINATION_WORDS = frozenset({"to", "into", "onto", "toward", "towards", "->", "→"})
_STOPWORDS = frozenset(
    "a an the of and or is are was were be been do does did can could should would will shall may might "
    "must i me my we our you your it its this that these those what which who whom how why when where "
    "there here for with at by as if so s t about please".split()
)


# What the substitution check looks past: words that carry no content of their own.
_NOT_CONTENT = _STOPWORDS | _DETERMINERS | LIGHT_WORDS


@lru_cache(maxsize=1)
def _opposites() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    scale_pairs = [(high, low) for highs, lows in SCALES for high in highs for low in lows]
    for one, other in (*OPPOSITES, *scale_pairs):
        table.setdefault(one, set()).add(other)
        table.setdefault(other, set()).add(one)
    return {word: frozenset(others) for word, others in table.items()}


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
    """Two things one side names in one order around a direction word and the other side
    only in the opposite order; looked for from both sides, so the order of the two
    requests changes nothing."""
    pairs_a, pairs_b = _directed_pairs(a), _directed_pairs(b)
    for own, other in ((pairs_a, pairs_b), (pairs_b, pairs_a)):
        for x, y in sorted(own):
            if (y, x) in other and (x, y) not in other:
                return x, y
    return None


def _unit_change(only_a: list[str], only_b: list[str]) -> tuple[str, str] | None:
    """Another unit of one kind on each side; time units only next to numbers (_quantity_change)."""
    kinds = unit_kinds()
    for unit in only_a:
        for other in only_b:
            shared = (kinds.get(unit, frozenset()) & kinds.get(other, frozenset())) - {"time"}
            if unit != other and shared:
                return unit, other
    return None


def _quantity_change(ra: Reading, rb: Reading) -> tuple[str, str, str] | None:
    kinds = unit_kinds()
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


def _swapped_word(ra: Reading, rb: Reading) -> tuple[str, str] | None:
    """_substitution's swap, read in one order whichever side comes first."""
    first, second = sorted((ra, rb), key=lambda reading: reading.bases)
    return _substitution(first, second)


def _undone_by_prefix(one: str, other: str) -> bool:
    """install / uninstall, subscribe / unsubscribe: the verb undone, a veto."""
    return (one in (f"un{other}", f"non{other}") and not negative_by_prefix(one)) or (
        other in (f"un{one}", f"non{one}") and not negative_by_prefix(other)
    )


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
    if _undone_by_prefix(one, other):
        return one, other
    # Opposites are the polarity check's to judge, and an un- word against another word is
    # left to the model ("uninstall" / "remove").
    if other in _opposites().get(one, ()) or NEGATIVE_PREFIX.match(one) or NEGATIVE_PREFIX.match(other):
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
    only where the verifier is sure of it: a negation in reworded requests, or one word
    swapped), else neither."""

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
    if veto is not None:
        return Assessment(veto, None)
    # Read only for pairs no check above vetoed, in the order the checks always ran.
    swapped = _swapped_word(ra, rb)
    veto = _swap_veto(ra, swapped) or _action_veto(ra, rb)
    if veto is not None:
        return Assessment(veto, None)
    if flips.negation_only:
        return Assessment(None, REWORDED_NEGATION)  # _veto let it pass for the words changed
    if swapped:
        return Assessment(None, _named(SWAPPED_WORD, swapped))
    return Assessment(None, None)


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
    swaps = [
        (word, other)
        for word, other in _opposite_swaps(ra, rb, with_ordinals_a, with_ordinals_b)
        if not (word in ra.bound_words and other in rb.bound_words)
    ]
    negated = (ra.negations - rb.negations) % 2
    # A negation word cancels one opposite ("not safe" / "dangerous"); a negative prefix does
    # not, as it most often negates another word ("uncommit and keep my work" / "undo the
    # commit and discard changes"). Two opposites do not cancel each other ("a late check-out"
    # / "an early check-in").
    more_negated = ra if ra.negations > rb.negations else rb
    cancelling = negated == 1 and more_negated.negation_words > 0
    flipped = len(swaps) > int(cancelling)
    return _Flips(swaps if flipped else [], negated == 1 and not swaps, len(changed))


def _veto(ra: Reading, rb: Reading, flips: _Flips) -> str | None:
    """The first check up to the product variant that objects to the pair (the swap and the
    action checks follow: _swap_veto, _action_veto)."""
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
    return None


def _swap_veto(ra: Reading, swapped: tuple[str, str] | None) -> str | None:
    """Where one word swapped vetoes rather than cautions: a verb undone by its prefix, or a
    swap in a longer request (a swap has as many content words on each side)."""
    if swapped and _undone_by_prefix(*swapped):
        return _named(UNDONE, swapped)
    if swapped and len(_content(ra.bases)) > SWAP_CAUTION_MAX_CONTENT:
        return _named(SWAPPED_WORD_IN_LONG, swapped)
    return None


def _action_veto(ra: Reading, rb: Reading) -> str | None:
    """One side undoing what the other asks, or two things trading places."""
    undone = undone_by_first(ra.tokens, rb.tokens) or undone_by_first(rb.tokens, ra.tokens)
    if undone:
        return _named(UNDONE, undone)
    places = traded_places(ra.tokens, rb.tokens)
    if places:
        return f"places traded: {places[0]} / {places[1]}"
    return None


def _positions(own: Counter, other: Counter) -> Counter:
    """The positions one side names and the other does not. A bare "the last" counts only
    against another position from the end ("the second to last"): against "the third" it may
    be the same one ("the final film" of a trilogy)."""
    different = own - other
    if not any(key.endswith(FROM_THE_END_KEY) and key != LAST for key in other):
        del different[LAST]
    return different


def _named(kind: str, words: tuple[str, str]) -> str:
    """A check's reason: its kind (what evaluate counts by), then the two words."""
    return f"{kind}: {words[0]} / {words[1]}"


def _show(numbers: Counter) -> str:
    return ", ".join(sorted(numbers.elements()))


def vetoed(pairs: list[tuple[str, str]]) -> np.ndarray:
    """True where a check objects to the pair."""
    return checked(pairs)[0]


def checked(pairs: list[tuple[str, str]]) -> tuple[np.ndarray, list[str | None]]:
    """A mask of the vetoed pairs, and each pair's caution kind (None where none; a cautioned
    pair is served only at a high verifier score: pair_verifier.CAUTION_MIN_SCORES)."""
    verdicts = [assess(a, b) for a, b in pairs]
    return (
        np.array([v.veto is not None for v in verdicts], dtype=bool),
        [None if v.caution is None else reason_kind(v.caution) for v in verdicts],
    )


def reason_kind(reason: str) -> str:
    """The kind of a veto or caution (NEGATION, SWAPPED_WORD...), without its words."""
    return reason.split(":")[0]
