"""Great-expectations checks of a partition's accepted requests, mapped to Dagster checks."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import polars as pl


@lru_cache(maxsize=1)
def _context():
    # Imported lazily: great-expectations costs seconds to import.
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch_definition = (
        context.data_sources.add_pandas("partition_requests")
        .add_dataframe_asset("accepted_requests")
        .add_batch_definition_whole_dataframe("whole_partition")
    )
    return gx, batch_definition


def validate_accepted_requests(accepted: pl.DataFrame, known_models: list[str]) -> dict[str, Any]:
    """Run the accepted-request contract; returns success and the failed expectations."""
    gx, batch_definition = _context()
    suite = gx.ExpectationSuite(name="accepted_requests")
    for column in ("request_id", "tenant", "namespace", "model", "input", "key_hex"):
        suite.add_expectation(gx.expectations.ExpectColumnValuesToNotBeNull(column=column))
    suite.add_expectation(gx.expectations.ExpectColumnValuesToBeUnique(column="request_id"))
    suite.add_expectation(gx.expectations.ExpectColumnValuesToMatchRegex(column="input", regex=r"\S"))
    suite.add_expectation(gx.expectations.ExpectColumnValuesToBeInSet(column="model", value_set=known_models))
    suite.add_expectation(gx.expectations.ExpectColumnValueLengthsToEqual(column="key_hex", value=64))
    frame = accepted.with_columns(pl.col("key").bin.encode("hex").alias("key_hex")).drop("key")
    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame.to_pandas()})
    result = batch.validate(suite)
    failures = {
        f"{r.expectation_config.type}({r.expectation_config.kwargs.get('column')})": r.result.get(
            "unexpected_count"
        )
        for r in result.results
        if not r.success
    }
    return {"success": bool(result.success), "failures": failures, "rows": accepted.height}
