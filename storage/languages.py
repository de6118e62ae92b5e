"""Does an embedding model cover a text? Decided from its writing systems, then its language.

Each letter's Unicode name starts with its script (LATIN, CJK, HIRAGANA, HANGUL,
CYRILLIC...). A model declares languages; a text is covered only if every script
with a real share of its letters is a script of one of those languages. Script
analysis cannot tell English from French (both Latin), or Russian from Ukrainian (both
Cyrillic), so such text is then given to a language detector (lingua, n-gram models that
ship in its wheel): a text it reads, with confidence, as a language the model does not
declare is not covered, unless the model reads English and most of the text's words are
English.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import cache

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
# Scripts in which each character is a word or a syllable (Chinese characters, kana, Hangul):
# a few of them are a foreign word, not a foreign letter, and a model that does not declare
# them reads them as unknown pieces, so that "续订 subscription" and "取消 subscription"
# (renew / cancel) are one vector on all-MiniLM-L6-v2 (2 of 14 letters, under the share
# above). One such character a model's languages do not write leaves the text uncovered.
WORD_SCRIPTS = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL"})
# The Latin-script languages the detector chooses among. Fewer candidates, fewer confusions:
# short English requests ("python sort dict by key") must not read as another language.
DETECTED_LANGUAGES = ("en", "fr", "de", "es", "it", "pt", "nl", "pl", "tr", "id", "sv", "vi")
# Where that reading is unsure (under 0.5), the text is read again among every Latin-script
# language lingua knows: Danish, Finnish, Swahili, Czech, Hungarian, Romanian, Estonian,
# Croatian and Norwegian questions were read unsure among the twelve, and so kept semantic
# reuse on an English-only model (38 of 54 written in those languages, a review's finding).
# The English texts the twelve read unsure are mostly unit conversions ("100 kg to lbs");
# among all 49 languages none of them reads as another language at 0.4 or more.
WIDE_LATIN_LANGUAGES = (
    "af", "az", "bs", "ca", "cs", "cy", "da", "de", "en", "eo", "es", "et", "eu", "fi", "fr",
    "ga", "hr", "hu", "id", "is", "it", "la", "lg", "lt", "lv", "mi", "ms", "nb", "nl", "nn",
    "pl", "pt", "ro", "sk", "sl", "sn", "so", "sq", "st", "sv", "sw", "tl", "tn", "tr", "ts",
    "vi", "xh", "yo", "zu",
)  # fmt: skip
# Other scripts written by several languages: a text in one of them is read among them, so
# that Russian and Ukrainian (or Arabic and Persian) are told apart, in scopes and coverage.
SHARED_SCRIPT_LANGUAGES = {
    "CYRILLIC": ("be", "bg", "kk", "mk", "mn", "ru", "sr", "uk"),
    "ARABIC": ("ar", "fa", "ur"),
    "DEVANAGARI": ("hi", "mr"),
}
# A reading under this is unsure: the wide Latin reading is made, and a scope is not given by it.
SURE_READING = 0.5
# A detection switches semantic reuse off at a confidence, unless (where the model reads
# English) at least a share of the text's words are English (inference/english_words.py):
# units, brands and names mislead the detector on short English requests. Either tier
# suffices. `python -m benchmarks languages --json` measures the rule on 48,803 English
# texts (the workloads, the written families, 20,000 QQP questions) and 93 questions
# written in nine other Latin-script languages: the detector alone at 0.7
# switched 14 English texts off ("What is 180°C in Fahrenheit?" as German 0.80) and caught
# 79 foreign ones; these tiers switch none off and catch 87 (chosen on the first 50 of the
# questions; the 43 written after: 38 caught before, 42 now; all 93 in Title Case: 79 and
# 87). Under both, 14 English texts are switched off by their scripts (questions quoting
# Chinese, Japanese, Russian or Hindi: 7 before WORD_SCRIPTS, which adds those that quote a
# Chinese or Japanese word of a few characters, "How can we say 鸡精 in English?").
# The third tier applies in practice to the wide reading only (the twelve's readings under 0.5
# are replaced by it): 0.4 catches 31 of the 38 questions above, and no English text.
DETECTION_TIERS = ((0.7, 0.7), (0.5, 0.5), (0.4, 0.5))  # (least confidence, English share that overrules)
# A single word is not given to the detector (its script decides alone): "croissant" or
# "Passwort" alone says too little. Two-word requests are ("Passwort vergessen"): over 1,198
# English texts of one to three words the tiers switch none off, and they catch 60 of 70
# short requests written in nine other languages (`benchmarks languages`), none of which
# was caught when only texts of four words or more were read. English requests built on
# loanwords or places ("Zürich hotels", "crème brûlée recipe") get exact matching only: a
# miss each, the safe direction.
MIN_DETECTED_WORDS = 2

Detection = tuple[str, float] | None  # (ISO 639-1 code, confidence) of a text read by a detector


# Width forms name their script second ("HALFWIDTH KATAKANA LETTER KI"); the long-vowel
# mark "ー" is named for both kana.
_WIDTH_FORMS = ("HALFWIDTH", "FULLWIDTH")
_SCRIPT_ALIASES = {"KATAKANA-HIRAGANA": "KATAKANA"}


def letter_scripts(text: str) -> Counter:
    counts: Counter = Counter()
    for char in text:
        if char.isalpha():
            counts[_script(unicodedata.name(char, ""))] += 1
    return counts


def _script(name: str) -> str:
    """A letter's script from its Unicode name: its first word, past a width form."""
    words = name.split(" ")
    if not name:
        return "UNKNOWN"
    script = words[1] if words[0] in _WIDTH_FORMS and len(words) > 1 else words[0]
    return _SCRIPT_ALIASES.get(script, script)


