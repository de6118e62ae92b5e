"""Small helpers for materialization metadata."""

from __future__ import annotations

import dagster as dg
import polars as pl


def markdown_table(frame: pl.DataFrame) -> dg.MetadataValue:
    if not frame.height:
        return dg.MetadataValue.md("none")
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * frame.width
    # A cell may quote a request's own text: its "|" would start another column.
    rows = ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in frame.iter_rows()]
    return dg.MetadataValue.md("\n".join([header, rule, *rows]))
