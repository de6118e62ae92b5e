"""A partition's look-ups: exact (one join), embeddings of the misses, semantic search."""

import time
from collections.abc import Callable

import dagster as dg
import numpy as np
import polars as pl

from assets.partitions import PARTITION_FLOW
from inference.pair_verifier import verifier_counts
from orchestration.resources import InferCacheResource
from storage.config import ConfigError
from storage.exact_store import (
    apply_ttl,
    lookup_exact,
    open_store,
    read_partition,
    record_hits,
    replace_partition,
    served_keys_of,
)
from storage.keying import settings_changed_since_keying, versions_changed_since_keying
from storage.keys import text_hash
from storage.semantic_lookup import lookup_semantic
from storage.vector_backfill_run import index_entries_without_vectors


def _require_current_versions(con, partition: str, settings) -> None:
    """A look-up run again (a recompute from here) after a model upgrade would serve the old
    version's answers under the old keys: it stops and says to key the partition again."""
    changed = versions_changed_since_keying(con, partition, settings)
    if changed:
        raise dg.Failure(
            f"{'; '.join(changed)} since {partition} was keyed: re-materialize the partition "
            "from model_requests (the whole daily_partition_job), not from the look-ups"
        )


@dg.asset(deps=["model_requests"], kinds={"duckdb", "polars"}, **PARTITION_FLOW)
def exact_lookups(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """Each request joined against cache_entries in one statement; expired entries never serve."""
    partition = context.partition_key
    now = infercache.now()
    settings = infercache.settings()
    with open_store(infercache.locations.duckdb_path) as con:
        _require_current_versions(con, partition, settings)
        requests = read_partition(con, "model_requests", partition)
        # The TTLs configured now hold for what is stored, before anything is served.
        scopes = requests.select("tenant", "namespace").unique().rows()
        retimed = apply_ttl(
            con, {(tenant, ns): settings.namespace(ns, tenant).ttl_seconds for tenant, ns in scopes}
        )
        started = time.perf_counter()
        found = lookup_exact(con, requests, now, before_partition=partition)
        elapsed = time.perf_counter() - started
        # A re-run takes back the hits its earlier run recorded: each hit counts once.
        previous = served_keys_of(con, "exact_lookups", partition)
        record_hits(con, found.filter("hit")["served_key"].to_list(), now, replacing=previous)
        share = elapsed / requests.height if requests.height else 0.0
        replace_partition(
            con,
            "exact_lookups",
            partition,
            found.with_columns(partition=pl.lit(partition), lookup_seconds=pl.lit(share)),
        )
    hits = int(found["hit"].sum()) if found.height else 0
    return dg.MaterializeResult(
        metadata={
            "requests": requests.height,
            "exact_hits": hits,
            "exact_hit_rate": hits / requests.height if requests.height else None,
            "lookup_seconds": elapsed,
            # Stored entries whose expiry moved to the TTL configured now.
            "entries_retimed": retimed,
        }
    )


def _semantic_candidates(con, partition: str) -> pl.DataFrame:
    """Exact misses whose namespace allows semantic reuse."""
    return con.sql(
        """
        SELECT r.*
        FROM model_requests r JOIN exact_lookups e USING (partition, request_id)
        WHERE r.partition = ? AND NOT e.hit AND r.semantic_enabled
        ORDER BY r.request_id
        """,
        params=[partition],
    ).pl()


def current_embeddings(
    requests: pl.DataFrame, partition: str, fingerprint_of: Callable[[str], str]
) -> pl.DataFrame:
    """`requests` (with `input`, `embedding_model`, and `vector`, `text_hash` and
    `model_fingerprint` from request_embeddings), refused unless each vector is of the
    request's text as model_requests now holds it, by the weights its embedding model names
    now (`fingerprint_of`): after a re-landed file, another embedding model in the settings or
    weights swapped under a name, request_embeddings materialized earlier would look up,
    fold or index a text by a vector that is not its own. Rows written before the weights
    were recorded (no fingerprint) are taken as they are."""
    current = {}
    for name in requests["embedding_model"].unique().to_list():
        try:
            current[name] = fingerprint_of(name)
        except ConfigError as error:
            raise dg.Failure(
                f"model_requests of {partition} name the embedding model {name!r}, which the "
                f"configuration cannot give ({error}): configure it again, or materialize the "
                "partition again from model_requests on, to key its requests afresh"
            ) from None
    stale = [
        request_id
        for request_id, text, model, stored_hash, stored_fingerprint in requests.select(
            "request_id", "input", "embedding_model", "text_hash", "model_fingerprint"
        ).iter_rows()
        if stored_hash != text_hash(text)
        or (stored_fingerprint is not None and stored_fingerprint != current[model])
    ]
    if stale:
        raise dg.Failure(
            f"{len(stale)} request(s) of {partition} have no embedding of their current text by "
            f"their current embedding model (first: {stale[0]!r}): request_embeddings is older "
            "than model_requests or the model's weights. Materialize the partition again from "
            "request_embeddings on (the daily job runs them all)"
        )
    return requests


@dg.asset(deps=["exact_lookups"], kinds={"lancedb", "duckdb"}, **PARTITION_FLOW)
def request_embeddings(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """Vectors of the exact misses, through the embedding cache: no text is embedded twice."""
    partition = context.partition_key
    with open_store(infercache.locations.duckdb_path) as con:
        candidates = _semantic_candidates(con, partition)
    frames, embedded_now = [], 0
    for (embedding_model,), group in candidates.group_by(["embedding_model"], maintain_order=True):
        started = time.perf_counter()
        cache = infercache.embedding_cache(embedding_model)
        vectors, new = cache.embed(group["input"].to_list(), infercache.embedder(embedding_model))
        share = (time.perf_counter() - started) / group.height
        embedded_now += new
        frames.append(
            pl.DataFrame(
                {
                    "partition": partition,
                    "request_id": group["request_id"],
                    "text_hash": [text_hash(t) for t in group["input"].to_list()],
                    "vector": pl.Series(vectors.tolist(), dtype=pl.List(pl.Float32)),
                    "lookup_seconds": share,
                    "model_fingerprint": cache.model_fingerprint,
                }
            )
        )
    result = pl.concat(frames) if frames else pl.DataFrame()
    with open_store(infercache.locations.duckdb_path) as con:
        replace_partition(con, "request_embeddings", partition, result)
    return dg.MaterializeResult(
        metadata={
            "texts": candidates.height,
            "embedded_now": embedded_now,
            "served_from_embedding_cache": candidates.height - embedded_now,
        }
    )


@dg.asset(deps=["request_embeddings"], kinds={"lancedb", "duckdb"}, **PARTITION_FLOW)
def semantic_lookups(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """Nearest cached request under a hard prefilter (same tenant, namespace, model, version,
    params and prefix); served only at or above the namespace's threshold."""
    partition = context.partition_key
    now = infercache.now()
    frames = []
    with open_store(infercache.locations.duckdb_path) as con:
        candidates = con.sql(
            """
            SELECT r.request_id, r.input, r.canonical_request, r.semantic_scope,
                   r.semantic_threshold, r.semantic_verify, r.semantic_verify_threshold,
                   r.embedding_model, m.vector, m.text_hash, m.model_fingerprint
            FROM model_requests r
            JOIN exact_lookups e USING (partition, request_id)
            LEFT JOIN request_embeddings m USING (partition, request_id)
            WHERE r.partition = ? AND NOT e.hit AND r.semantic_enabled
            ORDER BY r.request_id
            """,
            params=[partition],
        ).pl()
        candidates = current_embeddings(candidates, partition, infercache.embedding_fingerprint).drop(
            "text_hash", "model_fingerprint"
        )
        settings = infercache.settings()
        _require_current_versions(con, partition, settings)
        settings_changed = settings_changed_since_keying(con, partition, settings)
        for changed in settings_changed:
            context.log.warning(changed)
        backfilled = index_entries_without_vectors(
            con,
            settings,
            partition,
            now,
            index_of=infercache.semantic_index,
            embed=infercache.embed_through_cache,
            limit=infercache.vector_backfill_limit,
        )
        if backfilled.entries_awaiting_vectors:
            context.log.info(
                f"{backfilled.entries_awaiting_vectors} stored entries still have no vector: at most "
                f"{infercache.vector_backfill_limit} per embedding model are indexed a run, the rest later"
            )
        verifier = infercache.pair_verifier_for(candidates)
        for (embedding_model,), group in candidates.group_by(["embedding_model"], maintain_order=True):
            started = time.perf_counter()
            vectors = np.asarray(group["vector"].to_list(), dtype=np.float32)
            found = lookup_semantic(
                con,
                infercache.semantic_index(embedding_model),
                group,
                vectors,
                now,
                verify=verifier.score if verifier else None,
                before_partition=partition,
            )
            share = (time.perf_counter() - started) / group.height
            frames.append(found.with_columns(lookup_seconds=pl.lit(share)))
        result = pl.concat(frames) if frames else pl.DataFrame()
        served = result.filter("hit")["served_key"].to_list() if result.height else []
        record_hits(con, served, now, replacing=served_keys_of(con, "semantic_lookups", partition))
        if result.height:
            result = result.with_columns(partition=pl.lit(partition))
        replace_partition(con, "semantic_lookups", partition, result)
    hits = int(result["hit"].sum()) if result.height else 0
    return dg.MaterializeResult(
        metadata={
            "searched": candidates.height,
            "semantic_hits": hits,
            "semantic_hit_rate_of_searched": hits / candidates.height if candidates.height else None,
            **verifier_counts(verifier),
            "settings_changed_since_keying": settings_changed,
            **backfilled.as_metadata(),
        }
    )
