"""Two requests in the same words, with two things trading places, for pair_conflicts.

"Are PS4 games playable on the PS5?" / "Are PS5 games playable on the PS4?", "roll an
IRA into a 401k" / "roll a 401k into an IRA", "How many times has Nadal beaten Federer?"
/ "... has Federer beaten Nadal?": every word stands on both sides, so no check that
compares the words one side has and the other lacks sees a difference, and the learned
verifier can be sure they match (0.96 for the PS4 / PS5 pair). The direction check reads
swaps around a direction word only (to, from, than, into, over, ...); this one reads a
swap around any words, as long as nothing else differs.

A swap counts only when words stay between the two runs. Moving one part of a request
past the rest ("us tablespoon ml" / "tablespoon ml us", "one on one tutoring cost" /
"tutoring cost one on one") leaves nothing between, and keeps the meaning. Two things
joined by a word that orders nothing are no swap either: "cats and dogs", "New York vs
New Jersey", "British English or American English", "7 times 8", and two things with only
articles between, where the tokens drop the join ("the cat & the dog"). Known misses,
each a veto of a rewording (a miss, not a wrong answer): keywords in another order around
one word ("cheap hotels nyc" / "nyc hotels cheap", read like "Nadal beat Federer"), lists
of three, a relation that holds both ways ("India's relationship with Bangladesh", "mix
bleach with vinegar"; "with" is no join, since "replace butter with oil" is a near miss).

Measured on the labelled pairs of the training families, the first adversarial workload
and the development holdouts (1, 2, 5, 6 and 7): it objects to 171 near misses that no other
check vetoes, and to no pair of one group. Of QQP's 80,854 pairs it objects to 30: 26
labelled different and 4 labelled duplicates ("India's relationship with Bangladesh";
"education during the occupation like in Singapore", a phrase moved within a longer
sentence).
"""

from __future__ import annotations

from collections import Counter

# Words that join two things without ordering them ("&" and "+" never reach here: the
# tokens drop them, which leaves only articles between).
_UNORDERED_JOINS = frozenset({"and", "or", "nor", "vs", "versus", "v", "plus", "times"})
_ARTICLES = frozenset({"a", "an", "the"})
# A run longer than this is shortened in the reason (a swapped pair of long passages).
_SHOWN_WORDS = 6


def traded_places(tokens_a: tuple[str, ...], tokens_b: tuple[str, ...]) -> tuple[str, str] | None:
    """The words where two runs trade places (each run from its first differing word), where
    `tokens_b` is `tokens_a` with two runs exchanged around a middle that stays and does
    not merely join them; None where the requests differ in any other way."""
    if tokens_a == tokens_b or len(tokens_a) != len(tokens_b) or Counter(tokens_a) != Counter(tokens_b):
        return None
    differing = [i for i, (x, y) in enumerate(zip(tokens_a, tokens_b, strict=True)) if x != y]
    first, last = differing[0], differing[-1] + 1
    window_a, window_b = tokens_a[first:last], tokens_b[first:last]
    size = len(window_a)
    # window_b ends with the leading run and starts with the trailing one; only lengths where
    # both line up are tried, so a long pair costs about its length, not its cube.
    leads = [
        n
        for n in range(1, size - 1)
        if window_b[size - n] == window_a[0] and window_b[size - n :] == window_a[:n]
    ]
    tails = [
        n
        for n in range(1, size - 1)
        if window_a[size - n] == window_b[0] and window_a[size - n :] == window_b[:n]
    ]
    for lead in leads:
        for tail in tails:
            if lead + tail >= size:
                break
            # The runs line up already; the middle must stand in both at once.
            middle = window_a[lead : size - tail]
            if window_b[tail : size - lead] == middle and not _joins_only(
                middle, tokens_a[:first], tokens_a[last:]
            ):
                return _shown(window_a[:lead]), _shown(window_a[size - tail :])
    return None


def _joins_only(middle: tuple[str, ...], before: tuple[str, ...], after: tuple[str, ...]) -> bool:
    """Whether the middle only joins the two things: a join word, with around it the words
    both things share, which stand outside the window ("New York and New Jersey": the
    window starts after "New", so the middle is "and new"; "match fixing and spot fixing":
    the middle is "fixing and")."""
    words = _without_articles(middle)
    if not words:
        return True
    before, after = _without_articles(before), _without_articles(after)
    for position, word in enumerate(words):
        if word in _UNORDERED_JOINS:
            shared_end, shared_start = words[:position], words[position + 1 :]
            if (
                after[: len(shared_end)] == shared_end
                and before[len(before) - len(shared_start) :] == shared_start
            ):
                return True
    return False


def _without_articles(words: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(word for word in words if word not in _ARTICLES)


def _shown(run: tuple[str, ...]) -> str:
    return " ".join(run[:_SHOWN_WORDS]) + (" ..." if len(run) > _SHOWN_WORDS else "")
