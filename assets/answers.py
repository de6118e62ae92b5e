"""A partition's model side: answer what both look-ups missed, then write the answers back."""

import functools
import time

import dagster as dg
import numpy as np
import polars as pl

from assets.lookups import current_embeddings
from assets.partitions import PARTITION_FLOW
from inference.miss_runner import answer_misses
from inference.pair_verifier import verifier_counts
from orchestration.resources import InferCacheResource
from storage.eviction import enforce_capacity
from storage.exact_store import open_store, replace_partition, sweep_expired
from storage.lookalikes import fold_lookalike_misses
from storage.pair_scores import forget_unused
from storage.vector_backfill import (
    forget_exact_only,
    forget_exact_only_without_entry,
    note_vector_kinds,
    record_exact_only,
)
from storage.vector_backfill_run import reopen_checks_after_write_back
from storage.write_back import commit_entries, keys_without_live_entry, new_entries, new_exact_only_entries
from storage.wrong_answers import blocked_within, reports_against


@dg.asset(deps=["semantic_lookups"], kinds={"torch", "duckdb"}, **PARTITION_FLOW)
def inference_outputs(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """Misses of both look-ups, run in batches. Identical keys fold into one call, and so do
    verified look-alikes of one scope where semantic reuse is on."""
    partition = context.partition_key
    with open_store(infercache.locations.duckdb_path) as con:
        misses = con.sql(
            """
            SELECT r.request_id, r.key, r.model, r.model_version, r.params_json, r.prefix, r.input,
                   r.semantic_scope, r.semantic_threshold, r.semantic_verify,
                   r.semantic_verify_threshold, r.semantic_enabled, r.embedding_model, m.vector,
                   m.text_hash, m.model_fingerprint
            FROM model_requests r
            JOIN exact_lookups e USING (partition, request_id)
            LEFT JOIN semantic_lookups s USING (partition, request_id)
            LEFT JOIN request_embeddings m USING (partition, request_id)
            WHERE r.partition = ? AND NOT e.hit AND NOT coalesce(s.hit, false)
            ORDER BY r.request_id
            """,
            params=[partition],
        ).pl()
        # A vector folds look-alikes: only where semantic reuse is on now, and of the current text.
        current_embeddings(misses.filter("semantic_enabled"), partition, infercache.embedding_fingerprint)
        misses = misses.with_columns(
            vector=pl.when("semantic_enabled").then(pl.col("vector")).otherwise(None)
        ).drop("semantic_enabled", "text_hash", "model_fingerprint")  # embedding_model: for reports
        reports = reports_against(con, misses["key"].to_list())
    blocked = functools.partial(blocked_within, reports=reports) if reports else None
    verifier = infercache.pair_verifier_for(misses)
    verify = verifier.score if verifier else None
    started = time.perf_counter()
    leaders = fold_lookalike_misses(misses, verify, blocked) if misses.height else {}
    lookalike_seconds = time.perf_counter() - started
    backends_used: dict[int, tuple[object, int]] = {}

    def backend_for(model: str, version: str):
        # Each backend's reuse count before this partition: a loaded backend is kept across runs.
        backend, limits = infercache.backend(model, version)
        backends_used.setdefault(id(backend), (backend, getattr(backend, "prefix_tokens_reused", 0)))
        return backend, limits

    outputs = answer_misses(misses, backend_for, leaders)
    prefix_tokens_reused = sum(
        getattr(backend, "prefix_tokens_reused", 0) - before for backend, before in backends_used.values()
    )
    with open_store(infercache.locations.duckdb_path) as con:
        replace_partition(
            con, "inference_outputs", partition, outputs.with_columns(partition=pl.lit(partition))
        )
    paths = outputs["path"].value_counts() if outputs.height else pl.DataFrame({"path": [], "count": []})
    counts = dict(zip(paths["path"].to_list(), paths["count"].to_list(), strict=True))
    return dg.MaterializeResult(
        metadata={
            "misses": misses.height,
            # Keys answered by a look-alike's call (one whose look-alike's call failed made its own).
            "lookalike_keys_folded": _keys_folded_into_lookalikes(misses, outputs),
            "lookalike_seconds": lookalike_seconds,
            "model_calls": counts.get("model", 0),
            "folded": counts.get("folded", 0),
            "failed": counts.get("failed", 0),
            "device_seconds": float(outputs["device_seconds"].sum()) if outputs.height else 0.0,
            "batches": outputs.filter(pl.col("batch_index") >= 0)["batch_index"].n_unique(),
            # Token positions of shared prefixes not prefilled again (the prefix KV cache).
            "prefix_tokens_reused": prefix_tokens_reused,
            **verifier_counts(verifier),
        }
    )


def _keys_folded_into_lookalikes(misses: pl.DataFrame, outputs: pl.DataFrame) -> int:
    if not outputs.height:
        return 0
    folded = outputs.join(misses.select("request_id", "key"), on="request_id").filter(
        (pl.col("path") == "folded") & (pl.col("served_key") != pl.col("key"))
    )
    return folded["key"].n_unique()


@dg.asset(deps=["inference_outputs"], kinds={"duckdb", "lancedb"}, **PARTITION_FLOW)
def cache_write_back(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """New answers into cache_entries (committed first), then their vectors into LanceDB;
    then each tenant namespace is held to its capacity by its eviction policy.

    Re-running a partition writes its answers again over the same keys, so the state is
    the same; entries it does not write again stay.
    """
    partition = context.partition_key
    settings = infercache.settings()
    now = infercache.now()
    with open_store(infercache.locations.duckdb_path) as con:
        scopes = con.execute(
            "SELECT DISTINCT tenant, namespace FROM model_requests WHERE partition = ?", [partition]
        ).fetchall()
        # Settings per tenant namespace: a tenant's own override of TTL or capacity applies.
        limits = {(tenant, namespace): settings.namespace(namespace, tenant) for tenant, namespace in scopes}
        ttl = {scope: namespace_settings.ttl_seconds for scope, namespace_settings in limits.items()}
        # Checked before anything is committed: a stale vector fails the step, not the index.
        vectors = con.sql(
            """
            SELECT r.request_id, r.key, r.input, r.embedding_model, m.vector, m.text_hash, m.model_fingerprint
            FROM inference_outputs i
            JOIN model_requests r USING (partition, request_id)
            JOIN request_embeddings m USING (partition, request_id)
            WHERE i.partition = ? AND i.path = 'model' AND r.semantic_enabled
            """,
            params=[partition],
        ).pl()
        vectors = current_embeddings(vectors, partition, infercache.embedding_fingerprint).select(
            "key", "vector"
        )
        answered = new_entries(con, partition, now, ttl, vectors)
        entries = commit_entries(con, answered)
        kept_from_earlier = answered.height - entries.height
        exact_only = new_exact_only_entries(con, partition)
        for (embedding_model,), group in exact_only.group_by(["embedding_model"], maintain_order=True):
            record_exact_only(con, group, embedding_model, now)
        versions = {model.name: model.version for model in settings.models.values()}
        evicted: list[bytes] = []
        for (tenant, namespace), scope in limits.items():
            evicted += enforce_capacity(
                con,
                tenant,
                namespace,
                scope.eviction,
                scope.max_entries,
                scope.max_bytes,
                admitted_at=now,
                current_versions=versions,
            )
        expired = sweep_expired(con, now)
        pair_scores_forgotten = forget_unused(con, now)
        forget_exact_only_without_entry(con, now)
        # Only the indexes this partition's requests use: loading an embedding model
        # just to open an index it never touches costs time and needs its package.
        embedding_models = [
            name
            for (name,) in con.execute(
                "SELECT DISTINCT embedding_model FROM model_requests WHERE partition = ? ORDER BY 1",
                [partition],
            ).fetchall()
        ]
        # How the new vectors are scoped (with or without the text's language), for the
        # namespaces on a multilingual model (storage/vector_backfill.note_vector_kinds).
        written_kinds = con.execute(
            """
            SELECT DISTINCT embedding_model, tenant, namespace, semantic_language IS NOT NULL
            FROM model_requests WHERE partition = ? AND semantic_enabled ORDER BY ALL
            """,
            [partition],
        ).fetchall()
    with_vectors = entries.join(vectors, on="key", how="inner")
    # Entries stored without a vector (their namespace keeps semantic reuse off now, or their
    # text is exact-only): a vector an earlier run of the partition indexed for one goes, as
    # its size_bytes no longer counts it (a review saw it kept, uncounted, for good).
    without_vectors = entries.join(vectors, on="key", how="anti")
    indexed = not_indexed = removed = 0
    for name in embedding_models:
        group = with_vectors.filter(pl.col("embedding_model") == name)
        index = infercache.semantic_index(name)
        unvectored = without_vectors.filter(pl.col("embedding_model") == name)["key"].to_list()
        if unvectored:
            before = index.count()
            index.delete_keys(unvectored)
            removed += before - index.count()
        added = index.add(group, np.asarray(group["vector"].to_list(), dtype=np.float32), partition)
        indexed, not_indexed = indexed + added, not_indexed + group.height - added
        # After the add: what this write-back evicted, what expired, and what an earlier
        # write-back that stopped between the two stores left behind.
        wrote = set(group.select("tenant", "namespace").unique().iter_rows())
        with open_store(infercache.locations.duckdb_path) as con:
            forget_exact_only(con, group["key"].to_list(), name)
            reopen_checks_after_write_back(con, settings, partition, name, wrote)
            if len(settings.embedding_model(name).languages) > 1:
                # Only where this write-back indexed something.
                kinds = [kind for kind in written_kinds if kind[0] == name and (kind[1], kind[2]) in wrote]
                note_vector_kinds(con, kinds, partition, now)
            dead = keys_without_live_entry(con, index.keys(), now)
        index.delete_keys(dead)
        removed += len(dead)
    if not_indexed:
        context.log.warning(f"{not_indexed} answers not indexed: their vectors hold NaN or infinity")
    if kept_from_earlier:
        context.log.warning(
            f"{kept_from_earlier} answers were already stored by an earlier partition whose "
            "write-back ran after this partition's look-up (runs in turns): those entries are "
            "kept, and a re-run of this partition is served by them"
        )
    return dg.MaterializeResult(
        metadata={
            "entries_written": entries.height,
            "entries_kept_from_earlier_partitions": kept_from_earlier,
            "entries_expired": expired,
            "vectors_indexed": indexed,
            "vectors_not_indexed": not_indexed,
            "vectors_removed": removed,
            "entries_evicted": len(evicted),
            "pair_scores_forgotten": pair_scores_forgotten,
            "bytes_written": int(entries["size_bytes"].sum()) if entries.height else 0,
        }
    )
