"""Reporting a wrong answer from the Dagster UI, not only from the CLI.

The job `report_wrong_answer` (Launchpad config: partition, request_id, an optional note,
withdraw, recompute) records or withdraws a report as `infercache report-wrong` does
(storage/wrong_answers.py), and fails with the same explanation where the request cannot be
reported or there is nothing to withdraw. Once a report succeeds, the sensor
`recompute_after_report` re-runs that partition from `semantic_lookups` on (for a report run
while no daemon ran, as soon as one runs), so the report takes effect without a second
action: the reported request gets its answer recomputed, and the partition's report and
audit are redone. A recompute calls the model again for all of
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


# Successful runs read per tick; more wait for the next tick (the cursor is the last one read).
RUN_SUCCESSES_PER_TICK = 200


@dg.sensor(
    job=recompute_from_semantic_lookups,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
def recompute_after_report(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One recompute per partition with new successful reports since the last tick.

    A plain sensor over the run-status event log, not a run-status sensor: that one starts
    from its first tick, so a report made while no daemon ran (`dagster job execute`, or a
    daemon that was down) would never be recomputed. This one reads the event log from the
    beginning, or from its cursor (the last event's storage id), so every report is caught
    up on once the daemon runs again. Several reports of one partition read in one tick make
    one recompute: the last report's run id is its run key and tag.
    """
    changes = context.instance.fetch_run_status_changes(
        dg.RunStatusChangeRecordsFilter(
            event_type=dg.DagsterEventType.RUN_SUCCESS,
            after_storage_id=int(context.cursor) if context.cursor else None,
        ),
        limit=RUN_SUCCESSES_PER_TICK,
        ascending=True,
    )
    if not changes.records:
        return dg.SensorResult(skip_reason="no run succeeded since the last tick")
    # The event log's filter by job name is not supported by every run storage (SQLite's
    # is not), so the successes of all jobs are read and the report runs kept here.
    report_run_ids = [
        record.event_log_entry.run_id
        for record in changes.records
        if record.event_log_entry.job_name == report_wrong_answer.name
    ]
    latest_report_of: dict[str, str] = {}  # partition -> run id, in order of success
    skipped = []
    for run_id in report_run_ids:
        report_run = context.instance.get_run_by_id(run_id)
        if report_run is None:  # deleted from the run history since it succeeded
            continue
        config = WrongAnswerReport(**report_run.run_config["ops"][REPORT_OP]["config"])
        if config.withdraw or not config.recompute:
            why = "a withdrawal" if config.withdraw else "recompute: false"
            skipped.append(f"{report_run.run_id} ({why})")
            continue
        latest_report_of.pop(config.partition, None)
        latest_report_of[config.partition] = report_run.run_id
    if skipped:
        context.log.info(f"nothing to recompute for report run(s) {', '.join(skipped)}")
    # A run key is used once, however often the sensor is evaluated over the same runs.
    run_requests = [
        dg.RunRequest(run_key=run_id, partition_key=partition, tags={"infercache/report_run": run_id})
        for partition, run_id in latest_report_of.items()
    ]
    return dg.SensorResult(run_requests=run_requests, cursor=str(changes.records[-1].storage_id))


AUDIT_ASSET = dg.AssetKey("semantic_audit")
AUDIT_RUN_TAG = "infercache/audit_run"


@dg.sensor(
    job=recompute_from_semantic_lookups,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
def recompute_after_audit(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One recompute per partition whose audit reported answers the model gives otherwise.

    The audit (assets/audit.py) files a wrong-answer report for each served answer whose
    label the model does not give; this re-runs the partition from `semantic_lookups` on, so
    those requests get their own answers the same day, without a reviewer. The recompute's
    own audit finds nothing new where the model answers alike each time; where it does find
    more (a model whose answers vary between calls), it is not recomputed again by itself:
    one automatic recompute per audit, the rest is a reviewer's call.
    """
    changes = context.instance.fetch_materializations(
        AUDIT_ASSET, limit=RUN_SUCCESSES_PER_TICK, cursor=context.cursor, ascending=True
    )
    if not changes.records:
        return dg.SensorResult(skip_reason="no audit since the last tick")
    latest_audit_of: dict[str, str] = {}  # partition -> run id, in order of audit
    for record in changes.records:
        reported = record.asset_materialization.metadata.get("reported_now")
        if reported is None or not reported.value or record.partition_key is None:
            continue
        audit_run = context.instance.get_run_by_id(record.run_id)
        if audit_run is None or AUDIT_RUN_TAG in audit_run.tags:
            continue
        latest_audit_of.pop(record.partition_key, None)
        latest_audit_of[record.partition_key] = record.run_id
    run_requests = [
        dg.RunRequest(run_key=f"audit:{run_id}", partition_key=partition, tags={AUDIT_RUN_TAG: run_id})
        for partition, run_id in latest_audit_of.items()
    ]
    return dg.SensorResult(run_requests=run_requests, cursor=changes.cursor)
