"""A partition's audit: answers served from another request, recomputed and compared."""

import dagster as dg
import numpy as np
import polars as pl

from assets.partitions import PARTITION_FLOW
from inference.miss_runner import OUTPUT_SCHEMA, answer_misses
from orchestration.resources import InferCacheResource
from orchestration.review import recompute_command
from storage.audits import audit_figures, audit_sample, compared, disagreement_note, record_audits
from storage.config import ConfigError, Settings
from storage.exact_store import open_store, transaction
from storage.wrong_answers import report_wrong_answer

_CALL_COLUMNS = ["request_id", "key", "model", "model_version", "params_json", "prefix", "input"]


@dg.asset(deps=["cache_report"], kinds={"torch", "duckdb"}, **PARTITION_FLOW)
def semantic_audit(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """Each namespace's `semantic.audit_rate` of the answers that came from another request
    (semantic, folded), recomputed with the model; a different label (or, where the namespace
    sets `semantic.audit_min_text_similarity`, a generated text less alike than that) is
    reported as a wrong answer (storage/wrong_answers.py), and the sensor
    `recompute_after_audit` re-runs the partition, which recomputes it."""
    partition = context.partition_key
    settings = infercache.settings()

    def audit_rate(tenant: str, namespace: str) -> float:
        return settings.namespace(namespace, tenant).semantic.audit_rate

    with open_store(infercache.locations.duckdb_path) as con:
        try:
            sample = audit_sample(con, partition, audit_rate)
        except ValueError as error:
            raise dg.Failure(str(error)) from error
    current, stale = _by_registry_version(sample, settings)
    recomputed = pl.concat([answer_misses(current.select(_CALL_COLUMNS), infercache.backend), stale])

    def text_similarity(tenant: str, namespace: str, served: list[str], fresh: list[str]) -> np.ndarray:
        embed = infercache.embedder(settings.namespace(namespace, tenant).semantic.embedding_model)
        return (embed(served) * embed(fresh)).sum(axis=1)  # unit vectors: the cosine

    def min_text_similarity(tenant: str, namespace: str) -> float | None:
        return settings.namespace(namespace, tenant).semantic.audit_min_text_similarity

    audits = compared(sample, recomputed, text_similarity, min_text_similarity)
    disagreements = audits.filter(pl.col("agreed").not_())
    reported, known, overruled, now = 0, 0, 0, infercache.now()
    # The reports and the audit rows in one transaction: see storage.audits.record_audits.
    with open_store(infercache.locations.duckdb_path) as con, transaction(con):
        for request_id, served, fresh, similarity in disagreements.select(
            "request_id", "served_answer_json", "audit_answer_json", "answer_similarity"
        ).iter_rows():
            note = disagreement_note(served, fresh, similarity)
            report = report_wrong_answer(con, partition, request_id, note, now, reported_by="audit")
            if report is None:
                overruled += 1
            elif report["already_reported"]:
                # An audit run again finds what it (or a reviewer) filed before: that report
                # already asked for its recompute.
                known += 1
            else:
                reported += 1
        # Counted over what the table keeps: disagreements found before a re-run included.
        figures = audit_figures(record_audits(con, partition, audits))
    if reported:
        context.log.warning(
            f"the audit found {reported} answer(s) served from another request that the model answers "
            "differently; they are in wrong_answer_reports, and the sensor recompute_after_audit "
            f"re-runs the partition (without a daemon: `{recompute_command(partition, infercache.home)}`)"
        )
    return dg.MaterializeResult(
        metadata={
            **figures,
            "reported_now": reported,
            "reported_before": known,
            "overruled_by_reviewer": overruled,
        }
    )


def _by_registry_version(sample: pl.DataFrame, settings: Settings) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The sampled requests whose model version is still the registry's, and, for the rest,
    rows in answer_misses' shape that say why they were not recomputed."""
    reasons = []
    for model, version in sample.select("model", "model_version").iter_rows():
        try:
            registered = settings.model(model).version
        except ConfigError:
            registered = None
        stale = f"model {model!r} version {version} is not the registry's ({registered}): not recomputed"
        reasons.append(None if registered == version else stale)
    stale_rows = [
        {"request_id": request_id, "path": "failed", "error": reason, "device_seconds": 0.0}
        for request_id, reason in zip(sample["request_id"].to_list(), reasons, strict=True)
        if reason is not None
    ]
    current = sample.filter(pl.Series([reason is None for reason in reasons], dtype=pl.Boolean))
    return current, pl.DataFrame(stale_rows, schema=OUTPUT_SCHEMA)
