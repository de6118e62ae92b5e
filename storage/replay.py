"""Replaying a labelled workload through the cache's own look-up path, to measure it.

Rows are {"text", "group"}; rows of one group have the same right answer. Each row
is looked up (exact, then semantic with verification) against everything the rows
before it inserted, and inserted on a miss, exactly as a one-by-one replay would. A row
the pipeline would give exact matching only (its language, its length: `skip_reasons`)
gets exact matching only here too, and its entry is not searched semantically;
the work is done in blocks (one exact join, one embedding call, one batched vector
search and one verifier call per block) with the sequential order kept by
resolve_lookalikes: each row is offered the CANDIDATES_PER_QUERY nearest of the entries
stored before it (earlier blocks' and its own block's), and a repeated request is
resolved again where its first copy stored nothing, so the counts do not depend on the
block size.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from storage.config import ConfigError, NamespaceSettings
from storage.embedding_cache import EmbeddingCache
from storage.exact_store import lookup_exact, open_store, write_entries
from storage.keys import RequestIdentity, cache_key, canonical_request, semantic_scope
from storage.lookalikes import Resolution, Verify, resolve_within_scopes
from storage.safe_files import replace_file
from storage.scope_search import cosines
from storage.semantic_index import CANDIDATES_PER_QUERY, SemanticIndex
from storage.semantic_lookup import cached_candidates

REPLAY_MODEL = "evaluation-replay"
BLOCK_SIZE = 256
# Beside a kept store's DuckDB file: the settings each tenant namespace's entries were
# replayed under, for they decide which entries got a vector and under what scope.
REPLAYED_UNDER_FILE = "replayed_under.json"


@dataclass(frozen=True)
class WrongHit:
    """A request served an entry of another group: what was asked, what answered it."""

    request: str
    request_group: str
    served: str
    served_group: str
    cosine: float


@dataclass(frozen=True)
class SkippedRequest:
    """A request that got exact matching only, and why (as the pipeline says it)."""

    request: str
    reason: str


# Why each text gets exact matching only (None: semantic reuse applies to it).
SkipReasons = Callable[[list[str]], list[str | None]]
# The language each text's semantic scope holds (None: none), where the namespace keeps
# answers to one language (storage.semantic_coverage.semantic_decisions).
ScopeLanguages = Callable[[list[str]], list[str | None]]
# How many skipped requests a report shows; the count covers them all.
SKIPPED_EXAMPLES = 10


@dataclass(frozen=True)
class ReplayStores:
    duckdb_path: Path
    lance_folder: Path


def replay_workload(
    rows: list[dict],
    namespace: NamespaceSettings,
    stores: ReplayStores,
    embed: Callable[[list[str]], np.ndarray],
    dimension: int,
    verify: Verify | None,
    tenant: str = "evaluation",
    block_size: int = BLOCK_SIZE,
    wrong_hits: list[WrongHit] | None = None,
    skip_reasons: SkipReasons | None = None,
    model_fingerprint: str | None = None,
    scope_languages: ScopeLanguages | None = None,
    replayed_under: dict | None = None,
) -> dict:
    """Counts of the replay; see `evaluate` in the README for each figure. Where
    `wrong_hits` is a list, every wrong semantic hit counted is appended to it, in the
    order served, for a person to read. `skip_reasons` decides which requests get exact
    matching only, as the pipeline's keying does (None: every request is looked up
    semantically where the namespace allows it). `model_fingerprint` refuses a store whose
    vector tables other weights filled under the same model name. `scope_languages` puts
    each text's language in its semantic scope, as the pipeline's keying does where the
    namespace keeps answers to one language (None: no language in the scope).
    `replayed_under` (what decides which entries get a vector, and under what scope) is
    recorded beside the store; a store whose entries of this tenant namespace were replayed
    under other settings is refused, since they would be searched otherwise than the
    entries this replay stores."""
    started = time.perf_counter()
    semantic = namespace.semantic
    embedding_cache = EmbeddingCache(
        stores.lance_folder, semantic.embedding_model, dimension, model_fingerprint
    )
    index = SemanticIndex(
        stores.lance_folder, semantic.embedding_model, dimension, model_fingerprint=model_fingerprint
    )
    counts = {"exact_hits": 0, "semantic_hits": 0, "right_semantic_hits": 0, "recall_denominator": 0}
    with open_store(stores.duckdb_path) as con:
        replay = _Replay(
            con,
            index,
            embedding_cache,
            namespace,
            embed,
            verify,
            tenant,
            counts,
            wrong_hits,
            skip_reasons,
            scope_languages,
        )
        [(pipeline_rows,)] = con.execute(
            "SELECT (SELECT count(*) FROM cache_entries WHERE model <> ?)"
            " + (SELECT count(*) FROM model_requests)",
            [REPLAY_MODEL],
        ).fetchall()
        if pipeline_rows:
            # Its entries would sit beside the pipeline's, count against their namespaces'
            # capacity and could evict what the pipeline paid for.
            raise ConfigError(
                f"the store {stores.duckdb_path.parent} is a pipeline's (it holds {pipeline_rows} "
                "entries or requests of its own): a replay writes its entries into the store it "
                "is given, so give a folder of its own to --store"
            )
        stored_before, stored_groups = _stored_entries(con, tenant, namespace.name)
        recorded = _replayed_under(stores)
        record_key = json.dumps([tenant, namespace.name])
        if replayed_under is not None and stored_before and recorded.get(record_key) != replayed_under:
            raise ConfigError(
                f"the store {stores.duckdb_path.parent} holds {stored_before} entries of namespace "
                f"{namespace.name!r} for tenant {tenant!r} replayed under other settings "
                f"({recorded.get(record_key) or 'not recorded'}; this replay: {replayed_under}): "
                "they would not be searched as this replay's entries are; give another --store, "
                "or the settings they were replayed under"
            )
        # A kept store (evaluate --store) may hold entries of an earlier replay: their groups
        # already have an entry, so a request of one of them counts in recall's denominator.
        replay.groups_with_entry.update(stored_groups)
        for start in range(0, len(rows), block_size):
            _replay_block(replay, rows[start : start + block_size], start)
    if replayed_under is not None:
        recorded[record_key] = replayed_under
        replace_file(stores.duckdb_path.parent / REPLAYED_UNDER_FILE, json.dumps(recorded, indent=1) + "\n")
    seconds = time.perf_counter() - started
    requests = len(rows)
    semantic_hits = counts["semantic_hits"]
    wrong = semantic_hits - counts["right_semantic_hits"]
    return {
        "requests": requests,
        "exact_hits": counts["exact_hits"],
        "semantic_hits": semantic_hits,
        "right_semantic_hits": counts["right_semantic_hits"],
        "wrong_hits": wrong,
        "precision": _ratio(counts["right_semantic_hits"], semantic_hits),
        "recall": _ratio(counts["right_semantic_hits"], counts["recall_denominator"]),
        "recall_denominator": counts["recall_denominator"],
        "wrong_per_1000": _ratio(1000 * wrong, requests),
        # Looked up exactly only, though the namespace reuses semantically (their language,
        # their length); they count in recall's denominator like any other miss.
        "semantic_skipped": len(replay.skipped),
        "semantic_skipped_examples": [
            dataclasses.asdict(skipped) for skipped in replay.skipped[:SKIPPED_EXAMPLES]
        ],
        "lookups_per_s": _ratio(requests, seconds),
        "seconds": seconds,
        # Entries of this tenant namespace a kept store held before the replay (evaluate --store).
        "entries_stored_before": stored_before,
    }


def _wrong_hits(
    block: list[dict],
    semantic_rows: list[int],
    vectors: np.ndarray,
    resolutions: dict[int, Resolution],
    wrong: list[int],
    served_group: Callable[[Resolution], str],
) -> list[WrongHit]:
    """The block's wrong hits, from count_block's rows served one; `vectors` are the rows
    looked up semantically (normalised), in semantic_rows' order."""
    position = {row: n for n, row in enumerate(semantic_rows)}
    found = []
    for row in wrong:
        resolution = resolutions[row]
        if resolution.external is not None:
            served, cosine = resolution.external.text, resolution.external.similarity
        else:  # an earlier row of the block that made its own call
            served = block[semantic_rows[resolution.leader_row]]["text"]
            cosine = float(cosines(vectors[[position[row]]], vectors[[resolution.leader_row]])[0, 0])
        found.append(
            WrongHit(block[row]["text"], block[row]["group"], served, served_group(resolution), cosine)
        )
    return found


