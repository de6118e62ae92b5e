"""Small helpers shared by the LanceDB tables: safe filter literals and table names."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import lancedb
import pyarrow as pa

from storage.config import ConfigError
from storage.safe_files import exclusive_lock, replace_file

_SAFE_LITERAL = re.compile(r"^[A-Za-z0-9_.:\- ]*$")


def literal(value: str) -> str:
    """Quote a value for a LanceDB filter; refuse anything that is not a plain token.

    LanceDB filters are SQL strings without parameters, so only values made of
    hashes, dates and identifiers are ever put into one.
    """
    if not _SAFE_LITERAL.match(value):
        raise ValueError(f"refusing to put {value!r} into a vector-store filter")
    return f"'{value}'"


def connect(folder: Path) -> lancedb.DBConnection:
    """A connection whose reads always see the latest committed version: by default an open
    table stays at the version it opened, so an index or cache object kept across writes made
    through another object (another asset, a replay beside a writer) would never see them."""
    return lancedb.connect(str(folder), read_consistency_interval=timedelta(0))


def table_name(kind: str, embedding_model: str) -> str:
    """One table per embedding model: vector width is fixed per LanceDB table."""
    return f"{kind}__" + re.sub(r"[^A-Za-z0-9]+", "_", embedding_model).strip("_").lower()


class TableShapeError(ConfigError):
    """A stored table's columns are not the ones the caller's model needs."""


def open_table(db: lancedb.DBConnection, name: str, schema: pa.Schema, model_fingerprint: str | None = None):
    """The table `name`, made with `schema` on first use. A stored table of another shape
    (vectors of another width: the model under that name changed) is refused rather than
    mixed into.

    With `model_fingerprint`, a table filled by other weights under the same model name is
    refused too (storage/model_fingerprint.py).

    Making a table is an overwrite commit: two writers making it at the same moment can
    both succeed, the second wiping rows the first added in between. So it is made under
    a lock on a file beside it, and whoever comes second opens what the first made."""
    folder = Path(db.uri)
    lock = folder / f".{name}.create.lock"
    try:
        table = db.open_table(name)
    except ValueError:  # not made yet
        with exclusive_lock(lock):
            try:
                table = db.open_table(name)
            except ValueError:
                table = db.create_table(name, schema=schema)
                # In the same hold of the lock: whoever opens the new table meanwhile waits
                # for this record before comparing its own weights with it.
                if model_fingerprint is not None:
                    _record_model(folder, name, model_fingerprint)
                return table
    _require_schema(table, name, schema)
    if model_fingerprint is not None:
        with exclusive_lock(lock):
            _require_same_model(folder, name, model_fingerprint)
    return table


def _require_schema(table, name: str, schema: pa.Schema) -> None:
    stored = table.schema
    missing = [f for f in schema if stored.get_field_index(f.name) < 0 or stored.field(f.name).type != f.type]
    if missing:
        wanted = ", ".join(f"{f.name}: {f.type}" for f in missing)
        raise TableShapeError(
            f"the vector table {name!r} does not hold the columns this model needs ({wanted}; "
            f"stored: {', '.join(f'{f.name}: {f.type}' for f in stored)}): an embedding model of "
            "another width was used under the same name. Give the new model its own name in "
            f"config/models.yaml, or delete the table's folder ({name}.lance) to start it afresh"
        )


# Bytes a vector takes per dimension (float32), as capacity counts it.
VECTOR_VALUE_BYTES = 4


def vector_field(dimension: int) -> pa.Field:
    return pa.field("vector", pa.list_(pa.float32(), dimension))


def _model_record(folder: Path, name: str) -> Path:
    return folder / f".{name}.model.json"


def _record_model(folder: Path, name: str, fingerprint: str) -> None:
    replace_file(_model_record(folder, name), json.dumps({"fingerprint": fingerprint}) + "\n")


def _require_same_model(folder: Path, name: str, fingerprint: str) -> None:
    """The table's vectors all come from the weights that first filled it. A table made
    before this record was kept is taken to be the current model's. The caller holds the
    table's lock."""
    record = _model_record(folder, name)
    if not record.exists():
        _record_model(folder, name, fingerprint)
        return
    try:
        stored = json.loads(record.read_text())["fingerprint"]
    except (ValueError, KeyError, TypeError):
        raise TableShapeError(
            f"{record} does not say which model's weights filled the vector table {name!r}: "
            "delete it if the table was filled by the model now configured under that name "
            f"(it is then recorded afresh), or delete {name}.lance too to start the table afresh"
        ) from None
    if stored != fingerprint:
        raise TableShapeError(
            f"the vector table {name!r} in {folder} was filled by other weights ({stored}) than "
            f"the model now configured under that name ({fingerprint}): its vectors cannot be "
            "compared with the new ones. Give the new model its own name in config/models.yaml, "
            f"or delete {name}.lance and {record.name} to start the table afresh"
        )
