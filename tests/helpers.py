"""Builders for test rows: real keys and entries, written through the real store functions."""

from datetime import datetime, timedelta

import polars as pl

from storage.keys import RequestIdentity, cache_key, canonical_request, semantic_scope

EMBEDDER = "all-MiniLM-L6-v2"


def identity(input: str, tenant: str = "acme", **changes) -> RequestIdentity:
    fields = {
        "tenant": tenant,
        "namespace": "faq",
        "model": "tiny-llm",
        "model_version": "1",
        "params": {"temperature": 0},
        "prefix": "",
        "input": input,
    }
    return RequestIdentity(**{**fields, **changes})


def request_rows(
    identities: list[RequestIdentity],
    threshold: float = 0.9,
    verify: bool = False,
    verify_threshold: float = 0.5,
) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "request_id": [f"r{i}" for i in range(len(identities))],
            "input": [x.input for x in identities],
            "semantic_verify": [verify] * len(identities),
            "semantic_verify_threshold": [verify_threshold] * len(identities),
            "key": [cache_key(canonical_request(x)) for x in identities],
            "canonical_request": [canonical_request(x) for x in identities],
            "semantic_scope": [semantic_scope(x, EMBEDDER) for x in identities],
            "semantic_threshold": [threshold] * len(identities),
            "tenant": [x.tenant for x in identities],
            "namespace": [x.namespace for x in identities],
            "model": [x.model for x in identities],
            "model_version": [x.model_version for x in identities],
        },
        schema_overrides={"key": pl.Binary},
    )


def entry_rows(
    identities: list[RequestIdentity],
    answers: list[str],
    now: datetime,
    ttl_seconds: int = 3600,
    partition: str | None = None,
) -> pl.DataFrame:
    canonical = [canonical_request(x) for x in identities]
    return pl.DataFrame(
        {
            "key": [cache_key(c) for c in canonical],
            "tenant": [x.tenant for x in identities],
            "namespace": [x.namespace for x in identities],
            "model": [x.model for x in identities],
            "model_version": [x.model_version for x in identities],
            "canonical_request": canonical,
            "input_text": [x.input for x in identities],
            "answer_json": answers,
            "created_at": [now] * len(identities),
            "expires_at": [now + timedelta(seconds=ttl_seconds)] * len(identities),
            "last_hit_at": [None] * len(identities),
            "hit_count": [0] * len(identities),
            "size_bytes": [len(c) + len(a) for c, a in zip(canonical, answers, strict=True)],
            "device_seconds": [0.01] * len(identities),
            "source_partition": [partition] * len(identities),
        },
        schema_overrides={"key": pl.Binary, "last_hit_at": pl.Datetime("us")},
    )


def sensor_tick(sensor, instance, cursor: str | None, tag: str) -> tuple[list[tuple], str | None]:
    """One evaluation of a recompute sensor as the daemon makes it, from `cursor`: the runs it
    asks for as (partition, run key, the value of `tag`), and the cursor it leaves."""
    import dagster as dg

    from orchestration.definitions import defs

    context = dg.build_sensor_context(
        instance=instance, cursor=cursor, repository_def=defs().get_repository_def()
    )
    result = sensor.evaluate_tick(context)
    requested = [
        (request.partition_key, request.run_key, request.tags.get(tag)) for request in result.run_requests
    ]
    return requested, result.cursor


def hold_the_file(path, seconds: float):
    """Another process that holds the cache file for `seconds` (DuckDB locks it per process)."""
    import subprocess
    import sys

    script = (
        "import duckdb, sys, time\n"
        "con = duckdb.connect(sys.argv[1])\n"
        "print('held', flush=True)\n"
        "time.sleep(float(sys.argv[2]))\n"
        "con.close()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "held"
    return child
