"""A partition's outcome table, the answers export, and the report the UI plots."""

import dagster as dg

from assets.partitions import STORE_POOL, daily_partitions
from orchestration.resources import InferCacheResource
from storage.exact_store import open_store
from storage.outcomes import build_outcomes, partition_report

EXPORTED_COLUMNS = [
    "partition",
    "request_id",
    "tenant",
    "namespace",
    "model",
    "model_version",
    "path",
    "answer_json",
    "error",
]


@dg.asset(
    deps=["cache_write_back"],
    partitions_def=daily_partitions,
    pool=STORE_POOL,
    group_name="partition_flow",
    kinds={"duckdb", "parquet"},
)
def cache_report(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """One outcome row per request (request_outcomes), the answers as Parquet, and the figures."""
    partition = context.partition_key
    settings = infercache.settings()
    prices = settings.prices()
    with open_store(infercache.locations.duckdb_path) as con:
        outcomes = build_outcomes(con, partition)
        report = partition_report(con, partition, prices)
    export = infercache.locations.answers_export(partition)
    export.parent.mkdir(parents=True, exist_ok=True)
    outcomes.select(EXPORTED_COLUMNS).write_parquet(export)
    metadata = {key: value for key, value in report.items() if key != "partition"}
    metadata["answers_export"] = dg.MetadataValue.path(str(export))
    return dg.MaterializeResult(metadata=metadata)
