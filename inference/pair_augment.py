"""Near-miss pairs made from real questions by one meaning-changing edit.

A verifier trained on paraphrase data alone learns that small wording changes
are harmless; these pairs teach the opposite where the change matters: an
antonym, a negation, a swapped direction, another entity, an added qualifier.
Each edit keeps the rest of the question as it was, so only the edit can
explain the label. A surface-only edit (case, trailing punctuation) makes a
positive pair, so the verifier does not learn "any edit means different".
"""

from __future__ import annotations

import random
import re
from collections import Counter

# Content-word swaps, in the surface forms a swap needs. Not lexicon.OPPOSITES: that list
# holds base forms for the checks, and pairs such as in / out or on / off, which read
# only next to the same word there, would garble most training questions here.
ANTONYMS = [
    ("increase", "decrease"),
    ("more", "less"),
    ("over", "under"),
    ("above", "below"),
    ("before", "after"),
    ("buy", "sell"),
    ("import", "export"),
    ("upload", "download"),
    ("enable", "disable"),
    ("add", "remove"),
    ("maximum", "minimum"),
    ("first", "last"),
    ("cheap", "expensive"),
    ("best", "worst"),
    ("start", "stop"),
    ("open", "close"),
    ("win", "lose"),
    ("positive", "negative"),
    ("hot", "cold"),
    ("easy", "hard"),
    ("good", "bad"),
    ("legal", "illegal"),
    ("possible", "impossible"),
    ("men", "women"),
    ("male", "female"),
    ("boys", "girls"),
    ("north", "south"),
    ("east", "west"),
    ("early", "late"),
    ("fast", "slow"),
    ("long", "short"),
    ("high", "low"),
    ("higher", "lower"),
    ("bigger", "smaller"),
    ("larger", "smaller"),
    ("inside", "outside"),
    ("send", "receive"),
    ("private", "public"),
    ("online", "offline"),
    ("rich", "poor"),
    ("true", "false"),
    ("love", "hate"),
    ("accept", "reject"),
    ("always", "never"),
    ("strong", "weak"),
    ("safe", "dangerous"),
    ("healthy", "unhealthy"),
    ("happy", "sad"),
    ("old", "new"),
    ("young", "old"),
    ("win", "lose"),
    ("pros", "cons"),
    ("input", "output"),
    ("all", "any"),
    ("most", "least"),
    ("with", "without"),
    ("can", "cannot"),
]
QUALIFIERS = [
    " for kids",
    " for adults",
    " for beginners",
    " in winter",
    " at night",
    " without a degree",
    " in India",
    " in the US",
    " for free",
    " online",
    " Pro",
    " Ultra",
    " as a student",
]
AUXILIARIES = re.compile(r"\b(is|are|was|were|can|could|should|would|will|do|does|did)\b", re.IGNORECASE)
DIRECTION = re.compile(r"\b(from|between) (\w+) (to|and) (\w+)\b")
CAPITALISED = re.compile(r"(?<!^)(?<![.?!] )\b([A-Z][a-z]{2,})\b")


def _antonym(text: str, rng: random.Random) -> str | None:
    words = re.findall(r"\b\w+\b", text.lower())
    options = [(a, b) for a, b in ANTONYMS if a in words] + [(b, a) for a, b in ANTONYMS if b in words]
    if not options:
        return None
    word, other = rng.choice(options)
    return re.sub(rf"\b{word}\b", other, text, count=1, flags=re.IGNORECASE)


def _negation(text: str, rng: random.Random) -> str | None:
    match = AUXILIARIES.search(text)
    if not match or " not " in text.lower() or "n't" in text.lower():
        return None
    return text[: match.end()] + " not" + text[match.end() :]


def _direction(text: str, rng: random.Random) -> str | None:
    match = DIRECTION.search(text)
    if not match or match.group(2).lower() == match.group(4).lower():
        return None
    return (
        text[: match.start()]
        + f"{match.group(1)} {match.group(4)} {match.group(3)} {match.group(2)}"
        + text[match.end() :]
    )


