"""Reading a day's landing files and splitting them into accepted and quarantined rows.

Every row ends up on exactly one side; a quarantined row keeps its raw text and
the reason, so nothing is dropped silently.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from storage.config import Settings
from storage.keys import InvalidParams, canonical_params

LANDING_SUFFIXES = (".jsonl", ".parquet")

ACCEPTED_SCHEMA = {
    "request_id": pl.String,
    "tenant": pl.String,
    "namespace": pl.String,
    "model": pl.String,
    "params_json": pl.String,
    "prefix": pl.String,
    "input": pl.String,
    "submitted_at": pl.Datetime("us"),
}
QUARANTINE_SCHEMA = {
    "request_id": pl.String,
    "source_file": pl.String,
    "row_number": pl.Int64,
    "raw_json": pl.String,
    "reason": pl.String,
}


@dataclass(frozen=True)
class LandedRows:
    accepted: pl.DataFrame
    quarantined: pl.DataFrame


def landing_folder(landing_root: Path, partition: str) -> Path:
    return landing_root / partition


def read_landing(folder: Path, settings: Settings) -> LandedRows:
    """Validate every row of every landing file in `folder` (sorted, so order is stable)."""
    accepted: list[dict[str, Any]] = []
    quarantined: list[dict[str, Any]] = []
    first_seen: dict[str, str] = {}
    files = sorted(p for p in folder.glob("*") if p.suffix in LANDING_SUFFIXES) if folder.exists() else []
    for path in files:
        for row_number, raw, parsed in _rows(path):
            where = f"{path.name}:{row_number}"
            request_id = parsed.get("request_id") if isinstance(parsed, dict) else None
            try:
                row = _validate(parsed, settings)
                if row["request_id"] in first_seen:
                    raise _Rejected(
                        f"duplicate request_id {row['request_id']!r} (first seen at "
                        f"{first_seen[row['request_id']]}): give each request its own id"
                    )
            except _Rejected as rejected:
                quarantined.append(
                    {
                        "request_id": _storable(request_id) if isinstance(request_id, str) else None,
                        "source_file": path.name,
                        "row_number": row_number,
                        "raw_json": raw,
                        "reason": str(rejected),
                    }
                )
                continue
            first_seen[row["request_id"]] = where
            accepted.append(row)
    return LandedRows(
        accepted=pl.DataFrame(accepted, schema=ACCEPTED_SCHEMA, orient="row"),
        quarantined=pl.DataFrame(quarantined, schema=QUARANTINE_SCHEMA, orient="row"),
    )


class _Rejected(ValueError):
    pass


def _rows(path: Path):
    """(row number, raw text, parsed value) for each row; parse errors surface as values."""
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    parsed: Any = json.loads(line)
                except json.JSONDecodeError as error:
                    parsed = _Rejected(f"not valid JSON ({error.msg} at column {error.colno})")
                yield number, line.rstrip("\n"), parsed
    else:
        for number, record in enumerate(pl.read_parquet(path).to_dicts(), start=1):
            yield number, json.dumps(record, default=str, ensure_ascii=False), record


def _validate(parsed: Any, settings: Settings) -> dict[str, Any]:
    if isinstance(parsed, _Rejected):
        raise parsed
    if not isinstance(parsed, dict):
        raise _Rejected("a request must be a JSON object")
    for field in ("request_id", "tenant", "namespace", "model"):
        value = parsed.get(field)
        if not isinstance(value, str) or not value.strip():
            raise _Rejected(f"missing or empty {field}: every request needs a non-empty {field}")
    if parsed["model"] not in settings.models:
        raise _Rejected(
            f"unknown model {parsed['model']!r}: known models are "
            f"{', '.join(sorted(settings.models))} (add it to models.yaml)"
        )
    text = parsed.get("input")
    if not isinstance(text, str) or not text.strip():
        raise _Rejected("empty input: the input must be a non-blank string")
    prefix = parsed.get("prefix")
    if prefix is not None and not isinstance(prefix, str):
        raise _Rejected(f"prefix must be a string or absent, got {type(prefix).__name__}")
    row = {
        "request_id": parsed["request_id"],
        "tenant": parsed["tenant"],
        "namespace": parsed["namespace"],
        "model": parsed["model"],
        "params_json": _params(parsed.get("params")),
        "prefix": prefix or "",
        "input": text,
    }
    for field, value in row.items():
        _require_unicode_text(field.removesuffix("_json"), value)
    return row | {"submitted_at": _timestamp(parsed.get("submitted_at"))}


def _storable(text: str) -> str:
    """The text as stored in quarantine: a lone surrogate written as its escape (\\ud83d)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _require_unicode_text(field: str, value: str) -> None:
    """JSON may escape half of a UTF-16 surrogate pair ("\\ud83d"); such a string is no
    Unicode text, and would fail every later write of the partition, not just its row."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(value[error.start])
        raise _Rejected(
            f"{field} holds a lone surrogate (U+{code:04X} at character {error.start}), which is "
            "not Unicode text: send the whole character (a surrogate pair, or UTF-8)"
        ) from None


def _params(value: Any) -> str:
    if value is None:
        value = {}
    if isinstance(value, str):
        try:
            # Python's json accepts NaN/Infinity tokens; _normalize rejects them below.
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise _Rejected(f"params is not valid JSON ({error.msg})") from None
    if isinstance(value, float) and math.isnan(value):
        raise _Rejected('params is NaN: send a JSON object such as {"temperature": 0}')
    try:
        return canonical_params(value)
    except InvalidParams as error:
        raise _Rejected(f"bad params: {error}") from None


def _timestamp(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise _Rejected(f"submitted_at {value!r} is not an ISO-8601 timestamp") from None
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
        return parsed
    raise _Rejected(f"submitted_at must be an ISO-8601 string, got {type(value).__name__}")