def uncovered_scripts(text: str, languages: tuple[str, ...]) -> list[str]:
    """Scripts that none of `languages` is written in, with a real share of the text's
    letters or (WORD_SCRIPTS) any character at all."""
    counts = letter_scripts(text)
    total = sum(counts.values())
    if not total:
        return []
    covered = set().union(*(SCRIPTS_BY_LANGUAGE.get(lang, set()) for lang in languages))
    return sorted(
        script
        for script, n in counts.items()
        if script not in covered and (script in WORD_SCRIPTS or n / total >= MIN_SCRIPT_SHARE)
    )


@cache
def _detector(languages: tuple[str, ...]):
    from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

    candidates = [Language.from_iso_code_639_1(getattr(IsoCode639_1, c.upper())) for c in languages]
    # Preloaded: lingua loads a language's models on the first text it reads otherwise,
    # inside whatever that text's caller was timing (load_detector).
    return LanguageDetectorBuilder.from_languages(*candidates).with_preloaded_language_models().build()


def load_detector() -> None:
    """Load every detector a reading can need, their models in memory (about 10 s and 1 GB),
    so that a timed replay does not pay for them on its first Latin, unsure or Cyrillic text."""
    for languages in (DETECTED_LANGUAGES, WIDE_LATIN_LANGUAGES, *SHARED_SCRIPT_LANGUAGES.values()):
        _detector(languages)


def detect_languages(texts: Sequence[str]) -> list[Detection]:
    """The most likely language of each text of two words or more written mostly in Latin
    letters or in a script several languages share (None for other texts), one parallel pass
    a detector. Detectors load on first use: the twelve in about 7 s and 300 MB; the wide
    reading, needed once any text reads unsure, about 700 MB more (peak RSS 1,137 MB against
    457 MB over 48,803 English texts, whose detection took 23 s instead of 17 s)."""
    found: list[Detection] = [None] * len(texts)
    by_script: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        script = _detectable_script(text)
        if script is not None:
            by_script.setdefault(script, []).append(i)
    latin = by_script.pop("LATIN", [])
    _read(texts, latin, DETECTED_LANGUAGES, found)
    unsure = [i for i in latin if found[i] is None or found[i][1] < SURE_READING]
    _read(texts, unsure, WIDE_LATIN_LANGUAGES, found)
    for script, rows in by_script.items():
        _read(texts, rows, SHARED_SCRIPT_LANGUAGES[script], found)
    return found