def _entity(text: str, rng: random.Random, pool: list[str]) -> str | None:
    names = CAPITALISED.findall(text)
    if not names:
        return None
    name = rng.choice(names)
    other = rng.choice(pool)
    if other == name:
        return None
    return re.sub(rf"\b{name}\b", other, text, count=1)


def _qualifier(text: str, rng: random.Random) -> str | None:
    stripped = text.rstrip("?.! ")
    if not stripped:
        return None
    return stripped + rng.choice(QUALIFIERS) + text[len(stripped) :]


def _surface(text: str, rng: random.Random) -> str:
    edited = text.lower() if rng.random() < 0.5 else text.upper()[:1] + text[1:]
    return edited.rstrip("?") if text.endswith("?") else edited + "?"


def perturbed_pairs(questions: list[str], count: int, seed: int = 0) -> list[dict]:
    """`count` pairs: about four in five near misses (label False), one in five surface variants."""
    rng = random.Random(seed)
    pool = sorted({n for q in questions[:20000] for n in CAPITALISED.findall(q)})
    edits = [_antonym, _negation, _direction, _qualifier, lambda t, r: _entity(t, r, pool)]
    pairs: list[dict] = []
    attempts = 0
    while len(pairs) < count and attempts < count * 20:
        attempts += 1
        question = rng.choice(questions)
        if rng.random() < 0.2:
            pairs.append({"a": question, "b": _surface(question, rng), "duplicate": True})
            continue
        edited = rng.choice(edits)(question, rng)
        if edited and edited != question:
            pairs.append({"a": question, "b": edited, "duplicate": False})
    return pairs


_WORD = re.compile(r"\b[a-zA-Z]{3,}\b")


def sibling_swapped_pairs(
    duplicates: list[dict], count: int, vocabulary: set[str], seed: int = 0
) -> list[dict]:
    """`count` near misses made from paraphrase pairs: a noun both requests name is swapped,
    in one of them, for another thing of the same kind (brake -> clutch, Paris -> Kabul).

    The two requests stay worded differently, so the only way to tell them apart is to
    check that each names the same things: what a cross-encoder trained on paraphrases
    alone skips. Siblings come from WordNet's noun hierarchy, kept to `vocabulary` so the
    swapped word is a common one.
    """
    from inference.wordnet import noun_siblings, parts_of_speech

    def only_a_noun(word: str) -> bool:  # "can", "still", "date" are other things too
        return parts_of_speech(word) == {"n"}

    rng = random.Random(seed)
    pairs: list[dict] = []
    attempts = 0
    while duplicates and len(pairs) < count and attempts < count * 20:
        attempts += 1
        pair = rng.choice(duplicates)
        one, other = (pair["a"], pair["b"]) if rng.random() < 0.5 else (pair["b"], pair["a"])
        shared = sorted({w.lower() for w in _WORD.findall(one)} & {w.lower() for w in _WORD.findall(other)})
        options = [
            (word, [s for s in noun_siblings(word) if s in vocabulary and only_a_noun(s)])
            for word in shared
            if word in vocabulary and only_a_noun(word)
        ]
        options = [(word, siblings) for word, siblings in options if siblings]
        if not options:
            continue
        word, siblings = rng.choice(options)
        sibling = rng.choice(siblings)
        swapped = re.sub(
            rf"\b{word}\b",
            lambda m, s=sibling: s.capitalize() if m.group(0)[0].isupper() else s,
            other,
            count=1,
            flags=re.IGNORECASE,
        )
        if swapped != other:
            pairs.append({"a": one, "b": swapped, "duplicate": False})
    return pairs


def common_words(texts: list[str], min_count: int = 20) -> set[str]:
    """Lower-cased words written at least `min_count` times in `texts`."""
    counts = Counter(word.lower() for text in texts for word in _WORD.findall(text))
    return {word for word, count in counts.items() if count >= min_count}