def _stored_entries(con: duckdb.DuckDBPyConnection, tenant: str, namespace: str) -> tuple[int, set[str]]:
    """How many replay entries the store already holds under this tenant and namespace, and
    their groups (each entry's answer is its group)."""
    [(count, groups)] = con.execute(
        """
        SELECT count(*), list(DISTINCT json_extract_string(answer_json, '$.group'))
        FROM cache_entries
        WHERE tenant = $tenant AND namespace = $namespace AND model = $model
        """,
        {"tenant": tenant, "namespace": namespace, "model": REPLAY_MODEL},
    ).fetchall()
    return count, set(groups or [])


def _replayed_under(stores: ReplayStores) -> dict:
    path = stores.duckdb_path.parent / REPLAYED_UNDER_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _identity(namespace: str, tenant: str, text: str) -> RequestIdentity:
    return RequestIdentity(tenant, namespace, REPLAY_MODEL, "1", {}, "", text)


def replay_key(namespace: str, tenant: str, text: str) -> bytes:
    """The cache key a replay stores `text` under: on equal similarity, candidates are
    ordered by it (as the look-up orders them), so an in-memory replay that means to count
    as this one does orders its ties by it too."""
    return cache_key(canonical_request(_identity(namespace, tenant, text)))


@dataclass
class _Replay:
    """What every block of one replay reads and adds to."""

    con: duckdb.DuckDBPyConnection
    index: SemanticIndex
    embedding_cache: EmbeddingCache
    namespace: NamespaceSettings
    embed: Callable[[list[str]], np.ndarray]
    verify: Verify | None
    tenant: str
    counts: dict
    wrong_hits: list[WrongHit] | None
    skip_reasons: SkipReasons | None
    scope_languages: ScopeLanguages | None = None
    groups_with_entry: set[str] = field(default_factory=set)
    skipped: list[SkippedRequest] = field(default_factory=list)


