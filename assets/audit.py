"""A partition's audit: answers served from another request, recomputed and compared."""

import dagster as dg
import polars as pl

from assets.partitions import STORE_POOL, daily_partitions
from inference.miss_runner import answer_misses
from orchestration.resources import InferCacheResource
from storage.audits import audit_figures, audit_sample, compared
from storage.exact_store import open_store, replace_partition
from storage.wrong_answers import report_wrong_answer

_CALL_COLUMNS = ["request_id", "key", "model", "model_version", "params_json", "prefix", "input"]


@dg.asset(
    deps=["cache_report"],
    partitions_def=daily_partitions,
    pool=STORE_POOL,
    group_name="partition_flow",
    kinds={"torch", "duckdb"},
)
def semantic_audit(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """Each namespace's `semantic.audit_rate` of the answers that came from another request
    (semantic, folded), recomputed with the model; a different label is reported as a
    wrong answer (storage/wrong_answers.py), so a re-run of the partition recomputes it."""
    partition = context.partition_key
    settings = infercache.settings()
    now = infercache.now()

    def audit_rate(tenant: str, namespace: str) -> float:
        return settings.namespace(namespace, tenant).semantic.audit_rate

    with open_store(infercache.locations.duckdb_path) as con:
        sample = audit_sample(con, partition, audit_rate)
    recomputed = answer_misses(sample.select(_CALL_COLUMNS), infercache.backend)
    audits = compared(sample, recomputed)
    disagreed = audits.filter(pl.col("agreed").not_())
    with open_store(infercache.locations.duckdb_path) as con:
        replace_partition(con, "semantic_audits", partition, audits.with_columns(partition=pl.lit(partition)))
        for request_id, served, fresh in disagreed.select(
            "request_id", "served_answer_json", "audit_answer_json"
        ).iter_rows():
            note = f"audit: the model answers {fresh}, the cache served {served}"
            report_wrong_answer(con, partition, request_id, note, now)
    figures = audit_figures(audits)
    return dg.MaterializeResult(metadata={**figures, "reported_wrong": disagreed.height})
