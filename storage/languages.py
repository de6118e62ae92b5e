"""Does an embedding model cover a text? Decided from its writing systems, then its language.

Each letter's Unicode name starts with its script (LATIN, CJK, HIRAGANA, HANGUL,
CYRILLIC...). A model declares languages; a text is covered only if every script
with a real share of its letters is a script of one of those languages. Script
analysis cannot tell English from French (both Latin), so Latin-script text is then
given to a language detector (lingua, n-gram models that ship in its wheel): a text
it reads, with confidence, as a language the model does not declare is not covered,
unless the model reads English and most of the text's words are English.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

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
# The Latin-script languages the detector chooses among. Fewer candidates, fewer confusions:
# short English requests ("python sort dict by key") must not read as another language.
DETECTED_LANGUAGES = ("en", "fr", "de", "es", "it", "pt", "nl", "pl", "tr", "id", "sv", "vi")
# A detection switches semantic reuse off at a confidence, unless (where the model reads
# English) at least a share of the text's words are English (inference/english_words.py):
# units, brands and names mislead the detector on short English requests. Either tier
# suffices. `python -m benchmarks languages --json` measures the rule on 48,803 English
# texts (the workloads, the written families, 20,000 QQP questions) and 93 questions
# written in nine other Latin-script languages: the detector alone at 0.7
# switched 14 English texts off ("What is 180°C in Fahrenheit?" as German 0.80) and caught
# 79 foreign ones; these tiers switch none off and catch 87 (chosen on the first 50 of the
# questions; the 43 written after: 38 caught before, 42 now; all 93 in Title Case: 79 and
# 87). Under both, 7 English texts are switched off by their scripts (questions quoting
# Chinese, Japanese or Hindi).
DETECTION_TIERS = ((0.7, 0.7), (0.5, 0.5))  # (least confidence, English share that overrules)
# A single word is not given to the detector (its script decides alone): "croissant" or
# "Passwort" alone says too little. Two-word requests are ("Passwort vergessen"): over 1,198
# English texts of one to three words the tiers switch none off, and they catch 60 of 70
# short requests written in nine other languages (`benchmarks languages`), none of which
# was caught when only texts of four words or more were read. English requests built on
# loanwords or places ("Zürich hotels", "crème brûlée recipe") get exact matching only: a
# miss each, the safe direction.
MIN_DETECTED_WORDS = 2

Detection = tuple[str, float] | None  # (ISO 639-1 code, confidence) of a Latin-script text


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


@lru_cache(maxsize=1)
def _detector():
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    candidates = [Language.from_iso_code_639_1(getattr(IsoCode639_1, c.upper())) for c in DETECTED_LANGUAGES]
    return LanguageDetectorBuilder.from_languages(*candidates).build()


def load_detector() -> None:
    """Load the detector now (about 7 s), so that a timed replay does not pay for it."""
    _detector()


def detect_languages(texts: Sequence[str]) -> list[Detection]:
    """The most likely language of each mostly-Latin text (None for other texts), in one
    parallel pass; the detector loads on first use (about 7 s, 300 MB)."""
    latin = [i for i, text in enumerate(texts) if _mostly_latin(text)]
    found: list[Detection] = [None] * len(texts)
    if not latin:
        return found
    values = _detector().compute_language_confidence_values_in_parallel([texts[i] for i in latin])
    for i, ranked in zip(latin, values, strict=True):
        if ranked:
            found[i] = (ranked[0].language.iso_code_639_1.name.lower(), float(ranked[0].value))
    return found


def _mostly_latin(text: str) -> bool:
    """Latin letters, and more than one word for a detection to mean something."""
    counts = letter_scripts(text)
    total = sum(counts.values())
    latin = bool(total) and counts.get("LATIN", 0) / total >= 1 - MIN_SCRIPT_SHARE
    return latin and _words_with_letters(text) >= MIN_DETECTED_WORDS


def _words_with_letters(text: str) -> int:
    """Words as the detector reads them: "Ubuntu 24.04" is one, its number says no language."""
    return sum(any(char.isalpha() for char in word) for word in text.split())


def coverage_gap(
    text: str, model_name: str, languages: tuple[str, ...], detected: Detection = None
) -> str | None:
    """None if the model covers the text, else the reason semantic reuse is off for it.
    `detected` is the text's language from detect_languages (None: not detected)."""
    declared = ", ".join(languages) or "no declared language"
    missing = uncovered_scripts(text, languages)
    if missing:
        return (
            f"text in {', '.join(s.title() for s in missing)} script; {model_name} covers "
            f"{declared}: exact matching only"
        )
    if detected is None or detected[0] in languages or detected[1] < min(c for c, _ in DETECTION_TIERS):
        return None
    from inference.english_words import english_word_share

    english = english_word_share(text) if "en" in languages else 0.0
    if all(detected[1] < confidence or english >= share for confidence, share in DETECTION_TIERS):
        return None
    return (
        f"text reads as {detected[0]} (confidence {detected[1]:.2f}, {english:.0%} of its words "
        f"English); {model_name} covers {declared}: exact matching only"
    )


# Where a multilingual model's scope is kept to one language, a Latin-script text is taken
# for English when this share of its words are English (inference/english_words.py), as
# coverage_gap's tiers overrule a detection; otherwise for the detected language where the
# detector is at least this sure; otherwise it is put with the Latin-script texts nothing
# could place.
SCOPE_ENGLISH_SHARE = 0.5
SCOPE_MIN_CONFIDENCE = 0.5


def scope_language(text: str, detected: Detection = None) -> str:
    """The language a text is kept to in a multilingual model's semantic scope, so that a
    request is never served the answer to its wording in another language: its writing
    systems where they are not Latin ("zh", "ja", "ko", "cyrillic"), else its detected
    language ("en", "fr"; `detected` from detect_languages), else "latin". Texts with no
    letters share "none". A misplaced text only misses its own language's paraphrases."""
    counts = letter_scripts(text)
    total = sum(counts.values())
    if not total:
        return "none"
    scripts = sorted(script for script, n in counts.items() if n / total >= MIN_SCRIPT_SHARE)
    if scripts != ["LATIN"]:
        # Japanese mixes kana with Chinese characters, Korean may: one place each however
        # a text mixes them.
        if {"HIRAGANA", "KATAKANA"} & set(scripts):
            return "ja"
        if "HANGUL" in scripts:
            return "ko"
        return "zh" if scripts == ["CJK"] else "+".join(script.lower() for script in scripts)
    from inference.english_words import english_word_share

    if english_word_share(text) >= SCOPE_ENGLISH_SHARE:
        return "en"
    if detected is not None and detected[1] >= SCOPE_MIN_CONFIDENCE:
        return detected[0]
    return "latin"
