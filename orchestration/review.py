"""Reporting a wrong answer from the Dagster UI, not only from the CLI.

The job `report_wrong_answer` (Launchpad config: partition, request_id, an optional note,
withdraw, recompute) records or withdraws a report as `infercache report-wrong` does
(storage/wrong_answers.py), and fails with the same explanation where the request cannot be
reported or there is nothing to withdraw. Once a report succeeds, the sensor
`recompute_after_report` re-runs that partition from `semantic_lookups` on, so the report
takes effect without a second action: the reported request gets its answer recomputed, and
the partition's report and audit are redone. A recompute calls the model again for all of
the partition's misses, so a reviewer filing several reports on one day sets
`recompute: false` on all but the last. A withdrawal recomputes nothing: the answer the
re-run gave is the model's own and stays right; the pairing is simply free again from the
next run on.
"""

# No `from __future__ import annotations`: Dagster reads the op's config and resource types
# from its annotations at definition time.
import dagster as dg
from pydantic import Field

from assets.partitions import STORE_POOL, daily_partitions
from orchestration.resources import InferCacheResource
from storage.exact_store import open_store
from storage.wrong_answers import report_summary, withdraw_reports
from storage.wrong_answers import report_wrong_answer as record_report

REPORT_OP = "record_wrong_answer_report"


class WrongAnswerReport(dg.Config):
    partition: str = Field(description="the day whose answer was wrong, e.g. 2026-01-02")
    request_id: str = Field(description="the request's id, as in request_outcomes.request_id")
    note: str | None = Field(default=None, description="why the answer is wrong, for the record")
    withdraw: bool = Field(default=False, description="take back the reports made on this request instead")
    recompute: bool = Field(
        default=True,
        description="recompute the partition once the report is recorded (false while more reports follow)",
    )


@dg.op(name=REPORT_OP, pool=STORE_POOL)
def record_wrong_answer_report(
    context: dg.OpExecutionContext, config: WrongAnswerReport, infercache: InferCacheResource
) -> None:
    with open_store(infercache.locations.duckdb_path) as con:
        try:
            if config.withdraw:
                withdrawn = withdraw_reports(con, config.partition, config.request_id, infercache.now())
                context.log.info(
                    f"withdrew {withdrawn} report(s) on {config.request_id!r} of {config.partition}"
                )
                return
            report = record_report(con, config.partition, config.request_id, config.note, infercache.now())
        except ValueError as error:
            raise dg.Failure(str(error)) from error
    context.log.info(report_summary(report))


@dg.job(description="Report a wrong semantic or folded answer, or withdraw a report; then recompute")
def report_wrong_answer() -> None:
    record_wrong_answer_report()


def recompute_command(partition: str) -> str:
    """The command line that does what `recompute_from_semantic_lookups` does, outside the UI."""
    return (
        "dagster asset materialize -m orchestration.definitions --select 'semantic_lookups*' "
        f"--partition {partition}"
    )


recompute_from_semantic_lookups = dg.define_asset_job(
    "recompute_from_semantic_lookups",
    selection=dg.AssetSelection.assets("semantic_lookups").downstream(),
    partitions_def=daily_partitions,
    description="Recompute one partition's answers from the semantic look-up on (after a report)",
)


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[report_wrong_answer],
    request_job=recompute_from_semantic_lookups,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def recompute_after_report(context: dg.RunStatusSensorContext) -> dg.RunRequest | dg.SkipReason:
    report_run = context.dagster_run
    config = WrongAnswerReport(**report_run.run_config["ops"][REPORT_OP]["config"])
    if config.withdraw or not config.recompute:
        what = "a withdrawal" if config.withdraw else "recompute: false"
        return dg.SkipReason(f"run {report_run.run_id} was {what}: nothing to recompute")
    # One recompute per report run, however often the sensor is evaluated.
    return dg.RunRequest(
        run_key=report_run.run_id,
        partition_key=config.partition,
        tags={"infercache/report_run": report_run.run_id},
    )
