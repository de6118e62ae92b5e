"""Turning accepted requests into keyed requests: model version, key, semantic scope."""

from __future__ import annotations

import json

import duckdb
import polars as pl

from storage.config import Settings
from storage.keys import (
    RequestIdentity,
    cache_key,
    canonical_params,
    canonical_request,
    semantic_scope,
)
from storage.semantic_coverage import SEMANTIC_OFF, coverage_signature, language_scoped, semantic_decisions


def effective_params(params: dict, backend: str, labels: tuple[str, ...]) -> dict:
    """The params that decide the answer. A classifier's candidate labels come from its
    namespace unless the request names its own, and they are part of the key."""
    if backend == "zero_shot_classifier" and "labels" not in params:
        return {**params, "labels": list(labels)}
    return params


def key_requests(accepted: pl.DataFrame, settings: Settings) -> pl.DataFrame:
    """Add the model version (from the registry), the key and the semantic scope to each row."""
    rows = []
    namespaces = [
        settings.namespace(row["namespace"], row["tenant"])
        for row in accepted.select("namespace", "tenant").iter_rows(named=True)
    ]
    skip_reasons, languages = semantic_decisions(accepted["input"].to_list(), namespaces, settings)
    for row, namespace, skip_reason, language in zip(
        accepted.iter_rows(named=True), namespaces, skip_reasons, languages, strict=True
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
                "semantic_scope": semantic_scope(identity, namespace.semantic.embedding_model, language),
                "embedding_model": namespace.semantic.embedding_model,
                "semantic_enabled": skip_reason is None,
                "semantic_threshold": namespace.semantic.threshold,
                "semantic_verify": namespace.semantic.verify,
                "semantic_verify_threshold": namespace.semantic.verify_threshold,
                "semantic_skip_reason": skip_reason,
                "semantic_language": language,
                # What decided semantic_skip_reason (storage/vector_backfill.py keeps it with
                # an entry recorded exact-only); none where reuse is off.
                "semantic_decided_under": (
                    coverage_signature(namespace, settings) if namespace.semantic.enabled else None
                ),
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
        "semantic_language": pl.String,
        "semantic_decided_under": pl.String,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


_KEYED_SETTINGS_QUERY = """
SELECT tenant, namespace,
       bool_and(coalesce(semantic_skip_reason, '') = ?) AS switched_off,
       any_value(semantic_threshold) AS threshold, any_value(semantic_verify) AS verify,
       any_value(semantic_verify_threshold) AS verify_threshold,
       any_value(embedding_model) AS embedding_model,
       bool_or(semantic_language IS NOT NULL) FILTER (semantic_enabled) AS language_in_scope
FROM model_requests WHERE partition = ?
GROUP BY tenant, namespace ORDER BY tenant, namespace
"""


def settings_changed_since_keying(
    con: duckdb.DuckDBPyConnection, partition: str, settings: Settings
) -> list[str]:
    """Each tenant's namespace whose semantic settings differ from those its requests were
    keyed under, with what changed (the language in the scope too, semantic.cross_language,
    where both look up semantically). A re-run from the semantic look-up on (a recompute
    after a report) keeps the keyed ones; only re-keying the partition applies the new ones."""
    changed = []
    for row in con.sql(_KEYED_SETTINGS_QUERY, params=[SEMANTIC_OFF, partition]).pl().iter_rows(named=True):
        namespace = settings.namespace(row["namespace"], row["tenant"])
        semantic = namespace.semantic
        keyed = {
            "enabled": not row["switched_off"],
            "threshold": row["threshold"],
            "verify": row["verify"],
            "verify_threshold": row["verify_threshold"],
            "embedding_model": row["embedding_model"],
        }
        now = {name: getattr(semantic, name) for name in keyed}
        # Known only where some request was looked up semantically (its scope says it).
        if row["language_in_scope"] is not None and semantic.enabled:
            keyed["language_in_scope"] = row["language_in_scope"]
            now["language_in_scope"] = language_scoped(namespace, settings)
        differences = [f"{name} {keyed[name]} -> {now[name]}" for name in keyed if keyed[name] != now[name]]
        if differences:
            changed.append(
                f"tenant {row['tenant']!r} namespace {row['namespace']!r}: {', '.join(differences)} since "
                "this partition was keyed; the keyed settings apply until it is re-run from model_requests"
            )
    return changed


def versions_changed_since_keying(
    con: duckdb.DuckDBPyConnection, partition: str, settings: Settings
) -> list[str]:
    """Each model whose registry version differs from the one the partition's requests were
    keyed under (or that the registry no longer lists). Looking them up again would serve
    the old version's answers under the old keys: the partition must be keyed again."""
    keyed = con.execute(
        "SELECT DISTINCT model, model_version FROM model_requests WHERE partition = ? ORDER BY ALL",
        [partition],
    ).fetchall()
    changed = []
    for model, version in keyed:
        registered = settings.models.get(model)
        if registered is None or registered.version != version:
            now = f"version {registered.version}" if registered else "no longer in the registry"
            changed.append(f"{model!r} was keyed at version {version} and is {now}")
    return changed
