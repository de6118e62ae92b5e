import dagster as dg

from orchestration.definitions import defs


def test_definitions_load_with_assets_checks_job_and_schedule():
    definitions = defs()
    repository = definitions.get_repository_def()
    keys = {key.to_user_string() for key in repository.asset_graph.get_all_asset_keys()}
    assert keys == {
        "model_requests",
        "exact_lookups",
        "request_embeddings",
        "semantic_lookups",
        "inference_outputs",
        "cache_write_back",
        "cache_report",
        "semantic_audit",
    }
    checks = {key.name for key in repository.asset_graph.asset_check_keys}
    assert {"accepted_requests_valid", "quarantine_rate_below_5_percent"} <= checks
    job = definitions.resolve_job_def("daily_partition_job")
    assert isinstance(job.partitions_def, dg.DailyPartitionsDefinition)
    assert definitions.resolve_schedule_def("daily_partition_job_schedule") is not None


def test_the_daily_schedule_runs_the_day_that_is_over():
    """At 02:00 on 10 February the whole of 9 February has landed; 10 February has barely begun."""
    import datetime as dt

    from orchestration.definitions import daily_partition_schedule

    # Both as context managers: a schedule context left open keeps the instance's state
    # storage as the current one, and a later materialization reads it after it is gone.
    tick = dt.datetime(2026, 2, 10, 2, 0, tzinfo=dt.UTC)
    with (
        dg.instance_for_test() as instance,
        dg.build_schedule_context(instance=instance, scheduled_execution_time=tick) as context,
    ):
        requests = daily_partition_schedule.evaluate_tick(context).run_requests
    assert [request.partition_key for request in requests] == ["2026-02-09"]
