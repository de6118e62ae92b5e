"""The Dagster code location: `dagster dev -m orchestration.definitions`."""

from __future__ import annotations

import dagster as dg

from assets.answers import cache_write_back, inference_outputs
from assets.audit import semantic_audit
from assets.intake import model_requests
from assets.lookups import exact_lookups, request_embeddings, semantic_lookups
from assets.partitions import daily_partitions
from assets.report import cache_report
from orchestration.resources import infercache_resource
from orchestration.review import (
    recompute_after_audit,
    recompute_after_report,
    recompute_from_semantic_lookups,
    report_wrong_answer,
)

PARTITION_FLOW_ASSETS = [
    model_requests,
    exact_lookups,
    request_embeddings,
    semantic_lookups,
    inference_outputs,
    cache_write_back,
    cache_report,
    semantic_audit,
]

daily_partition_job = dg.define_asset_job(
    "daily_partition_job",
    selection=dg.AssetSelection.groups("partition_flow"),
    partitions_def=daily_partitions,
)

daily_partition_schedule = dg.build_schedule_from_partitioned_job(daily_partition_job, hour_of_day=2)


@dg.definitions
def defs() -> dg.Definitions:
    return dg.Definitions(
        assets=PARTITION_FLOW_ASSETS,
        jobs=[daily_partition_job, report_wrong_answer, recompute_from_semantic_lookups],
        schedules=[daily_partition_schedule],
        sensors=[recompute_after_report, recompute_after_audit],
        resources={"infercache": infercache_resource()},
    )
