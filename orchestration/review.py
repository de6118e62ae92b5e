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
import json
import os
import shlex
from pathlib import Path

import dagster as dg
from pydantic import Field, ValidationError

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


def recompute_command(partition: str, home: str) -> str:
    """The command line that does what `recompute_from_semantic_lookups` does, outside the UI:
    on the store under `home` (INFERCACHE_HOME: without it, the command run from another
    folder recomputed that folder's store, a new and empty one, and the instance then counted
    the partition as recomputed), under this process's DAGSTER_HOME, so that its steps take
    turns with the instance's runs (its store pool); without it the command runs beside them."""
    instance = os.environ.get("DAGSTER_HOME")
    prefix = f"INFERCACHE_HOME={shlex.quote(str(Path(home).resolve()))} "
    prefix += f"DAGSTER_HOME={shlex.quote(instance)} " if instance else ""
    return (
        f"{prefix}dagster asset materialize -m orchestration.definitions --select 'semantic_lookups*' "
        f"--partition {shlex.quote(partition)}"
    )


recompute_from_semantic_lookups = dg.define_asset_job(
    "recompute_from_semantic_lookups",
    selection=dg.AssetSelection.assets("semantic_lookups").downstream(),
    partitions_def=daily_partitions,
    description="Recompute one partition's answers from the semantic look-up on (after a report)",
)


# Events read at once, and reads per tick: a long history is caught up on 2,000 a tick.
EVENTS_PER_READ = 200
READS_PER_TICK = 10
LOOKUP_ASSET = dg.AssetKey("semantic_lookups")
AUDIT_ASSET = dg.AssetKey("semantic_audit")
REPORT_RUN_TAG = "infercache/report_run"
AUDIT_RUN_TAG = "infercache/audit_run"


def _last_storage_id(cursor: str | None) -> int | None:
    """The last event a sensor read: its cursor, or the record id in the JSON cursor of the
    run-status sensor that `recompute_after_report` replaced under the same name (the
    daemon keeps a sensor's cursor, and its run keys, by name)."""
    if not cursor:
        return None
    try:
        return int(cursor)
    except ValueError:
        return int(json.loads(cursor)["record_id"])


def _events_since(fetch, records_filter, after_storage_id: int | None) -> list:
    """The events after `after_storage_id`, oldest first, in reads of EVENTS_PER_READ."""
    records = []
    for _ in range(READS_PER_TICK):
        read = fetch(records_filter(after_storage_id), limit=EVENTS_PER_READ, ascending=True)
        records.extend(read.records)
        if not read.has_more or not read.records:
            break
        after_storage_id = read.records[-1].storage_id
    return records


def _recomputed_since(instance: dg.DagsterInstance, partition: str, storage_id: int) -> bool:
    """Whether the partition's semantic look-up was materialized after that event: a recompute
    (by hand, or by an earlier tick) already took in what the event asked for."""
    latest = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=LOOKUP_ASSET, asset_partitions=[partition]), limit=1
    ).records
    return bool(latest) and latest[0].storage_id > storage_id


def _recomputes(
    context: dg.SensorEvaluationContext,
    asked: list[tuple[str, str, int]],
    last_read: int,
    key_prefix: str,
    tag: str,
) -> dg.SensorResult:
    """One recompute per partition in `asked` ((partition, run id, event storage id), oldest
    first), keyed by the partition's latest run there, unless it was recomputed since; the
    cursor moves to `last_read`."""
    latest_of: dict[str, tuple[str, int]] = {}
    for partition, run_id, storage_id in asked:
        latest_of.pop(partition, None)  # keep the order of the latest ask
        latest_of[partition] = (run_id, storage_id)
    requests = []
    for partition, (run_id, storage_id) in latest_of.items():
        if _recomputed_since(context.instance, partition, storage_id):
            context.log.info(f"{partition} was recomputed after run {run_id}: nothing to do")
            continue
        # A run key is launched once by the daemon, however often the same runs are read.
        run_key = key_prefix + run_id
        requests.append(dg.RunRequest(run_key=run_key, partition_key=partition, tags={tag: run_id}))
    return dg.SensorResult(run_requests=requests, cursor=str(last_read))


