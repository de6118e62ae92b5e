"""The outcome rows and the partition report, on a real DuckDB file."""

import duckdb
import pytest

from storage.outcomes import build_outcomes, partition_report
from storage.schema import migrate

PRICES = {"tiny-llm": 3600.0}  # a dollar a device-second: money reads as seconds


def _day(con, partition: str, rows: list[tuple[str, str, float]]) -> None:
    """Requests that missed the exact look-up, each answered by `path` at `device_seconds`."""
    for request_id, path, device_seconds in rows:
        con.execute(
            """
            INSERT INTO model_requests (partition, request_id, tenant, namespace, model,
                model_version, params_json, prefix, input, key, canonical_request,
                semantic_scope, embedding_model, semantic_enabled, semantic_threshold)
            VALUES (?, ?, 'acme', 'faq', 'tiny-llm', '1', '{}', '', ?, ?, '', '', 'm', false, 0.9)
            """,
            [partition, request_id, request_id, request_id.encode()],
        )
        con.execute("INSERT INTO exact_lookups VALUES (?, ?, false, NULL, NULL, 0)", [partition, request_id])
        con.execute(
            "INSERT INTO inference_outputs VALUES (?, ?, ?, NULL, '{}', NULL, ?, 0)",
            [partition, request_id, path, device_seconds],
        )


def test_a_days_savings_stay_as_reported_when_later_days_run(tmp_path):
    """A folded request saved one call of its model version, priced at the mean call measured
    up to its own day: before, the mean was over every day stored when the report ran, so
    day 1's saving fell from 1.0 to 0.19 once day 2's cheaper calls were in."""
    con = duckdb.connect(str(tmp_path / "cache.duckdb"))
    migrate(con)
    _day(con, "2026-02-01", [("a1", "model", 1.0), ("a2", "folded", 0.0)])
    build_outcomes(con, "2026-02-01")
    first = partition_report(con, "2026-02-01", PRICES)
    assert first["device_seconds_saved"] == pytest.approx(1.0) == first["money_saved_usd"]

    _day(con, "2026-02-02", [(f"b{i}", "model", 0.1) for i in range(9)] + [("b9", "folded", 0.0)])
    build_outcomes(con, "2026-02-02")
    # Day 2's fold is priced at the mean of both days' ten calls.
    assert partition_report(con, "2026-02-02", PRICES)["device_seconds_saved"] == pytest.approx(0.19)
    build_outcomes(con, "2026-02-01")  # day 1 reported again, as a backfill would
    assert partition_report(con, "2026-02-01", PRICES) == first


def test_a_day_without_a_call_of_its_own_is_priced_at_the_later_calls(tmp_path):
    con = duckdb.connect(str(tmp_path / "cache.duckdb"))
    migrate(con)
    _day(con, "2026-02-01", [("a1", "folded", 0.0)])  # its leader's call is not in the table
    _day(con, "2026-02-02", [("b1", "model", 0.5)])
    build_outcomes(con, "2026-02-01")
    assert partition_report(con, "2026-02-01", PRICES)["device_seconds_saved"] == pytest.approx(0.5)
