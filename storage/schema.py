"""The DuckDB schema in one place: tables, views, and the migration step.

No PRIMARY KEY on cache_entries: on DuckDB it doubles load time and makes bulk
deletes slow; keys stay unique because every write is delete-then-insert by key.
"""

from __future__ import annotations

import duckdb

SCHEMA_VERSION = 4

TABLES: dict[str, str] = {
    "cache_entries": """
        key BLOB NOT NULL,
        tenant VARCHAR NOT NULL,
        namespace VARCHAR NOT NULL,
        model VARCHAR NOT NULL,
        model_version VARCHAR NOT NULL,
        canonical_request VARCHAR NOT NULL,
        input_text VARCHAR NOT NULL,
        answer_json VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP NOT NULL,
        last_hit_at TIMESTAMP,
        hit_count BIGINT NOT NULL DEFAULT 0,
        size_bytes BIGINT NOT NULL,
        device_seconds DOUBLE NOT NULL,
        source_partition VARCHAR
    """,
    # One row per accepted request of a partition, with its key.
    "model_requests": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR NOT NULL,
        tenant VARCHAR NOT NULL,
        namespace VARCHAR NOT NULL,
        model VARCHAR NOT NULL,
        model_version VARCHAR NOT NULL,
        params_json VARCHAR NOT NULL,
        prefix VARCHAR NOT NULL,
        input VARCHAR NOT NULL,
        submitted_at TIMESTAMP,
        key BLOB NOT NULL,
        canonical_request VARCHAR NOT NULL,
        semantic_scope VARCHAR NOT NULL,
        embedding_model VARCHAR NOT NULL,
        semantic_enabled BOOLEAN NOT NULL,
        semantic_threshold DOUBLE NOT NULL,
        semantic_verify BOOLEAN,
        semantic_verify_threshold DOUBLE,
        semantic_skip_reason VARCHAR,
        semantic_language VARCHAR,
        semantic_decided_under VARCHAR
    """,
    "quarantine": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR,
        source_file VARCHAR NOT NULL,
        row_number BIGINT NOT NULL,
        raw_json VARCHAR NOT NULL,
        reason VARCHAR NOT NULL
    """,
    "exact_lookups": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR NOT NULL,
        hit BOOLEAN NOT NULL,
        served_key BLOB,
        answer_json VARCHAR,
        lookup_seconds DOUBLE NOT NULL
    """,
    "request_embeddings": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR NOT NULL,
        text_hash VARCHAR NOT NULL,
        vector FLOAT[] NOT NULL,
        lookup_seconds DOUBLE NOT NULL,
        model_fingerprint VARCHAR
    """,
    "semantic_lookups": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR NOT NULL,
        hit BOOLEAN NOT NULL,
        best_similarity DOUBLE,
        served_key BLOB,
        answer_json VARCHAR,
        lookup_seconds DOUBLE NOT NULL
    """,
    "inference_outputs": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR NOT NULL,
        path VARCHAR NOT NULL,
        served_key BLOB,
        answer_json VARCHAR,
        error VARCHAR,
        device_seconds DOUBLE NOT NULL,
        batch_index BIGINT
    """,
    # Every request of a partition ends in one row here; reports are computed from it.
    "request_outcomes": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR,
        tenant VARCHAR,
        namespace VARCHAR,
        model VARCHAR,
        model_version VARCHAR,
        key BLOB,
        path VARCHAR NOT NULL,
        served_key BLOB,
        best_similarity DOUBLE,
        lookup_seconds DOUBLE NOT NULL,
        device_seconds DOUBLE NOT NULL,
        device_seconds_saved DOUBLE NOT NULL,
        answer_json VARCHAR,
        error VARCHAR
    """,
    # Each verifier stage's learned score of a pair (storage/pair_scores.py); the key is a
    # hash of the stage and the pair.
    "verified_pair_scores": """
        key BLOB PRIMARY KEY,
        stage VARCHAR NOT NULL,
        score FLOAT NOT NULL,
        scored_at TIMESTAMP NOT NULL,
        used_at TIMESTAMP NOT NULL
    """,
    # Which kinds of semantic scope (with or without the text's language) a tenant
    # namespace's vectors under a multilingual model may have, and the latest partition that
    # keyed or wrote each (storage/vector_backfill.py).
    "vector_scope_kinds": """
        embedding_model VARCHAR NOT NULL,
        tenant VARCHAR NOT NULL,
        namespace VARCHAR NOT NULL,
        language_in_scope BOOLEAN NOT NULL,
        latest_partition VARCHAR,
        recorded_at TIMESTAMP NOT NULL
    """,
    # Tenant namespaces of a multilingual model whose vectors were checked for scopes of
    # texts the coverage rule of that version leaves unplaced (storage/vector_backfill.py).
    "unplaced_vector_checks": """
        embedding_model VARCHAR NOT NULL,
        tenant VARCHAR NOT NULL,
        namespace VARCHAR NOT NULL,
        coverage_rule INTEGER NOT NULL,
        checked_at TIMESTAMP NOT NULL
    """,
    # Tenant namespaces whose stored vectors were decided again under the coverage rule of
    # that version and their settings then (decided_under: storage.semantic_coverage.
    # covered_check_signature; storage/vector_backfill_run.py): a rule or a setting that gives
    # more text exact matching only drops the vectors stored for such text before.
    "covered_vector_checks": """
        embedding_model VARCHAR NOT NULL,
        tenant VARCHAR NOT NULL,
        namespace VARCHAR NOT NULL,
        coverage_rule INTEGER NOT NULL,
        decided_under VARCHAR NOT NULL,
        checked_at TIMESTAMP NOT NULL
    """,
    # Live entries left without a vector in an embedding model's index because their text
    # is not for it (storage/vector_backfill.py), under what decided it
    # (storage.semantic_coverage.coverage_signature).
    "exact_only_entries": """
        key BLOB NOT NULL,
        embedding_model VARCHAR NOT NULL,
        verify BOOLEAN NOT NULL,
        reason VARCHAR NOT NULL,
        checked_at TIMESTAMP NOT NULL,
        decided_under VARCHAR
    """,
    # Answers a reviewer found wrong (storage/wrong_answers.py): neither side answers
    # requests like the other again.
    "wrong_answer_reports": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR NOT NULL,
        tenant VARCHAR NOT NULL,
        namespace VARCHAR NOT NULL,
        path VARCHAR NOT NULL,
        semantic_scope VARCHAR NOT NULL,
        request_key BLOB NOT NULL,
        request_text VARCHAR NOT NULL,
        request_vector FLOAT[] NOT NULL,
        served_key BLOB NOT NULL,
        served_text VARCHAR,
        served_vector FLOAT[],
        note VARCHAR,
        reported_by VARCHAR NOT NULL,
        reported_at TIMESTAMP NOT NULL,
        withdrawn_at TIMESTAMP,
        embedding_model VARCHAR
    """,
    # A share of the answers served from another request, recomputed with the model and
    # compared (storage/audits.py); agreed is null where the answers cannot be compared.
    "semantic_audits": """
        partition VARCHAR NOT NULL,
        request_id VARCHAR NOT NULL,
        tenant VARCHAR NOT NULL,
        namespace VARCHAR NOT NULL,
        path VARCHAR NOT NULL,
        served_key BLOB,
        served_answer_json VARCHAR,
        audit_answer_json VARCHAR,
        agreed BOOLEAN,
        error VARCHAR,
        device_seconds DOUBLE NOT NULL,
        answer_similarity DOUBLE
    """,
}

