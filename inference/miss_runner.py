"""Answering the requests that missed both look-ups: fold, batch, run, account."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

from inference.base import Backend, ModelCall
from inference.batcher import DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_BATCH_TOKENS, run_calls

OUTPUT_SCHEMA = {
    "request_id": pl.String,
    "path": pl.String,
    "served_key": pl.Binary,
    "answer_json": pl.String,
    "error": pl.String,
    "device_seconds": pl.Float64,
    "batch_index": pl.Int64,
}


@dataclass(frozen=True)
class BatchLimits:
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE


def answer_json(answer: dict) -> str:
    """The stored, post-processed form of an answer: readers never re-parse model output."""
    return json.dumps(answer, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def answer_misses(
    misses: pl.DataFrame,
    backend_for: Callable[[str, str], tuple[Backend, BatchLimits]],
    lookalike_leaders: dict[bytes, bytes] | None = None,
) -> pl.DataFrame:
    """misses: request_id, key, model, model_version, params_json, prefix, input.

    Requests with the same key are folded into one call (the first by request_id
    makes it, path "model"; the rest are "folded"), and so are requests whose key
    `lookalike_leaders` maps to a look-alike's key. A failed call marks its
    requests "failed" with the error; nothing here raises for one bad request.
    A look-alike's call failing says nothing of another input (it may be the longer
    one, over the model's context): the requests folded into it make their own call.
    """
    if not misses.height:
        return pl.DataFrame(schema=OUTPUT_SCHEMA)
    ordered = misses.sort("request_id")
    leader_of = dict(lookalike_leaders or {})
    first_of_key = ordered.unique(subset="key", keep="first", maintain_order=True)
    callers = first_of_key.filter(~pl.col("key").is_in(list(leader_of)))
    results_by_key, batches = _run_keys(callers, backend_for)
    on_their_own = [key for key, leader in leader_of.items() if results_by_key[leader][1] is not None]
    if on_their_own:
        retried = first_of_key.filter(pl.col("key").is_in(on_their_own))
        retried_results, _ = _run_keys(retried, backend_for, first_batch=batches)
        results_by_key |= retried_results
        callers = pl.concat([callers, retried])
        for key in on_their_own:
            del leader_of[key]
    caller_ids = set(callers["request_id"].to_list())
    rows = []
    for row in ordered.iter_rows(named=True):
        answered_by = leader_of.get(row["key"], row["key"])
        answer, error, seconds, batch_index = results_by_key[answered_by]
        made_call = row["request_id"] in caller_ids
        if error is not None:
            path = "failed"
        else:
            path = "model" if made_call else "folded"
        rows.append(
            {
                "request_id": row["request_id"],
                "path": path,
                "served_key": answered_by if path == "folded" else None,
                "answer_json": answer,
                "error": error,
                "device_seconds": seconds if made_call else 0.0,
                "batch_index": batch_index,
            }
        )
    return pl.DataFrame(rows, schema=OUTPUT_SCHEMA, orient="row")


def _run_keys(
    callers: pl.DataFrame,
    backend_for: Callable[[str, str], tuple[Backend, BatchLimits]],
    first_batch: int = 0,
) -> tuple[dict[bytes, tuple[str | None, str | None, float, int]], int]:
    """One call per row (one row per key), batched per model: key -> (answer_json, error,
    device seconds, batch index), and the number after the last batch index used. Batches
    are numbered on from `first_batch` across models, so each batch run has its own."""
    results: dict[bytes, tuple[str | None, str | None, float, int]] = {}
    next_batch = first_batch
    for (model, version), group in callers.group_by(["model", "model_version"], maintain_order=True):
        backend, limits = backend_for(model, version)
        calls = [
            ModelCall(prefix=row["prefix"], input=row["input"], params=json.loads(row["params_json"]))
            for row in group.iter_rows(named=True)
        ]
        timed = run_calls(backend, calls, limits.max_batch_tokens, limits.max_batch_size)
        for key, outcome in zip(group["key"].to_list(), timed, strict=True):
            answer = outcome.result.answer
            results[key] = (
                answer_json(answer) if answer is not None else None,
                outcome.result.error,
                outcome.device_seconds,
                # -1: the call never reached a batch (its input could not be tokenized, or the
                # model refused it: over its context).
                next_batch + outcome.batch_index if outcome.batch_index >= 0 else -1,
            )
        next_batch += max((outcome.batch_index for outcome in timed), default=-1) + 1
    return results, next_batch
