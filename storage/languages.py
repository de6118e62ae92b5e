"""Does an embedding model cover a text? Decided from the text's writing systems.

Each letter's Unicode name starts with its script (LATIN, CJK, HIRAGANA, HANGUL,
CYRILLIC...). A model declares languages; a text is covered only if every script
with a real share of its letters is a script of one of those languages. Script
analysis cannot tell English from French (both Latin): for Latin text it trusts
the model's declaration, and says so in the README.
"""

from __future__ import annotations

import unicodedata
from collections import Counter

SCRIPTS_BY_LANGUAGE = {
    "en": {"LATIN"},
    "fr": {"LATIN"},
    "de": {"LATIN"},
    "es": {"LATIN"},
    "it": {"LATIN"},
    "pt": {"LATIN"},
    "nl": {"LATIN"},
    "pl": {"LATIN"},
    "tr": {"LATIN"},
    "vi": {"LATIN"},
    "zh": {"CJK"},
    "ja": {"CJK", "HIRAGANA", "KATAKANA"},
    "ko": {"HANGUL", "CJK"},
    "ru": {"CYRILLIC"},
    "uk": {"CYRILLIC"},
    "ar": {"ARABIC"},
    "he": {"HEBREW"},
    "el": {"GREEK"},
    "hi": {"DEVANAGARI"},
    "th": {"THAI"},
}
# A few foreign letters (a name, a symbol) do not make a text foreign.
MIN_SCRIPT_SHARE = 0.2


def letter_scripts(text: str) -> Counter:
    counts: Counter = Counter()
    for char in text:
        if char.isalpha():
            name = unicodedata.name(char, "")
            counts[name.split(" ")[0] if name else "UNKNOWN"] += 1
    return counts


def uncovered_scripts(text: str, languages: tuple[str, ...]) -> list[str]:
    """Scripts with a real share of the text's letters that none of `languages` is written in."""
    counts = letter_scripts(text)
    total = sum(counts.values())
    if not total:
        return []
    covered = set().union(*(SCRIPTS_BY_LANGUAGE.get(lang, set()) for lang in languages))
    return sorted(
        script for script, n in counts.items() if n / total >= MIN_SCRIPT_SHARE and script not in covered
    )


def coverage_gap(text: str, model_name: str, languages: tuple[str, ...]) -> str | None:
    """None if the model covers the text, else the reason semantic reuse is off for it."""
    missing = uncovered_scripts(text, languages)
    if not missing:
        return None
    return (
        f"text in {', '.join(s.title() for s in missing)} script; {model_name} covers "
        f"{', '.join(languages) or 'no declared language'}: exact matching only"
    )
