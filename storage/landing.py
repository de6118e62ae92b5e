"""Reading a day's landing files and splitting them into accepted and quarantined rows.

Every row ends up on exactly one side; a quarantined row keeps its raw text and
the reason, so nothing is dropped silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import polars as pl

from storage.config import Settings
from storage.keys import InvalidParams, canonical_params

UTF8_BOM = b"\xef\xbb\xbf"

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


def landing_entries(folder: Path) -> list[Path]:
    """What a day's folder holds for reading, sorted (so order is stable): every file and
    folder but hidden ones (.DS_Store, an upload tool's partial file), which are no one's
    requests. Empty where the folder is missing."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []


def read_landing(folder: Path, settings: Settings) -> LandedRows:
    """Validate every row of every landing file in `folder` (sorted, so order is stable)."""
    accepted: list[dict[str, Any]] = []
    quarantined: list[dict[str, Any]] = []
    first_seen: dict[str, str] = {}
    for path in landing_entries(folder):
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


def _rows(path: Path) -> Iterator[tuple[int, str, Any]]:
    """(row number, raw text, parsed value) for each row; parse errors surface as values.
    A whole file that cannot be read is one row numbered 0 with empty raw text."""
    # Suffixes compared lower-case: b.JSONL and c.Parquet are landing files too.
    reader = _READERS.get(path.suffix.lower()) if path.is_file() else None
    if reader is not None:
        yield from reader(path)
        return
    what = "a folder (files in it are not read)" if path.is_dir() else "not a landing file"
    yield (
        0,
        "",
        _Rejected(
            f"{path.name} is {what}: only .jsonl (one JSON object a line, UTF-8) and .parquet "
            "files (any case) are read; save it as one of those, or move it out of the day's folder"
        ),
    )


def _jsonl_rows(path: Path) -> Iterator[tuple[int, str, Any]]:
    try:
        data = path.read_bytes()
    except OSError as error:
        yield 0, "", _Rejected(f"could not read {path.name} ({error.strerror}): check the file and run again")
        return
    # UTF-16 or UTF-32 (a spreadsheet's "Unicode text"): every line would be quarantined, and
    # split at the wrong bytes; the whole file is one row that says how to save it.
    wide = _wide_encoding(data)
    if wide is not None:
        yield (
            0,
            "",
            _Rejected(f"{path.name} is {wide}, not UTF-8: save it as UTF-8 and run the partition again"),
        )
        return
    # Lines split as text mode splits them (\n, \r\n, \r), each decoded on its own so one
    # line in another encoding quarantines that line, not the file.
    for number, line in enumerate(data.removeprefix(UTF8_BOM).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            yield (
                number,
                line.decode("utf-8", "backslashreplace"),
                _Rejected(
                    f"line is not UTF-8 (byte 0x{line[error.start]:02X} at byte {error.start + 1} "
                    "of the line): save the file as UTF-8"
                ),
            )
            continue
        try:
            parsed: Any = json.loads(text)
        except json.JSONDecodeError as error:
            parsed = _Rejected(f"not valid JSON ({error.msg} at column {error.colno})")
        yield number, text, parsed


def _wide_encoding(data: bytes) -> str | None:
    """The name of a UTF-16 or UTF-32 encoding the file is in (by its byte order mark, or
    the NUL bytes its ASCII characters carry), else None."""
    for mark, name in (
        (b"\xff\xfe\x00\x00", "UTF-32"),
        (b"\x00\x00\xfe\xff", "UTF-32"),
        (b"\xff\xfe", "UTF-16"),
        (b"\xfe\xff", "UTF-16"),
    ):
        if data.startswith(mark):
            return name
    # JSON text holds no NUL byte; UTF-16 without a mark has one beside every ASCII letter.
    head = data[:4096]
    return "UTF-16 or UTF-32 (NUL bytes)" if head and head.count(0) * 4 >= len(head) else None


def _parquet_rows(path: Path) -> Iterator[tuple[int, str, Any]]:
    try:
        frame = pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as error:
        message = next(iter(str(error).strip().splitlines()), type(error).__name__)
        yield (
            0,
            "",
            _Rejected(
                f"could not read {path.name} as Parquet ({message}): write the file again "
                "(a complete Parquet file) and run the partition again"
            ),
        )
        return
    # A params struct has every key any row used; a row without one reads null there.
    struct_params = isinstance(frame.schema.get("params"), pl.Struct)
    for number, record in enumerate(frame.to_dicts(), start=1):
        raw = json.dumps(record, default=str, ensure_ascii=False)
        if struct_params:
            record["params"] = _without_null_fields(record["params"])
        yield number, raw, record


def _without_null_fields(value: Any) -> Any:
    """A Parquet struct's value with its null fields left out, as absent keys."""
    if isinstance(value, dict):
        return {key: _without_null_fields(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_null_fields(item) for item in value]
    return value


_READERS: dict[str, Callable[[Path], Iterator[tuple[int, str, Any]]]] = {
    ".jsonl": _jsonl_rows,
    ".parquet": _parquet_rows,
}


def _validate(parsed: Any, settings: Settings) -> dict[str, Any]:
    if isinstance(parsed, _Rejected):
        raise parsed
    if not isinstance(parsed, dict):
        raise _Rejected("a request must be a JSON object")
    for field in ("request_id", "tenant", "namespace", "model"):
        _require_string(
            field, parsed.get(field), f"missing or empty {field}: every request needs a non-empty {field}"
        )
    if parsed["model"] not in settings.models:
        raise _Rejected(
            f"unknown model {parsed['model']!r}: known models are "
            f"{', '.join(sorted(settings.models))} (add it to models.yaml)"
        )
    text = parsed.get("input")
    _require_string("input", text, "empty input: the input must be a non-blank string")
    prefix = parsed.get("prefix")
    if prefix is not None and not isinstance(prefix, str):
        raise _Rejected(f"prefix must be a string or absent, got {type(prefix).__name__}")
    params_json = _params(parsed.get("params"))
    _check_params(json.loads(params_json), settings.model(parsed["model"]).backend)
    row = {
        "request_id": parsed["request_id"],
        "tenant": parsed["tenant"],
        "namespace": parsed["namespace"],
        "model": parsed["model"],
        "params_json": params_json,
        "prefix": prefix or "",
        "input": text,
    }
    for field, value in row.items():
        _require_unicode_text(field.removesuffix("_json"), value)
    return row | {"submitted_at": _timestamp(parsed.get("submitted_at"))}


def _require_string(field: str, value: Any, if_blank: str) -> None:
    """A non-blank string; any other type is named, never coerced ("5" and 5 would collide)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise _Rejected(if_blank)
    if not isinstance(value, str):
        raise _Rejected(
            f"{field} must be a string, got {type(value).__name__} {_shown(value)}: send it as a string"
        )


def _shown(value: Any) -> str:
    """A value as JSON, cut short: enough to find it in the row."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _is_non_negative(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _is_label_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(label, str) and label.strip() for label in value)
        and len(set(value)) == len(value)
    )


# The params each backend reads, with the test a value must pass and what is allowed.
# A param no backend reads passes as it is: users key on their own (a prompt template
# version). Greedy decoding reads no temperature, but it is the documented generation
# setting and part of the key, so "hot" or -1 is a mistake worth telling.
PARAM_RULES: dict[str, dict[str, tuple[Callable[[Any], bool], str]]] = {
    "causal_lm": {
        "max_new_tokens": (_is_count, "a whole number of 1 or more"),
        "temperature": (_is_non_negative, "a number of 0 or more"),
    },
    "zero_shot_classifier": {
        "labels": (_is_label_list, "a non-empty list of distinct, non-blank strings"),
    },
}


def _check_params(params: dict[str, Any], backend: str) -> None:
    for name, (allowed, description) in PARAM_RULES.get(backend, {}).items():
        if name not in params:
            continue
        value = params[name]
        if value is None:
            raise _Rejected(f"params.{name} is null: leave it out for the default, or send {description}")
        if not allowed(value):
            raise _Rejected(
                f"params.{name} is {_shown(value)} ({type(value).__name__}): it must be {description}"
            )


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
    if isinstance(value, date):
        # A Parquet date column: the day's midnight, as the string "2026-01-05" reads.
        return datetime.combine(value, time())
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise _Rejected(f"submitted_at {value!r} is not an ISO-8601 timestamp") from None
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
        return parsed
    raise _Rejected(f"submitted_at must be an ISO-8601 string, got {type(value).__name__}")