PATHS = ("quarantined", "exact", "semantic", "folded", "model", "failed")

VIEWS: dict[str, str] = {
    # Mean measured device seconds of one model call, per model version.
    "model_call_costs": """
        SELECT model, model_version,
               count(*) AS model_calls,
               sum(device_seconds) AS device_seconds,
               avg(device_seconds) AS mean_device_seconds_per_call
        FROM request_outcomes
        WHERE path = 'model'
        GROUP BY model, model_version
    """,
    "daily_hit_rates": """
        SELECT partition, tenant, namespace, model, model_version,
               count(*) AS requests,
               count(*) FILTER (path = 'exact') AS exact_hits,
               count(*) FILTER (path = 'semantic') AS semantic_hits,
               count(*) FILTER (path = 'folded') AS folded,
               count(*) FILTER (path = 'model') AS model_calls,
               count(*) FILTER (path = 'failed') AS failed,
               count(*) FILTER (path IN ('exact', 'semantic'))
                   / nullif(count(*) FILTER (path <> 'quarantined'), 0) AS hit_rate
        FROM request_outcomes
        GROUP BY ALL
    """,
    # Device time per partition and namespace: spent on model calls, saved by the cache, and
    # spent on audits (semantic_audits), which run after cache_report and so are not in its
    # figures; the net saving is what the cache saved less what checking it cost.
    "daily_device_seconds": """
        WITH served AS (
            SELECT partition, tenant, namespace,
                   sum(device_seconds) AS model_device_seconds,
                   sum(device_seconds_saved) AS device_seconds_saved
            FROM request_outcomes
            WHERE path <> 'quarantined'
            GROUP BY ALL
        ),
        audited AS (
            SELECT partition, tenant, namespace,
                   count(*) AS audited,
                   sum(device_seconds) AS audit_device_seconds
            FROM semantic_audits
            GROUP BY ALL
        )
        SELECT partition, tenant, namespace, model_device_seconds, device_seconds_saved,
               coalesce(audited, 0) AS audited,
               coalesce(audit_device_seconds, 0) AS audit_device_seconds,
               device_seconds_saved - coalesce(audit_device_seconds, 0) AS net_device_seconds_saved
        FROM served
        LEFT JOIN audited USING (partition, tenant, namespace)
    """,
    # Per partition, the requests answered by another request (semantic, or folded into a
    # look-alike's call, or recomputed since a report) and those reported wrong (by a
    # reviewer or the audit, not withdrawn): a floor under the wrong-answer rate. A request
    # folded into an identical one's call got the model's own answer to its own input.
    "reported_wrong_rates": """
        SELECT o.partition, o.tenant, o.namespace,
               count(*) FILTER (
                   o.path = 'semantic'
                   OR (o.path = 'folded' AND o.served_key IS DISTINCT FROM o.key)
                   OR r.request_id IS NOT NULL
               ) AS answered_by_another,
               count(r.request_id) AS reported_wrong,
               reported_wrong / nullif(answered_by_another, 0) AS reported_wrong_rate
        FROM request_outcomes o
        LEFT JOIN (
            SELECT DISTINCT partition, request_id FROM wrong_answer_reports WHERE withdrawn_at IS NULL
        ) r
            USING (partition, request_id)
        WHERE o.path <> 'quarantined'
        GROUP BY ALL
    """,
}


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """Create what is missing and record the schema version; refuse a newer file."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    rows = con.execute("SELECT max(version) FROM schema_version").fetchall()
    found = rows[0][0]
    if found is not None and found > SCHEMA_VERSION:
        raise RuntimeError(
            f"the cache file has schema version {found}, newer than this code's "
            f"{SCHEMA_VERSION}: upgrade infercache before opening it"
        )
    for table, columns in TABLES.items():
        con.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
        _add_missing_columns(con, table, columns)
    for view, query in VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {view} AS {query}")
    if found is None or found < SCHEMA_VERSION:
        con.execute("INSERT INTO schema_version VALUES (?)", [SCHEMA_VERSION])


def _add_missing_columns(con: duckdb.DuckDBPyConnection, table: str, columns: str) -> None:
    """Additive migration: columns added to a table's DDL are added to an older file.

    New columns are nullable there (rows written before they existed have no value).
    """
    present = {
        name
        for (name,) in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
        ).fetchall()
    }
    for definition in columns.split(",\n"):
        name, column_type = definition.split()[:2]
        if name not in present:
            con.execute(f"ALTER TABLE {table} ADD COLUMN {name} {column_type}")
