"""One partition's run of the vector backfill (storage/vector_backfill.py holds its queries).

Before its semantic search, a partition indexes the stored entries of its namespaces that
reuse semantically but have no vector their requests can find, under the settings the
partition was keyed with: written while reuse was off, or under another embedding model,
they would otherwise serve exact hits only; and, on a multilingual model, stored with or
without the text's language in the scope where the namespace now keeps it the other way,
they would never be found; or stored under the scope of a text an older coverage rule left
unplaced (by its script), which no request searches now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from storage.config import Settings
from storage.semantic_coverage import COVERAGE_RULE_VERSION, as_keyed, coverage_signature, semantic_decisions
from storage.semantic_index import SemanticIndex
from storage.vector_backfill import (
    entries_missing_vectors,
    forget_exact_only,
    forget_vector_kind,
    keys_scoped_otherwise,
    keys_under_unplaced_scopes,
    namespaces_to_check,
    namespaces_unchecked_for_unplaced,
    note_unplaced_checked,
    note_vector_kinds,
    record_exact_only,
    with_scopes,
)

# Texts of one embedding model -> their vectors (through the embedding cache, so a text
# embedded before is not embedded again).
EmbedTexts = Callable[[str, list[str]], np.ndarray]

_KEYED_REUSE_QUERY = """
SELECT embedding_model, tenant, namespace, model, model_version,
       any_value(coalesce(semantic_verify, false)) AS verify,
       any_value(semantic_decided_under) AS decided_under,
       bool_or(semantic_language IS NOT NULL) AS language_in_scope
FROM model_requests WHERE partition = ? AND semantic_enabled
GROUP BY ALL ORDER BY ALL
"""


@dataclass
class BackfillCounts:
    """What one run did, as the asset's metadata names it."""

    vectors_backfilled: int = 0
    vectors_rescoped: int = 0
    vectors_dropped: int = 0
    entries_kept_exact_only: int = 0
    entries_awaiting_vectors: int = 0

    def as_metadata(self) -> dict[str, int]:
        return asdict(self)


def index_entries_without_vectors(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    partition: str,
    now: datetime,
    *,
    index_of: Callable[[str], SemanticIndex],
    embed: EmbedTexts,
    limit: int,
) -> BackfillCounts:
    """Index, for each embedding model the partition's requests search, up to `limit` live
    entries that have no vector their requests can find (`index_of` gives the model's
    index); entries whose text the model cannot cover are recorded exact-only instead."""
    counts = BackfillCounts()
    keyed = con.sql(_KEYED_REUSE_QUERY, params=[partition]).fetchall()
    for embedding_model in dict.fromkeys(row[0] for row in keyed):
        rows = [row for row in keyed if row[0] == embedding_model]
        _backfill_model(con, settings, partition, now, rows, index_of(embedding_model), embed, limit, counts)
    return counts


