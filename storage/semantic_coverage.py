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
from storage.languages import Detection, coverage_gap, detect_languages

SEMANTIC_OFF = "semantic reuse is off for this namespace"


def semantic_skip_reasons(
    texts: list[str], namespaces: list[NamespaceSettings], settings: Settings
) -> list[str | None]:
    """For each text under its namespace, why semantic reuse is off for it (None: it is on)."""
    # Languages only where semantic reuse could apply (the detector costs ~7 s to load).
    detected = detect_languages(
        [text if ns.semantic.enabled else "" for text, ns in zip(texts, namespaces, strict=True)]
    )
    too_long = _cut_short_by_embedding_model(texts, namespaces, settings)
    return _reasons(texts, namespaces, settings, detected, too_long)


def cross_language_reuse(namespace: NamespaceSettings, settings: Settings) -> str | None:
    """Why the namespace may serve a request the answer to its wording in another language
    (None where it cannot): its embedding model reads several languages and nothing checks
    the pair, since the verifier reads English only and, while it verifies, other text gets
    exact matching only. The semantic scope does not hold the text's language."""
    semantic = namespace.semantic
    if not semantic.enabled or semantic.verify:
        return None
    languages = settings.embedding_model(semantic.embedding_model).languages
    if len(languages) < 2:
        return None
    return (
        f"namespace {namespace.name!r} reuses answers on {semantic.embedding_model} "
        f"({len(languages)} languages) without verification: a request can be served the answer "
        "to its wording in another language; keep one language to this namespace, or use it "
        "for labels that do not depend on the language"
    )


def exact_only_texts(
    texts: list[str], settings: Settings, namespace: NamespaceSettings
) -> dict[bool, set[str]]:
    """The texts (as keyed: storage.keys.normalized_text) the pipeline would give exact
    matching only, were the namespace to reuse semantically with verification (True) and
    without (False): what a calibration replays at each kind of setting. Each key is
    decided on its first wording, as the pipeline meets it first, and read once for both."""
    first_wording = {normalized_text(text): text for text in reversed(texts)}
    keys = list(first_wording)
    wordings = list(first_wording.values())
    reusing = {
        verified: dataclasses.replace(
            namespace, semantic=dataclasses.replace(namespace.semantic, enabled=True, verify=verified)
        )
        for verified in (False, True)
    }
    detected = detect_languages(wordings)
    # Length does not depend on verification.
    too_long = _cut_short_by_embedding_model(wordings, [reusing[False]] * len(wordings), settings)
    exact_only = {}
    for verified, settings_then in reusing.items():
        reasons = _reasons(wordings, [settings_then] * len(wordings), settings, detected, too_long)
        exact_only[verified] = {key for key, reason in zip(keys, reasons, strict=True) if reason is not None}
    return exact_only


def _reasons(
    texts: list[str],
    namespaces: list[NamespaceSettings],
    settings: Settings,
    detected: list[Detection],
    too_long: list[bool],
) -> list[str | None]:
    reasons: list[str | None] = []
    for text, namespace, language, long_text in zip(texts, namespaces, detected, too_long, strict=True):
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
        reasons.append(reason)
    return reasons


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
