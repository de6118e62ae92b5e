"""Turning accepted requests into keyed requests: model version, key, semantic scope."""

from __future__ import annotations

import json

import polars as pl

from storage.config import Settings
from storage.input_length import cut_short, reading_limit
from storage.keys import (
    RequestIdentity,
    cache_key,
    canonical_params,
    canonical_request,
    semantic_scope,
)
from storage.languages import Detection, coverage_gap, detect_languages


def effective_params(params: dict, backend: str, labels: tuple[str, ...]) -> dict:
    """The params that decide the answer. A classifier's candidate labels come from its
    namespace unless the request names its own, and they are part of the key."""
    if backend == "zero_shot_classifier" and "labels" not in params:
        return {**params, "labels": list(labels)}
    return params


def _cut_short_by_embedding_model(texts: list[str], namespaces: list, settings: Settings) -> list[bool]:
    """For each text, whether its namespace's embedding model would embed only part of it
    (storage/input_length.py); only where semantic reuse is on."""
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


def semantic_skip_reasons(
    texts: list[str], namespaces: list, settings: Settings, detected: list[Detection] | None = None
) -> list[str | None]:
    """For each text under its namespace, why semantic reuse is off for it (None: it is on).

    Semantic reuse switches itself off for text its embedding model does not cover (script
    or language), for text longer than that model reads, and, where answers are verified,
    for text the pair verifier does not cover: exact matching still applies to all of it.
    The pipeline keys requests with it and `evaluate` replays with it, so both decide alike.
    `detected`: the texts' languages (detect_languages), where the caller has them already.
    """
    if detected is None:
        # Languages only where semantic reuse could apply (the detector costs ~7 s to load).
        detected = detect_languages(
            [text if ns.semantic.enabled else "" for text, ns in zip(texts, namespaces, strict=True)]
        )
    too_long = _cut_short_by_embedding_model(texts, namespaces, settings)
    reasons: list[str | None] = []
    for text, namespace, language, long_text in zip(texts, namespaces, detected, too_long, strict=True):
        if not namespace.semantic.enabled:
            reasons.append("semantic reuse is off for this namespace")
            continue
        embedder = settings.embedding_model(namespace.semantic.embedding_model)
        reason = coverage_gap(text, embedder.name, embedder.languages, language)
        if reason is None and long_text:
            limit = reading_limit(embedder)
            reason = f"longer than {embedder.name} reads ({limit} word pieces): exact matching only"
        if reason is None and namespace.semantic.verify:
            # An answer is reused only after verification, and the verifier must read the text.
            reason = coverage_gap(text, "the pair verifier", settings.verifier_languages, language)
        reasons.append(reason)
    return reasons


def key_requests(accepted: pl.DataFrame, settings: Settings) -> pl.DataFrame:
    """Add the model version (from the registry), the key and the semantic scope to each row."""
    rows = []
    namespaces = [
        settings.namespace(row["namespace"], row["tenant"])
        for row in accepted.select("namespace", "tenant").iter_rows(named=True)
    ]
    skip_reasons = semantic_skip_reasons(accepted["input"].to_list(), namespaces, settings)
    for row, namespace, skip_reason in zip(
        accepted.iter_rows(named=True), namespaces, skip_reasons, strict=True
    ):
        spec = settings.model(row["model"])
        params = effective_params(json.loads(row["params_json"]), spec.backend, namespace.labels)
        identity = RequestIdentity(
            tenant=row["tenant"],
            namespace=row["namespace"],
            model=spec.name,
            model_version=spec.version,
            params=params,
            prefix=row["prefix"],
            input=row["input"],
        )
        canonical = canonical_request(identity)
        rows.append(
            {
                **row,
                "params_json": canonical_params(params),
                "model_version": spec.version,
                "key": cache_key(canonical),
                "canonical_request": canonical,
                "semantic_scope": semantic_scope(identity, namespace.semantic.embedding_model),
                "embedding_model": namespace.semantic.embedding_model,
                "semantic_enabled": skip_reason is None,
                "semantic_threshold": namespace.semantic.threshold,
                "semantic_verify": namespace.semantic.verify,
                "semantic_verify_threshold": namespace.semantic.verify_threshold,
                "semantic_skip_reason": skip_reason,
            }
        )
    schema = {
        **dict(accepted.schema),
        "model_version": pl.String,
        "key": pl.Binary,
        "canonical_request": pl.String,
        "semantic_scope": pl.String,
        "embedding_model": pl.String,
        "semantic_enabled": pl.Boolean,
        "semantic_threshold": pl.Float64,
        "semantic_verify": pl.Boolean,
        "semantic_verify_threshold": pl.Float64,
        "semantic_skip_reason": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")
