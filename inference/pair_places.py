"""Two requests in the same words, with two things trading places, for pair_conflicts.

"Are PS4 games playable on the PS5?" / "Are PS5 games playable on the PS4?", "roll an
IRA into a 401k" / "roll a 401k into an IRA", "when my dog has bitten a neighbour's kid"
/ "when a neighbour's dog has bitten my kid": every word stands on both sides, so no check
that compares the words one side has and the other lacks sees a difference, and the
learned verifier can be sure they match (0.96 for the PS4 / PS5 pair). The direction check
reads only swaps around a direction word (to, from, than); this one reads any.

A swap counts only when the words between the two runs stay in place. Moving one part
of a request past the rest ("carbon atomic number" / "atomic number of carbon", "us
tablespoon ml" / "tablespoon ml us") leaves nothing between, and keeps the meaning. Two
things joined by a word that orders nothing ("cats and dogs" / "dogs and cats") are not
a swap either, nor are two things that share their last words ("British English and
American English" / "American English and British English").

Measured on the labelled pairs of the training families, the first adversarial workload
and the development holdouts (1, 2, 5, 6 and 7): it objects to 171 near misses that no other
check vetoes, and to no pair of one group. Of QQP's 80,854 pairs it objects to 30: 26
labelled different and 4 labelled duplicates (a relation said both ways, "India's
relationship with Bangladesh"; a phrase moved, "education during the occupation like in
Singapore"), which cost a miss each.
"""

from __future__ import annotations

from collections import Counter

# A middle that ends in one of these (articles aside) joins two things without ordering them.
_UNORDERED_JOINS = frozenset({"and", "or", "nor", "vs", "versus", "&"})
_ARTICLES = frozenset({"a", "an", "the"})


def traded_places(tokens_a: tuple[str, ...], tokens_b: tuple[str, ...]) -> tuple[str, str] | None:
    """The two runs of words that trade places, where `tokens_b` is `tokens_a` with two runs
    exchanged around a middle that stays; None where the requests differ in any other way."""
    if tokens_a == tokens_b or len(tokens_a) != len(tokens_b) or Counter(tokens_a) != Counter(tokens_b):
        return None
    differing = [i for i, (x, y) in enumerate(zip(tokens_a, tokens_b, strict=True)) if x != y]
    first, last = differing[0], differing[-1] + 1
    window_a, window_b = tokens_a[first:last], tokens_b[first:last]
    size = len(window_a)
    for lead in range(1, size - 1):
        for tail in range(1, size - lead):
            leading, middle, trailing = window_a[:lead], window_a[lead : size - tail], window_a[size - tail :]
            if window_b == trailing + middle + leading and not _unordered(middle, tokens_a[last:]):
                return " ".join(leading), " ".join(trailing)
    return None


def _unordered(middle: tuple[str, ...], following: tuple[str, ...]) -> bool:
    """A middle that joins two things without ordering them: "cats and dogs", and also
    "match fixing and spot fixing", whose middle repeats what follows the second thing."""
    words = [word for word in middle if word not in _ARTICLES]
    if not words or words[-1] not in _UNORDERED_JOINS:
        return False
    repeated = tuple(words[:-1])
    return following[: len(repeated)] == repeated