def _replay_block(replay: _Replay, block: list[dict], offset: int) -> None:
    con, index, embedding_cache = replay.con, replay.index, replay.embedding_cache
    namespace, tenant, verify = replay.namespace, replay.tenant, replay.verify
    semantic = namespace.semantic
    identities = [_identity(namespace.name, tenant, row["text"]) for row in block]
    canonical = [canonical_request(x) for x in identities]
    keys = [cache_key(c) for c in canonical]
    texts_of_block = [row["text"] for row in block]
    languages = replay.scope_languages(texts_of_block) if replay.scope_languages else [None] * len(block)
    scopes = [
        semantic_scope(x, semantic.embedding_model, language)
        for x, language in zip(identities, languages, strict=True)
    ]
    requests = pl.DataFrame(
        {
            "request_id": [f"{offset + i:09d}" for i in range(len(block))],
            "key": keys,
            "canonical_request": canonical,
            "semantic_scope": scopes,
            "input": [row["text"] for row in block],
        },
        schema_overrides={"key": pl.Binary},
    )
    now = datetime.now(UTC).replace(tzinfo=None)
    exact = lookup_exact(con, requests, now)
    stored_answer = dict(zip(exact["request_id"], exact["answer_json"], strict=True))
    stored = [bool(stored_answer[request_id]) for request_id in requests["request_id"]]
    unique_rows = rows_to_resolve(keys, stored)
    first_rows, skipped = _split_off_skipped(replay, block, unique_rows) if semantic.enabled else ([], [])
    replay.skipped += skipped
    semantic_rows, copy_of = with_copies(keys, first_rows)
    resolutions = {}
    if semantic_rows:
        texts = [block[i]["text"] for i in semantic_rows]
        vectors, _ = embedding_cache.embed(texts, replay.embed)
        externals = cached_candidates(con, index, requests[semantic_rows], vectors, now)
        resolved = resolve_within_scopes(
            [scopes[i] for i in semantic_rows],
            vectors,
            texts,
            [semantic.threshold] * len(texts),
            verify if semantic.verify else None,
            [semantic.verify_threshold] * len(texts),
            externals=externals,
            nearest=CANDIDATES_PER_QUERY,
            copy_of=copy_of,
            row_keys=[keys[i] for i in semantic_rows],
        )
        resolutions = dict(zip(semantic_rows, resolved, strict=True))
    else:
        vectors = np.zeros((0, embedding_cache.dimension), dtype=np.float32)

    def served_group(resolution: Resolution) -> str:
        if resolution.external is not None:
            return json.loads(resolution.external.ref[1])["group"]
        return block[semantic_rows[resolution.leader_row]]["group"]

    groups = [row["group"] for row in block]
    wrong: list[int] | None = [] if replay.wrong_hits is not None else None
    inserted = count_block(
        keys, groups, stored, resolutions, served_group, replay.counts, replay.groups_with_entry, wrong
    )
    if replay.wrong_hits is not None:
        replay.wrong_hits += _wrong_hits(block, semantic_rows, vectors, resolutions, wrong, served_group)

    if inserted:
        entries = pl.DataFrame(
            {
                "key": [keys[i] for i in inserted],
                "tenant": tenant,
                "namespace": namespace.name,
                "model": REPLAY_MODEL,
                "model_version": "1",
                "canonical_request": [canonical[i] for i in inserted],
                "input_text": [block[i]["text"] for i in inserted],
                "answer_json": [json.dumps({"group": block[i]["group"]}) for i in inserted],
                "created_at": now,
                "expires_at": datetime(9999, 1, 1),
                "last_hit_at": None,
                "hit_count": 0,
                "size_bytes": [len(canonical[i]) for i in inserted],
                "device_seconds": 0.0,
                "source_partition": None,
            },
            schema_overrides={
                "key": pl.Binary,
                "last_hit_at": pl.Datetime("us"),
                "source_partition": pl.String,
            },
        )
        write_entries(con, entries)
        position = {row: n for n, row in enumerate(semantic_rows)}
        # A request that got exact matching only is not searched for semantically either.
        searchable = [i for i in inserted if i in position]
        if searchable:
            index.add(
                requests[searchable].with_columns(
                    tenant=pl.lit(tenant),
                    namespace=pl.lit(namespace.name),
                    model=pl.lit(REPLAY_MODEL),
                    model_version=pl.lit("1"),
                ),
                vectors[[position[i] for i in searchable]],
                partition=None,
            )