def _read(texts: Sequence[str], rows: list[int], languages: tuple[str, ...], found: list[Detection]) -> None:
    """Each row's most likely language among `languages`, written into `found`."""
    if not rows:
        return
    values = _detector(languages).compute_language_confidence_values_in_parallel([texts[i] for i in rows])
    for i, ranked in zip(rows, values, strict=True):
        if ranked:
            found[i] = (ranked[0].language.iso_code_639_1.name.lower(), float(ranked[0].value))


def _detectable_script(text: str) -> str | None:
    """The script a detector reads the text in, where there is more than one word to read:
    Latin where nearly all its letters are Latin; a script several languages share where
    most are of it ("Как изменить пароль на iPhone?": a name in Latin letters must not keep
    Russian and Bulgarian apart from the detector)."""
    counts = letter_scripts(text)
    total = sum(counts.values())
    if not total or _words_with_letters(text) < MIN_DETECTED_WORDS:
        return None
    script, letters = counts.most_common(1)[0]
    if script == "LATIN":
        return script if letters / total >= 1 - MIN_SCRIPT_SHARE else None
    return script if script in SHARED_SCRIPT_LANGUAGES and letters / total > 0.5 else None


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
# detector is sure (SURE_READING); otherwise it is unplaced (its script's name).
SCOPE_ENGLISH_SHARE = 0.5
# What scope_language gives a text in a script several languages write that it could not
# place: such texts get exact matching only where languages are kept apart (a shared scope
# served Spanish "Precio" the answer to Italian "Prezzo").
UNPLACED = frozenset({"latin", *(script.lower() for script in SHARED_SCRIPT_LANGUAGES)})


def is_unplaced(scope_label: str) -> bool:
    """Whether scope_language could not place the text: a script several languages write,
    or several scripts with no sure reading ("cjk+latin")."""
    return scope_label in UNPLACED or "+" in scope_label


def unplaced_label(text: str) -> str | None:
    """The label scope_language gives the text where no reading places it (UNPLACED: its
    script, or its scripts joined), or None where its scripts place it whatever is read
    (Chinese, Japanese, Korean, Greek...) or it has no letters. Read from the scripts only,
    without the detector: a vector stored under this label is one an older coverage rule
    scoped by script, which no request searches now (such texts get exact matching only)."""
    if text.isascii():  # most texts: ASCII letters are all Latin
        return "latin" if any(char.isalpha() for char in text) else None
    counts = letter_scripts(text)
    total = sum(counts.values())
    if not total:
        return None
    scripts = _real_scripts(counts, total)
    label = "+".join(script.lower() for script in scripts)
    return label if is_unplaced(label) and _place_by_script(scripts) is None else None


def _real_scripts(counts: Counter, total: int) -> list[str]:
    """The scripts with a real share of a text's letters."""
    return sorted(script for script, n in counts.items() if n / total >= MIN_SCRIPT_SHARE)


def _place_by_script(scripts: list[str]) -> str | None:
    """The language that alone writes these scripts, however a text mixes them: Japanese
    mixes kana with Chinese characters, Korean may."""
    if {"HIRAGANA", "KATAKANA"} & set(scripts):
        return "ja"
    if "HANGUL" in scripts:
        return "ko"
    return "zh" if scripts == ["CJK"] else None


def scope_language(text: str, detected: Detection = None) -> str:
    """The language a text is kept to in a multilingual model's semantic scope, so that a
    request is never served the answer to its wording in another language: its writing
    systems where only one language writes them ("zh", "ja", "ko", "greek"), else its
    detected language ("en", "fr", "uk"; `detected` from detect_languages), else its script
    (UNPLACED: "latin", "cyrillic"). Texts with no letters share "none"."""
    counts = letter_scripts(text)
    total = sum(counts.values())
    if not total:
        return "none"
    scripts = _real_scripts(counts, total)
    sure = detected[0] if detected is not None and detected[1] >= SURE_READING else None
    if scripts != ["LATIN"]:
        return _place_by_script(scripts) or sure or "+".join(script.lower() for script in scripts)
    from inference.english_words import english_word_share

    if english_word_share(text) >= SCOPE_ENGLISH_SHARE:
        return "en"
    return sure or "latin"
