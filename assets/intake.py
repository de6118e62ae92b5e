"""A partition's requests: read the landing files, quarantine bad rows, key the rest."""

import dagster as dg
import polars as pl

from assets.metadata import markdown_table
from assets.partitions import STORE_POOL, daily_partitions
from orchestration.quality import validate_accepted_requests
from orchestration.resources import InferCacheResource
from storage.exact_store import open_store, replace_partition
from storage.keying import key_requests
from storage.landing import landing_entries, landing_folder, read_landing
from storage.semantic_coverage import cross_language_reuse


@dg.asset(
    partitions_def=daily_partitions,
    pool=STORE_POOL,
    kinds={"duckdb", "polars"},
    group_name="partition_flow",
    check_specs=[
        dg.AssetCheckSpec(
            "accepted_requests_valid",
            asset="model_requests",
            description="great-expectations contract on the accepted, keyed requests",
        ),
        dg.AssetCheckSpec(
            "quarantine_rate_below_5_percent",
            asset="model_requests",
            description="warns when more than 5% of the landed rows were quarantined",
        ),
    ],
)
def model_requests(context: dg.AssetExecutionContext, infercache: InferCacheResource):
    """The day's landed requests, validated and keyed; bad rows go to `quarantine` with a reason."""
    partition = context.partition_key
    settings = infercache.settings()
    folder = landing_folder(infercache.locations.landing_root, partition)
    if not landing_entries(folder):
        # A day whose files are missing is an error, not an empty day: a re-run would
        # otherwise replace the day's requests and answers with nothing.
        raise dg.Failure(
            f"no landing files for {partition}: {folder} is missing or holds no visible file. Put the day's "
            "request files (*.jsonl or *.parquet) there; for a day without requests, an empty "
            "requests.jsonl"
        )
    landed = read_landing(folder, settings)
    keyed = key_requests(landed.accepted, settings)
    cross_language = [
        warning
        for tenant, namespace in keyed.select("tenant", "namespace")
        .unique()
        .sort(["tenant", "namespace"])
        .rows()
        if (warning := cross_language_reuse(settings.namespace(namespace, tenant), settings))
    ]
    for warning in cross_language:
        context.log.warning(warning)
    with open_store(infercache.locations.duckdb_path) as con:
        replace_partition(con, "model_requests", partition, keyed.with_columns(partition=pl.lit(partition)))
        replace_partition(
            con,
            "quarantine",
            partition,
            landed.quarantined.with_columns(partition=pl.lit(partition)),
        )
    contract = validate_accepted_requests(keyed, sorted(settings.models))
    landed_rows = keyed.height + landed.quarantined.height
    quarantine_rate = landed.quarantined.height / landed_rows if landed_rows else None
    # A file that could not be read at all is one quarantine row whatever it held, so the
    # rate alone passed a day whose largest file was unreadable (a review: 2 in 42).
    unreadable_files = landed.quarantined.filter(pl.col("row_number") == 0).height
    reasons = landed.quarantined.group_by("reason").len().sort("len", descending=True)
    return dg.MaterializeResult(
        metadata={
            "accepted": keyed.height,
            "quarantined": landed.quarantined.height,
            "quarantine_rate": quarantine_rate,
            "unreadable_files": unreadable_files,
            "quarantine_reasons": markdown_table(reasons),
            "cross_language_reuse": cross_language,
        },
        check_results=[
            dg.AssetCheckResult(
                check_name="accepted_requests_valid",
                passed=contract["success"],
                metadata={"rows": contract["rows"], "failures": str(contract["failures"])},
            ),
            dg.AssetCheckResult(
                check_name="quarantine_rate_below_5_percent",
                passed=(quarantine_rate is None or quarantine_rate <= 0.05) and not unreadable_files,
                severity=dg.AssetCheckSeverity.WARN,
                metadata={"quarantine_rate": quarantine_rate, "unreadable_files": unreadable_files},
            ),
        ],
    )
