"""Which requests get exact matching only: text the semantic path's models cannot read.

Semantic reuse switches itself off for a text its embedding model does not cover
(script or language: storage/languages.py), for a text longer than that model reads
(storage/input_length.py) and, where answers are verified, for a text the pair verifier
does not cover; exact matching still applies to all of it. The pipeline's keying decides
with `semantic_skip_reasons`; `evaluate` and `calibrate` replay with the same rule, so a
measurement never counts a semantic hit the pipeline would not make.
"""

from __future__ import annotations

import dataclasses

from storage.config import NamespaceSettings, Settings
from storage.input_length import cut_short, reading_limit
from storage.keys import normalized_text
from storage.languages import Detection, coverage_gap, detect_languages, is_unplaced, scope_language

SEMANTIC_OFF = "semantic reuse is off for this namespace"
# Bump when the rule that decides exact matching only changes (scripts, the detector's
# tiers, English words, lengths): entries recorded exact-only under an older rule
# (storage/vector_backfill.py) are then read again.
# 2: the wide Latin reading, shared scripts read, unplaced texts; 3: one character of a
# script whose characters are words (storage.languages.WORD_SCRIPTS), texts read as keyed (NFC).
COVERAGE_RULE_VERSION = 3


def semantic_skip_reasons(
    texts: list[str], namespaces: list[NamespaceSettings], settings: Settings
) -> list[str | None]:
    """For each text under its namespace, why semantic reuse is off for it (None: it is on)."""
    return semantic_decisions(texts, namespaces, settings)[0]


def semantic_decisions(
    texts: list[str], namespaces: list[NamespaceSettings], settings: Settings
) -> tuple[list[str | None], list[str | None]]:
    """For each text under its namespace: why semantic reuse is off for it (None: it is on),
    and the language its semantic scope holds (None: the scope holds none, see
    language_scoped), from one reading of the texts. Each text is read as it is keyed (NFC):
    the same request typed with combining marks ("café" as "cafe" and U+0301) is one key, and
    must get one decision (a letter and its combining accent counted apart, or read by the
    detector as another language, decided otherwise)."""
    texts = [normalized_text(text) for text in texts]
    # Languages only where semantic reuse could apply (the detector costs ~7 s to load).
    detected = detect_languages(
        [text if ns.semantic.enabled else "" for text, ns in zip(texts, namespaces, strict=True)]
    )
    too_long = _cut_short_by_embedding_model(texts, namespaces, settings)
    places = [
        scope_language(text, language) if language_scoped(namespace, settings) else None
        for text, namespace, language in zip(texts, namespaces, detected, strict=True)
    ]
    reasons = _reasons(texts, namespaces, settings, detected, too_long, places)
    languages = [place if reason is None else None for place, reason in zip(places, reasons, strict=True)]
    return reasons, languages


def coverage_signature(namespace: NamespaceSettings, settings: Settings) -> str:
    """What decides which of a namespace's texts get exact matching only: the rule's version,
    the embedding model with its declared languages, and the verifier's languages where it
    verifies. A text recorded exact-only under another signature is decided again."""
    semantic = namespace.semantic
    model = settings.embedding_model(semantic.embedding_model)
    verifier = ",".join(settings.verifier_languages) if semantic.verify else "off"
    return f"rule {COVERAGE_RULE_VERSION}; {model.name}: {','.join(model.languages)}; verifier: {verifier}"


def covered_check_signature(namespace: NamespaceSettings, settings: Settings) -> str:
    """What decides which of a namespace's stored texts keep their vectors: its coverage
    signature and whether it keeps languages apart (a text nothing places is exact-only then)."""
    apart = "languages apart" if language_scoped(namespace, settings) else "languages together"
    return f"{coverage_signature(namespace, settings)}; {apart}"


def as_keyed(
    namespace: NamespaceSettings, embedding_model: str, verify: bool, language_in_scope: bool | None = None
) -> NamespaceSettings:
    """The namespace with semantic reuse on as a partition was keyed with it (its embedding
    model, verification and, where given, the language in its scope)."""
    changes = {"enabled": True, "embedding_model": embedding_model, "verify": verify}
    if language_in_scope is not None:
        changes["cross_language"] = not language_in_scope
    return dataclasses.replace(namespace, semantic=dataclasses.replace(namespace.semantic, **changes))


def reachable_languages(namespace: NamespaceSettings, settings: Settings) -> tuple[str, ...]:
    """The languages whose text can reach the namespace's semantic path: its embedding
    model's, and of those only the verifier's where it verifies (other text gets exact
    matching only)."""
    semantic = namespace.semantic
    languages = settings.embedding_model(semantic.embedding_model).languages
    if semantic.verify:
        languages = tuple(lang for lang in languages if lang in settings.verifier_languages)
    return languages


def language_scoped(namespace: NamespaceSettings, settings: Settings) -> bool:
    """Whether each text's language is part of the namespace's semantic scope: where its
    embedding model reads several languages and the namespace has not chosen to reuse
    answers across languages (semantic.cross_language). Verification does not enter: the
    scope stays the same when it is turned on or off, so stored vectors stay found."""
    semantic = namespace.semantic
    languages = settings.embedding_model(semantic.embedding_model).languages
    return semantic.enabled and not semantic.cross_language and len(languages) > 1