def _split_off_skipped(
    replay: _Replay, block: list[dict], unique_rows: list[int]
) -> tuple[list[int], list[SkippedRequest]]:
    """The rows to look up semantically (those the pipeline would not give exact matching
    only), and the others with their reasons, for the report."""
    if replay.skip_reasons is None or not unique_rows:
        return unique_rows, []
    reasons = replay.skip_reasons([block[i]["text"] for i in unique_rows])
    looked_up = [i for i, reason in zip(unique_rows, reasons, strict=True) if reason is None]
    skipped = [
        SkippedRequest(block[i]["text"], reason)
        for i, reason in zip(unique_rows, reasons, strict=True)
        if reason is not None
    ]
    return looked_up, skipped


def _first_rows(keys: list) -> dict:
    """Each distinct key's first row in the block."""
    first_row: dict = {}
    for i, key in enumerate(keys):
        first_row.setdefault(key, i)
    return first_row


def rows_to_resolve(keys: list, stored: list[bool]) -> list[int]:
    """The rows of a block that miss the exact store: each distinct key once, at its first
    row, unless the store already holds it (an exact hit). They are looked up semantically
    unless the pipeline would give their text exact matching only."""
    first_row = _first_rows(keys)
    return [i for i, key in enumerate(keys) if first_row[key] == i and not stored[i]]


def with_copies(keys: list, first_rows: list[int]) -> tuple[list[int], list[int | None]]:
    """The rows to resolve semantically: `first_rows` (a key's first row each) and every
    later row of the same keys, in block order; and for each, the position in that list of
    its key's first row (None for the first row itself). A later copy is resolved on its
    own: where its first row was served by another entry, nothing was stored under its key,
    and the entries stored in between may answer it otherwise (resolve_lookalikes' copy_of)."""
    looked_up = {keys[i] for i in first_rows}
    rows = [i for i, key in enumerate(keys) if key in looked_up]
    position_of_first: dict = {}
    copy_of: list[int | None] = []
    for position, i in enumerate(rows):
        copy_of.append(position_of_first.get(keys[i]))
        position_of_first.setdefault(keys[i], position)
    return rows, copy_of


def count_block(
    keys: list,
    groups: list[str],
    stored: list[bool],
    resolutions: dict[int, Resolution],
    served_group: Callable[[Resolution], str],
    counts: dict,
    groups_with_entry: set[str],
    wrong: list[int] | None = None,
) -> list[int]:
    """Count one block's rows as a one-by-one replay would, and return the rows it inserts.

    `resolutions` holds the semantic look-up of each row of with_copies' that had one. A
    row without one (exact matching only) misses and inserts, and a later copy of its key
    in the block is an exact hit; a row `identical` to an earlier one that inserted is an
    exact hit. Where `wrong` is a list, each row served a wrong semantic hit is appended.
    """
    first_row = _first_rows(keys)
    inserted: list[int] = []
    for i, group in enumerate(groups):
        if stored[i]:
            counts["exact_hits"] += 1
            continue
        resolution = resolutions.get(i)
        if resolution is None and first_row[keys[i]] < i or resolution is not None and resolution.identical:
            counts["exact_hits"] += 1  # the same request was inserted by an earlier row of the block
            continue
        if group in groups_with_entry:
            counts["recall_denominator"] += 1
        if resolution is not None and not resolution.is_leader:
            right = served_group(resolution) == group
            counts["semantic_hits"] += 1
            counts["right_semantic_hits"] += right
            if not right and wrong is not None:
                wrong.append(i)
            continue
        inserted.append(i)
        groups_with_entry.add(group)
    return inserted