def _backfill_model(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    partition: str,
    now: datetime,
    rows: list[tuple],
    index: SemanticIndex,
    embed: EmbedTexts,
    limit: int,
    counts: BackfillCounts,
) -> None:
    embedding_model = rows[0][0]
    scoped = {(tenant, namespace): language for _, tenant, namespace, _, _, _, _, language in rows}
    # Only a model of several languages can have stored a vector under the other kind of
    # scope, and only namespaces where the other kind may be present are read vector by vector.
    multilingual = len(settings.embedding_model(embedding_model).languages) > 1
    kinds = [
        (embedding_model, tenant, namespace, language) for (tenant, namespace), language in scoped.items()
    ]
    checked = (
        {(t, ns): scoped[(t, ns)] for _, t, ns in namespaces_to_check(con, kinds, partition)}
        if multilingual
        else {}
    )
    # Where a namespace keeps languages apart, vectors an older coverage rule scoped by script
    # are read once a rule (ever fewer, as the check stops once none is left).
    unplaced_check = (
        namespaces_unchecked_for_unplaced(
            con, embedding_model, [key for key, keeps in scoped.items() if keeps], COVERAGE_RULE_VERSION
        )
        if multilingual
        else set()
    )
    indexed = index.keys(with_scopes=bool(checked or unplaced_check))
    stale = keys_scoped_otherwise(con, indexed, embedding_model, checked, now, partition) if checked else []
    unplaced = (
        keys_under_unplaced_scopes(con, indexed, embedding_model, unplaced_check, now, partition)
        if unplaced_check
        else []
    )
    stale += unplaced
    rescope = [vector.key for vector in stale if vector.visible]
    # Of those, vectors of entries of a superseded model version (the registry names another,
    # or the model no more) that the partition does not request either: indexing them again
    # would spend the limit on scopes no current request searches. They are dropped instead;
    # such an entry then has no vector, and a partition that requests its version (a
    # recompute of an older one, say) indexes it like any other entry without one.
    requested = {(tenant, name, model, version) for _, tenant, name, model, version, *_ in rows}
    superseded = {
        vector.key
        for vector in stale
        if vector.visible
        and (vector.tenant, vector.namespace, vector.model, vector.model_version) not in requested
        and vector.model_version != _registered_version(settings, vector.model)
    }
    if rescope:
        indexed = indexed.filter(
            pc.invert(pc.is_in(indexed["key"], value_set=pa.array(rescope, pa.binary())))
        )
    # Requests keyed before the signature was kept have none: it is computed now.
    coverage = [
        (
            tenant,
            name,
            model,
            version,
            verify,
            decided_under
            or coverage_signature(
                as_keyed(settings.namespace(name, tenant), embedding_model, verify), settings
            ),
        )
        for _, tenant, name, model, version, verify, decided_under, _ in rows
    ]
    missing, awaiting = entries_missing_vectors(
        con, coverage, indexed.select(["key"]), embedding_model, now, limit, before_partition=partition
    )
    # A key indexed again replaces its vector (SemanticIndex.add_stored).
    added, exact_only = _embed_and_index(index, embedding_model, missing, scoped, settings, embed)
    kept = record_exact_only(con, exact_only, embedding_model, now)
    # A vector under the other kind of scope whose text now gets exact matching only.
    taken = set(missing["key"].to_list())
    unreadable = set(exact_only["key"].to_list())
    index.delete_keys([key for key in rescope if key in unreadable or key in superseded])
    forget_exact_only(con, list(taken - unreadable), embedding_model)
    if multilingual:
        note_vector_kinds(con, kinds, partition, now)
        # Where every vector of the other kind was indexed again, the check stops.
        left = {(v.tenant, v.namespace) for v in stale if v.key not in taken and v.key not in superseded}
        for tenant, namespace in checked.keys() - left:
            forget_vector_kind(con, embedding_model, tenant, namespace, not checked[(tenant, namespace)])
        left = {(v.tenant, v.namespace) for v in unplaced if v.key not in taken and v.key not in superseded}
        note_unplaced_checked(con, embedding_model, unplaced_check - left, COVERAGE_RULE_VERSION, now)
    counts.vectors_backfilled += added
    counts.vectors_rescoped += len(set(rescope) & (taken - unreadable))
    counts.vectors_dropped += len(superseded)
    counts.entries_kept_exact_only += kept
    counts.entries_awaiting_vectors += awaiting - added - kept


def _embed_and_index(
    index: SemanticIndex,
    embedding_model: str,
    missing: pl.DataFrame,
    language_in_scope: dict[tuple[str, str], bool],
    settings: Settings,
    embed: EmbedTexts,
) -> tuple[int, pl.DataFrame]:
    """Index the entries whose text the keyed settings let reuse semantically, each under
    the scope its requests search; the others, with the reason, as the pipeline states
    it, are returned."""
    if not missing.height:
        return 0, missing.with_columns(reason=pl.lit(None, dtype=pl.String))
    namespaces = [
        as_keyed(settings.namespace(name, tenant), embedding_model, verify, language_in_scope[(tenant, name)])
        for tenant, name, verify in missing.select("tenant", "namespace", "verify").iter_rows()
    ]
    reasons, languages = semantic_decisions(missing["input_text"].to_list(), namespaces, settings)
    missing = with_scopes(missing, embedding_model, languages).with_columns(
        reason=pl.Series(reasons, dtype=pl.String)
    )
    readable = missing.filter(pl.col("reason").is_null())
    vectors = np.zeros((0, index.dimension), dtype=np.float32)
    if readable.height:
        vectors = embed(embedding_model, readable["input_text"].to_list())
    finite = np.isfinite(vectors).all(axis=1)
    added = index.add_stored(readable.filter(pl.Series(finite)), vectors[finite])
    exact_only = pl.concat(
        [
            missing.filter(pl.col("reason").is_not_null()),
            readable.filter(pl.Series(~finite)).with_columns(
                reason=pl.lit("its vector holds NaN or infinity: exact matching only")
            ),
        ]
    )
    return added, exact_only


def _registered_version(settings: Settings, model: str) -> str | None:
    """The model's version in the registry now; None where it is registered no more."""
    spec = settings.models.get(model)
    return None if spec is None else spec.version