def cross_language_reuse(namespace: NamespaceSettings, settings: Settings) -> str | None:
    """What to tell of a namespace that serves a request the answer to its wording in
    another language by its own choice (semantic.cross_language on, with text of several
    languages reaching the semantic path); None elsewhere, the language being part of the
    scope or only one language reaching it."""
    semantic = namespace.semantic
    languages = reachable_languages(namespace, settings)
    if not semantic.enabled or not semantic.cross_language or len(languages) < 2:
        return None
    return (
        f"namespace {namespace.name!r} reuses answers across languages on {semantic.embedding_model} "
        f"({len(languages)} languages, semantic.cross_language on): a request can be served the "
        "answer to its wording in another language; right for labels that do not depend on the "
        "language, wrong for answers written in the request's language"
    )


def exact_only_texts(
    texts: list[str], settings: Settings, namespace: NamespaceSettings
) -> dict[bool, set[str]]:
    """The texts (as keyed: storage.keys.normalized_text) the pipeline would give exact
    matching only, were the namespace to reuse semantically with verification (True) and
    without (False): what a calibration replays at each kind of setting. Each key is
    decided on its text as keyed, as the pipeline decides it, and read once for both."""
    return replay_decisions(texts, settings, namespace)[0]


def replay_decisions(
    texts: list[str], settings: Settings, namespace: NamespaceSettings
) -> tuple[dict[bool, set[str]], dict[bool, dict[str, str] | None]]:
    """exact_only_texts, and for each kind of setting the language each text's semantic
    scope holds (keyed as there), or None where the scope holds no language
    (language_scoped): a calibration never counts an answer across languages the pipeline
    would not serve."""
    # Read as keyed (NFC), as semantic_decisions reads them: one decision a key.
    keys = list(dict.fromkeys(normalized_text(text) for text in texts))
    reusing = {
        verified: dataclasses.replace(
            namespace, semantic=dataclasses.replace(namespace.semantic, enabled=True, verify=verified)
        )
        for verified in (False, True)
    }
    detected = detect_languages(keys)
    # Length does not depend on verification.
    too_long = _cut_short_by_embedding_model(keys, [reusing[False]] * len(keys), settings)
    # Nor the language a scope holds (language_scoped does not depend on verification).
    scoped = language_scoped(reusing[False], settings)
    places = [
        scope_language(key, language) if scoped else None
        for key, language in zip(keys, detected, strict=True)
    ]
    exact_only: dict[bool, set[str]] = {}
    languages: dict[bool, dict[str, str] | None] = {}
    for verified, settings_then in reusing.items():
        reasons = _reasons(keys, [settings_then] * len(keys), settings, detected, too_long, places)
        exact_only[verified] = {key for key, reason in zip(keys, reasons, strict=True) if reason is not None}
        languages[verified] = dict(zip(keys, places, strict=True)) if scoped else None
    return exact_only, languages


def _reasons(
    texts: list[str],
    namespaces: list[NamespaceSettings],
    settings: Settings,
    detected: list[Detection],
    too_long: list[bool],
    places: list[str | None],
) -> list[str | None]:
    """`places`: each text's scope language where its namespace keeps languages apart
    (scope_language), else None."""
    reasons: list[str | None] = []
    rows = zip(texts, namespaces, detected, too_long, places, strict=True)
    for text, namespace, language, long_text, placed in rows:
        # Looked up even where reuse is off: an unknown model is a configuration error at once,
        # not after the partition's model calls.
        embedder = settings.embedding_model(namespace.semantic.embedding_model)
        if not namespace.semantic.enabled:
            reasons.append(SEMANTIC_OFF)
            continue
        reason = coverage_gap(text, embedder.name, embedder.languages, language)
        if reason is None and long_text:
            limit = reading_limit(embedder)
            reason = f"longer than {embedder.name} reads ({limit} word pieces): exact matching only"
        if reason is None and namespace.semantic.verify:
            # An answer is reused only after verification, and the verifier must read the text.
            reason = coverage_gap(text, "the pair verifier", settings.verifier_languages, language)
        if reason is None and placed is not None and is_unplaced(placed):
            # A scope of every text nothing could place would mix their languages.
            scripts = " and ".join(part.title() for part in placed.split("+"))
            reason = (
                f"its language could not be placed ({scripts} script; {_reading(language)}) "
                f"and namespace {namespace.name!r} keeps languages apart: exact matching only"
            )
        reasons.append(reason)
    return reasons


def _reading(detected: Detection) -> str:
    if detected is None:
        return "too few words, or letters of several scripts, to read"
    return f"read as {detected[0]} at confidence {detected[1]:.2f} only"


def _cut_short_by_embedding_model(
    texts: list[str], namespaces: list[NamespaceSettings], settings: Settings
) -> list[bool]:
    """For each text, whether its namespace's embedding model would embed only part of it;
    only where semantic reuse is on."""
    too_long = [False] * len(texts)
    rows_by_model: dict[str, list[int]] = {}
    for row, namespace in enumerate(namespaces):
        if namespace.semantic.enabled:
            rows_by_model.setdefault(namespace.semantic.embedding_model, []).append(row)
    for model, rows in rows_by_model.items():
        verdicts = cut_short(settings.embedding_model(model), [texts[r] for r in rows])
        for row, long_text in zip(rows, verdicts, strict=True):
            too_long[row] = long_text
    return too_long
