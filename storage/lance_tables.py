"""Small helpers shared by the LanceDB tables: safe filter literals and table names."""

from __future__ import annotations

import re

import lancedb
import pyarrow as pa

_SAFE_LITERAL = re.compile(r"^[A-Za-z0-9_.:\- ]*$")


def literal(value: str) -> str:
    """Quote a value for a LanceDB filter; refuse anything that is not a plain token.

    LanceDB filters are SQL strings without parameters, so only values made of
    hashes, dates and identifiers are ever put into one.
    """
    if not _SAFE_LITERAL.match(value):
        raise ValueError(f"refusing to put {value!r} into a vector-store filter")
    return f"'{value}'"


def table_name(kind: str, embedding_model: str) -> str:
    """One table per embedding model: vector width is fixed per LanceDB table."""
    return f"{kind}__" + re.sub(r"[^A-Za-z0-9]+", "_", embedding_model).strip("_").lower()


def open_table(db: lancedb.DBConnection, name: str, schema: pa.Schema):
    return db.create_table(name, schema=schema, exist_ok=True)


def vector_field(dimension: int) -> pa.Field:
    return pa.field("vector", pa.list_(pa.float32(), dimension))