@dg.sensor(
    job=recompute_from_semantic_lookups,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
def recompute_after_report(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One recompute per partition with new successful reports since the last tick.

    A plain sensor over the run-status event log, not a run-status sensor: that one starts
    from its first tick, so a report made while no daemon ran (`dagster job execute` on the
    same DAGSTER_HOME, or a daemon that was down) would never be recomputed. This one reads
    the event log from the beginning, or from its cursor (the last event's storage id), so
    every report is caught up on once the daemon runs again; a partition recomputed since
    its report is left alone. Several reports of one partition read in one tick make one
    recompute: the last report's run id is its run key and tag.
    """
    records = _events_since(
        context.instance.fetch_run_status_changes,
        lambda after: dg.RunStatusChangeRecordsFilter(
            event_type=dg.DagsterEventType.RUN_SUCCESS, after_storage_id=after
        ),
        _last_storage_id(context.cursor),
    )
    if not records:
        return dg.SensorResult(skip_reason="no run succeeded since the last tick")
    asked: list[tuple[str, str, int]] = []
    # The event log's SQL storages drop a filter by job name: the successes of all jobs are
    # read, and the report runs kept here.
    for record in records:
        if record.event_log_entry.job_name != report_wrong_answer.name:
            continue
        report_run = context.instance.get_run_by_id(record.run_id)
        if report_run is None:  # deleted from the run history since it succeeded
            continue
        try:
            config = WrongAnswerReport(**report_run.run_config["ops"][REPORT_OP]["config"])
        except (KeyError, TypeError, ValidationError) as error:
            # One unreadable run must not stop the sensor at the same place every tick.
            context.log.warning(f"report run {record.run_id} passed over, its config unreadable: {error}")
            continue
        if config.withdraw or not config.recompute:
            why = "a withdrawal" if config.withdraw else "recompute: false"
            context.log.info(f"report run {record.run_id} was {why}: nothing to recompute")
            continue
        asked.append((config.partition, record.run_id, record.storage_id))
    return _recomputes(context, asked, records[-1].storage_id, "", REPORT_RUN_TAG)


@dg.sensor(
    job=recompute_from_semantic_lookups,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
def recompute_after_audit(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """One recompute per partition whose audit reported answers the model gives otherwise.

    The audit (assets/audit.py) files a wrong-answer report for each served answer whose
    label the model does not give; this re-runs the partition from `semantic_lookups` on, so
    those requests get their own answers the same day, without a reviewer. A partition
    recomputed since its audit is left alone. The recompute audits again; what its audit
    reports (a request that another cached neighbour now answers, just as wrongly, or a
    model whose answers vary between calls) is not recomputed by itself: one automatic
    recompute per audit, the rest is a reviewer's call.
    """
    records = _events_since(
        context.instance.fetch_materializations,
        lambda after: dg.AssetRecordsFilter(asset_key=AUDIT_ASSET, after_storage_id=after),
        _last_storage_id(context.cursor),
    )
    if not records:
        return dg.SensorResult(skip_reason="no audit since the last tick")
    asked: list[tuple[str, str, int]] = []
    for record in records:
        reported = record.asset_materialization.metadata.get("reported_now")
        if reported is None or not reported.value or record.partition_key is None:
            continue
        audit_run = context.instance.get_run_by_id(record.run_id)
        if audit_run is None or AUDIT_RUN_TAG in audit_run.tags:
            continue
        asked.append((record.partition_key, record.run_id, record.storage_id))
    return _recomputes(context, asked, records[-1].storage_id, "audit:", AUDIT_RUN_TAG)
