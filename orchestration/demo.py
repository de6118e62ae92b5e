"""`infercache demo`: write the sample workload, materialize its days through Dagster, report."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import dagster as dg

from orchestration.definitions import daily_partition_job, defs
from orchestration.resources import InferCacheResource
from orchestration.sample_workload import DEMO_DAYS, DEMO_NAMESPACES, DEMO_TENANTS, write_landing
from storage.exact_store import clear_namespace, open_store
from storage.outcomes import partition_report
from storage.wrong_answers import withdraw_namespace_reports

# Step-by-step debug lines drown the report; warnings and errors still show.
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

REPORT_COLUMNS = (
    "partition",
    "requests",
    "quarantined",
    "exact_hits",
    "semantic_hits",
    "folded",
    "model_calls",
    "failed",
    "hit_rate",
    "device_seconds_used",
    "device_seconds_saved",
)


def reset_demo_namespaces(infercache: InferCacheResource) -> None:
    """Start the demo's own namespaces afresh so its figures are reproducible."""
    settings = infercache.settings()
    with open_store(infercache.locations.duckdb_path) as con:
        for tenant in DEMO_TENANTS:
            for namespace in DEMO_NAMESPACES:
                clear_namespace(con, tenant, namespace)
                withdraw_namespace_reports(con, tenant, namespace)
    # The indexes the demo's namespaces use (not every registered model: each would load).
    for name in sorted({settings.namespace(ns).semantic.embedding_model for ns in DEMO_NAMESPACES}):
        index = infercache.semantic_index(name)
        for tenant in DEMO_TENANTS:
            for namespace in DEMO_NAMESPACES:
                index.delete_namespace(tenant, namespace)


def run_demo(infercache: InferCacheResource, instance: dg.DagsterInstance) -> list[dict[str, Any]]:
    write_landing(infercache.locations.landing_root)
    reset_demo_namespaces(infercache)
    reports = []
    settings = infercache.settings()
    prices = settings.prices()
    job = defs().resolve_job_def(daily_partition_job.name)
    for day in DEMO_DAYS:
        started = time.perf_counter()
        # Dagster and the libraries print progress; stdout is kept for the report alone.
        with contextlib.redirect_stdout(sys.stderr):
            result = job.execute_in_process(
                partition_key=day,
                instance=instance,
                resources={"infercache": infercache},
                tags={"infercache/source": "demo"},
                run_config=QUIET_LOGS,
                raise_on_error=False,
            )
        print(f"materialized {day} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        if not result.success:
            raise RuntimeError(f"the demo's materialization of {day} failed: see the log above")
        with open_store(infercache.locations.duckdb_path, read_only=True) as con:
            reports.append(partition_report(con, day, prices))
    return reports


def format_table(reports: list[dict[str, Any]]) -> str:
    def cell(value: Any) -> str:
        if value is None:
            return "-"
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    rows = [list(REPORT_COLUMNS)] + [[cell(r[c]) for c in REPORT_COLUMNS] for r in reports]
    widths = [max(len(row[i]) for row in rows) for i in range(len(REPORT_COLUMNS))]
    return "\n".join("  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in rows)
