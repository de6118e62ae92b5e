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
from typing import NamedTuple

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from storage.config import Settings
from storage.exact_store import set_vector_bytes
from storage.lance_tables import VECTOR_VALUE_BYTES
from storage.languages import is_unplaced
from storage.semantic_coverage import (
    COVERAGE_RULE_VERSION,
    as_keyed,
    coverage_signature,
    covered_check_signature,
    language_scoped,
    semantic_decisions,
)
from storage.semantic_index import SemanticIndex
from storage.vector_backfill import (
    entries_missing_vectors,
    forget_checked,
    forget_exact_only,
    forget_vector_kind,
    keys_recorded_exact_only,
    keys_scoped_otherwise,
    keys_under_unplaced_scopes,
    live_vectors_of,
    namespaces_to_check,
    namespaces_to_recheck,
    namespaces_unchecked,
    note_checked,
    note_rechecked,
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
       coalesce(list(DISTINCT semantic_language) FILTER (semantic_language IS NOT NULL), []) AS languages
FROM model_requests WHERE partition = ? AND semantic_enabled
GROUP BY ALL ORDER BY ALL
"""


class _Keyed(NamedTuple):
    """A (tenant, namespace, model, version) whose requests a partition keyed for semantic
    reuse under an embedding model, and how."""

    embedding_model: str
    tenant: str
    namespace: str
    model: str
    model_version: str
    verify: bool
    decided_under: str | None  # storage.semantic_coverage.coverage_signature; None before it was kept
    languages: list[str]  # the languages its requests' scopes hold

    @property
    def language_in_scope(self) -> bool:
        return bool(self.languages)


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
    keyed = [_Keyed._make(row) for row in con.sql(_KEYED_REUSE_QUERY, params=[partition]).fetchall()]
    for embedding_model in dict.fromkeys(row.embedding_model for row in keyed):
        rows = [row for row in keyed if row.embedding_model == embedding_model]
        _backfill_model(con, settings, partition, now, rows, index_of(embedding_model), embed, limit, counts)
    return counts


def _backfill_model(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    partition: str,
    now: datetime,
    rows: list[_Keyed],
    index: SemanticIndex,
    embed: EmbedTexts,
    limit: int,
    counts: BackfillCounts,
) -> None:
    embedding_model = rows[0].embedding_model
    dropped, newly_exact_only = _drop_vectors_now_uncovered(con, settings, now, rows, index)
    counts.vectors_dropped += dropped
    counts.entries_kept_exact_only += newly_exact_only
    scoped = {(row.tenant, row.namespace): row.language_in_scope for row in rows}
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
    # Where a namespace keeps languages apart, vectors an older coverage rule scoped by a
    # script's name are looked for once a rule. A partition keyed under an older rule (a re-run
    # of one keyed before the upgrade) writes such vectors again: it reopens the check for its
    # namespaces, and only a partition keyed under the current rule records it done.
    older_rule = {(row.tenant, row.namespace) for row in rows if any(map(is_unplaced, row.languages))}
    if multilingual:
        forget_checked(con, "unplaced", embedding_model, older_rule, COVERAGE_RULE_VERSION)
    unplaced_check = (
        namespaces_unchecked(
            con,
            "unplaced",
            embedding_model,
            [key for key, keeps in scoped.items() if keeps],
            COVERAGE_RULE_VERSION,
        )
        if multilingual
        else set()
    )
    indexed = index.keys(with_scopes=bool(checked or unplaced_check))
    other_kind = (
        keys_scoped_otherwise(con, indexed, embedding_model, checked, now, partition) if checked else []
    )
    unplaced = (
        keys_under_unplaced_scopes(con, indexed, embedding_model, unplaced_check, now, partition)
        if unplaced_check
        else []
    )
    stale = other_kind + unplaced
    rescope = [vector.key for vector in stale if vector.visible]
    # Of those, vectors of entries of a superseded model version (the registry names another,
    # or the model no more) that the partition does not request either: indexing them again
    # would spend the limit on scopes no current request searches. They are dropped instead;
    # such an entry then has no vector, and a partition that requests its version (a
    # recompute of an older one, say) indexes it like any other entry without one.
    requested = {(row.tenant, row.namespace, row.model, row.model_version) for row in rows}
    superseded = {
        vector.key
        for vector in stale
        if vector.visible
        and (vector.tenant, vector.namespace, vector.model, vector.model_version) not in requested
        and vector.model_version != _registered_version(settings, vector.model)
    }
    # An entry recorded exact-only is not taken below, yet may keep a stale vector (written
    # back exact-only after its vector was stored, say): that vector is dropped too.
    recorded = keys_recorded_exact_only(con, rescope, embedding_model)
    if rescope:
        indexed = indexed.filter(
            pc.invert(pc.is_in(indexed["key"], value_set=pa.array(rescope, pa.binary())))
        )
    # Requests keyed before the signature was kept have none: it is computed now.
    coverage = [
        (
            row.tenant,
            row.namespace,
            row.model,
            row.model_version,
            row.verify,
            _signature(settings, embedding_model, row),
        )
        for row in rows
    ]
    missing, awaiting = entries_missing_vectors(
        con, coverage, indexed.select(["key"]), embedding_model, now, limit, before_partition=partition
    )
    # A key indexed again replaces its vector (SemanticIndex.add_stored).
    added, exact_only = _embed_and_index(index, embedding_model, missing, scoped, settings, embed)
    kept = record_exact_only(con, exact_only, embedding_model, now)
    taken = set(missing["key"].to_list())
    unreadable = set(exact_only["key"].to_list())
    # Stale vectors whose text now gets exact matching only, of a superseded version, or of an
    # entry recorded exact-only.
    recorded -= taken
    dropped = [key for key in rescope if key in unreadable or key in superseded or key in recorded]
    index.delete_keys(dropped)
    forget_exact_only(con, list(taken - unreadable), embedding_model)
    # Capacity counts a vector with its entry (storage.write_back.new_entries).
    set_vector_bytes(con, list(taken - unreadable), index.dimension * VECTOR_VALUE_BYTES)
    set_vector_bytes(con, dropped, 0)  # after the add: a key both re-added and dropped has none
    if multilingual:
        note_vector_kinds(con, kinds, partition, now)
        # Where every stale vector was indexed again or dropped, its check stops.
        done = taken | set(dropped)
        left = {(v.tenant, v.namespace) for v in other_kind if v.key not in done}
        for tenant, namespace in checked.keys() - left:
            forget_vector_kind(con, embedding_model, tenant, namespace, not checked[(tenant, namespace)])
        left = {(v.tenant, v.namespace) for v in unplaced if v.key not in done}
        finished = unplaced_check - left - older_rule
        note_checked(con, "unplaced", embedding_model, finished, COVERAGE_RULE_VERSION, now)
    counts.vectors_backfilled += added
    counts.vectors_rescoped += len(set(rescope) & (taken - unreadable))
    counts.vectors_dropped += len(dropped)
    counts.entries_kept_exact_only += kept
    counts.entries_awaiting_vectors += awaiting - added - kept


def _drop_vectors_now_uncovered(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    now: datetime,
    rows: list[_Keyed],
    index: SemanticIndex,
) -> tuple[int, int]:
    """Once a coverage signature and tenant namespace: the stored vectors whose text the
    namespace's settings now give exact matching only (rule 3: a Chinese word in an English
    request on MiniLM, where "续订 subscription" and "取消 subscription" are one vector) are
    dropped and their entries recorded exact-only; such text no longer searches, and must
    not answer others. Decided under the settings of now, not the partition's keyed ones, so
    a recompute of an older partition decides as a new one would; a change of settings
    (verification turned on, languages kept apart) decides again. A partition keyed under an
    older rule or other settings stores such vectors again: it reopens the check. Returns
    how many vectors were dropped, and how many of their entries were not recorded
    exact-only before."""
    embedding_model = rows[0].embedding_model
    current = _current_namespaces(settings, embedding_model, rows)
    # A partition keyed otherwise than the settings of now (an older rule, verification then
    # on or off, languages then together or apart) indexes by its own decisions, which may
    # store such vectors again: it reopens the check and leaves it to a partition keyed now.
    older = _keyed_otherwise(settings, rows, current)
    forget_checked(con, "covered", embedding_model, older, COVERAGE_RULE_VERSION)
    signatures = {
        scope: covered_check_signature(namespace, settings)
        for scope, namespace in current.items()
        if scope not in older
    }
    unchecked = namespaces_to_recheck(con, embedding_model, signatures)
    if not unchecked:
        return 0, 0
    namespaces = pl.DataFrame(
        [
            (
                tenant,
                name,
                current[(tenant, name)].semantic.verify,
                coverage_signature(current[(tenant, name)], settings),
            )
            for tenant, name in sorted(unchecked)
        ],
        schema={
            "tenant": pl.String,
            "namespace": pl.String,
            "verify": pl.Boolean,
            "decided_under": pl.String,
        },
        orient="row",
    )
    stored = live_vectors_of(con, index.keys(with_scopes=True), namespaces, now)
    if stored.height:
        settings_of = [current[scope] for scope in stored.select("tenant", "namespace").iter_rows()]
        reasons, _ = semantic_decisions(stored["input_text"].to_list(), settings_of, settings)
        stored = stored.with_columns(reason=pl.Series(reasons, dtype=pl.String)).filter(
            pl.col("reason").is_not_null()
        )
    dropped = stored["key"].to_list() if stored.height else []
    index.delete_keys(dropped)
    recorded_before = keys_recorded_exact_only(con, dropped, embedding_model)
    if dropped:
        record_exact_only(con, stored, embedding_model, now)
        set_vector_bytes(con, dropped, 0)
    note_rechecked(
        con, embedding_model, {scope: signatures[scope] for scope in unchecked}, COVERAGE_RULE_VERSION, now
    )
    return len(dropped), len(set(dropped) - recorded_before)


def reopen_checks_after_write_back(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    partition: str,
    embedding_model: str,
    wrote: set[tuple[str, str]],
) -> None:
    """The write-back of a partition keyed otherwise than the settings of now (a re-run of
    one keyed before an upgrade) stores vectors its own decisions let through. A look-up of
    a partition keyed now may have run in between (steps of two runs take turns in the
    store's pool) and recorded the namespace's vectors decided: the checks open again for
    the tenant namespaces it wrote, and the next partition keyed now decides them."""
    rows = [
        row
        for row in map(_Keyed._make, con.sql(_KEYED_REUSE_QUERY, params=[partition]).fetchall())
        if row.embedding_model == embedding_model and (row.tenant, row.namespace) in wrote
    ]
    if not rows:
        return
    older = _keyed_otherwise(settings, rows, _current_namespaces(settings, embedding_model, rows))
    forget_checked(con, "covered", embedding_model, older, COVERAGE_RULE_VERSION)
    if len(settings.embedding_model(embedding_model).languages) > 1:
        older_rule = {(row.tenant, row.namespace) for row in rows if any(map(is_unplaced, row.languages))}
        forget_checked(con, "unplaced", embedding_model, older_rule, COVERAGE_RULE_VERSION)


def _current_namespaces(settings: Settings, embedding_model: str, rows: list[_Keyed]) -> dict:
    """Of the rows' tenant namespaces, those that reuse semantically on `embedding_model`
    now, with their settings of now."""
    return {
        (tenant, name): namespace
        for tenant, name in sorted({(row.tenant, row.namespace) for row in rows})
        if (namespace := settings.namespace(name, tenant)).semantic.enabled
        and namespace.semantic.embedding_model == embedding_model
    }


def _keyed_otherwise(settings: Settings, rows: list[_Keyed], current: dict) -> set[tuple[str, str]]:
    """The tenant namespaces of rows keyed otherwise than their settings of now."""
    return {
        (row.tenant, row.namespace)
        for row in rows
        if (namespace := current.get((row.tenant, row.namespace))) is None
        or row.decided_under != coverage_signature(namespace, settings)
        or row.language_in_scope != language_scoped(namespace, settings)
    }


def _signature(settings: Settings, embedding_model: str, row: _Keyed) -> str:
    """What decided the row's requests, as the backfill records it."""
    return row.decided_under or coverage_signature(
        as_keyed(settings.namespace(row.namespace, row.tenant), embedding_model, row.verify), settings
    )


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
