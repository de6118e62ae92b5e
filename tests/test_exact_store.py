"""The exact tier on a real DuckDB file."""

from datetime import timedelta

import polars as pl

from storage.exact_store import (
    apply_ttl,
    clear_namespace,
    lookup_exact,
    open_store,
    record_hits,
    sweep_expired,
    write_entries,
)
from storage.keys import cache_key, canonical_request
from tests.helpers import entry_rows, hold_the_file, identity, request_rows


def test_identical_request_hits_and_other_requests_miss(tmp_path, now):
    stored = identity("How do I reset my password?")
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([stored], ['{"text":"Use the link."}'], now))
        found = lookup_exact(con, request_rows([stored, identity("Something else")]), now)
    assert found["hit"].to_list() == [True, False]
    assert found["answer_json"][0] == '{"text":"Use the link."}'
    assert found["served_key"][0] == cache_key(canonical_request(stored))


def test_entries_survive_reopening_the_file(tmp_path, now):
    stored = identity("persisted")
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([stored], ["{}"], now))
    with open_store(tmp_path / "cache.duckdb") as con:
        assert lookup_exact(con, request_rows([stored]), now)["hit"][0]


def test_fingerprint_mismatch_is_not_served(tmp_path, now):
    """A stored entry under the same key but for another request (a collision) is a miss."""
    asked = identity("What is the refund policy?")
    other = identity("Tell me a secret")
    forged = entry_rows([other], ['{"text":"wrong"}'], now).with_columns(
        key=pl.lit(cache_key(canonical_request(asked)))
    )
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, forged)
        found = lookup_exact(con, request_rows([asked]), now)
    assert found["hit"].to_list() == [False]


def test_expired_entry_is_never_served_and_is_deleted_when_read(tmp_path, now):
    stored = identity("short-lived")
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([stored], ["{}"], now, ttl_seconds=60))
        assert lookup_exact(con, request_rows([stored]), now + timedelta(seconds=59))["hit"][0]
        later = now + timedelta(seconds=60)
        assert not lookup_exact(con, request_rows([stored]), later)["hit"][0]
        assert con.execute("SELECT count(*) FROM cache_entries").fetchall() == [(0,)]


def test_a_ttl_changed_in_the_configuration_applies_to_stored_entries(tmp_path, now):
    kept, other = identity("How do I reset my password?"), identity("Opening hours?", tenant="globex")
    day = 24 * 3600
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([kept, other], ["{}", "{}"], now, ttl_seconds=30 * day))
        two_days_on = now + timedelta(days=2)
        assert lookup_exact(con, request_rows([kept]), two_days_on)["hit"][0]
        # The namespace's TTL lowered to one day for acme: its two-day-old entry stops serving.
        assert apply_ttl(con, {("acme", kept.namespace): day}) == 1
        assert not lookup_exact(con, request_rows([kept]), two_days_on)["hit"][0]
        # Another tenant's entry keeps its expiry, and running it again changes nothing.
        assert lookup_exact(con, request_rows([other]), two_days_on)["hit"][0]
        assert apply_ttl(con, {("acme", kept.namespace): day}) == 0
        # Raised again, the TTL lengthens the life of what is still stored.
        write_entries(con, entry_rows([kept], ["{}"], now, ttl_seconds=day))
        assert apply_ttl(con, {("acme", kept.namespace): 10 * day}) == 1
        assert lookup_exact(con, request_rows([kept]), now + timedelta(days=9))["hit"][0]


def test_sweep_deletes_every_expired_entry(tmp_path, now):
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([identity("a")], ["{}"], now, ttl_seconds=10))
        write_entries(con, entry_rows([identity("b")], ["{}"], now, ttl_seconds=1000))
        assert sweep_expired(con, now + timedelta(seconds=11)) == 1
        rows = con.execute("SELECT input_text FROM cache_entries").fetchall()
    assert rows == [("b",)]


def test_identical_request_of_another_tenant_misses(tmp_path, now):
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([identity("Reset password", tenant="acme")], ["{}"], now))
        found = lookup_exact(con, request_rows([identity("Reset password", tenant="globex")]), now)
    assert found["hit"].to_list() == [False]


def test_partition_sees_only_entries_of_earlier_partitions(tmp_path, now):
    stored = identity("daily question")
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([stored], ["{}"], now, partition="2026-01-02"))
        rows = request_rows([stored])
        assert not lookup_exact(con, rows, now, before_partition="2026-01-02")["hit"][0]
        assert lookup_exact(con, rows, now, before_partition="2026-01-03")["hit"][0]
        assert lookup_exact(con, rows, now)["hit"][0]


def test_rewriting_an_entry_replaces_its_answer_keeps_its_hits_and_the_others(tmp_path, now):
    """A partition run again writes its answers anew; the hits later days recorded on them
    and the entries it does not write again (its landing files gone, say) stay."""
    a_key = cache_key(canonical_request(identity("a")))
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([identity("a"), identity("b")], ["{}", "{}"], now, partition="p1"))
        record_hits(con, [a_key, a_key], now + timedelta(days=1))
        write_entries(con, entry_rows([identity("a")], ['{"v":2}'], now, partition="p1"))
        rows = con.execute(
            "SELECT input_text, answer_json, hit_count, last_hit_at FROM cache_entries ORDER BY 1"
        ).fetchall()
    assert rows == [("a", '{"v":2}', 2, now + timedelta(days=1)), ("b", "{}", 0, None)]


def test_a_later_partition_never_takes_over_a_live_entry_an_earlier_one_wrote(tmp_path, now):
    """Two runs in turns (day 2's look-up before day 1's write-back) both answer "a": day 1's
    entry stays day 1's, with its answer and hits, so day 2 run again is served by it. An
    earlier day's expired entry, a re-run of the same day and an earlier day writing over a
    later one's still replace the row."""
    a, b, c = identity("a"), identity("b"), identity("c")
    a_key = cache_key(canonical_request(a))
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([a], ['{"day":1}'], now, partition="2026-01-01"))
        write_entries(con, entry_rows([b], ['{"day":1}'], now, ttl_seconds=60, partition="2026-01-01"))
        write_entries(con, entry_rows([c], ['{"day":3}'], now, partition="2026-01-03"))
        record_hits(con, [a_key], now)
        later = now + timedelta(minutes=5)  # b's entry has expired by then
        written = write_entries(con, entry_rows([a, b, c], ['{"day":2}'] * 3, later, partition="2026-01-02"))
        rows = con.execute(
            "SELECT input_text, answer_json, source_partition, hit_count FROM cache_entries ORDER BY 1"
        ).fetchall()
        assert written == [cache_key(canonical_request(x)) for x in (b, c)]
        assert rows == [
            ("a", '{"day":1}', "2026-01-01", 1),
            ("b", '{"day":2}', "2026-01-02", 0),
            ("c", '{"day":2}', "2026-01-02", 0),
        ]
        assert lookup_exact(con, request_rows([a]), later, before_partition="2026-01-02")["hit"][0]
        # The same day run again replaces its own entry.
        assert write_entries(con, entry_rows([a], ['{"again":1}'], later, partition="2026-01-01")) == [a_key]


def test_a_look_up_run_again_counts_its_hits_once(tmp_path, now):
    a_key = cache_key(canonical_request(identity("a")))
    b_key = cache_key(canonical_request(identity("b")))
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([identity("a"), identity("b")], ["{}", "{}"], now))
        record_hits(con, [a_key, a_key, b_key], now)
        # The same partition again, now serving a once and b not at all.
        record_hits(con, [a_key], now + timedelta(hours=1), replacing=[a_key, a_key, b_key])
        rows = con.execute(
            "SELECT input_text, hit_count, last_hit_at FROM cache_entries ORDER BY 1"
        ).fetchall()
    assert rows == [("a", 1, now + timedelta(hours=1)), ("b", 0, now)]


def test_hits_are_counted(tmp_path, now):
    stored = identity("popular")
    key = cache_key(canonical_request(stored))
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(con, entry_rows([stored], ["{}"], now))
        record_hits(con, [key, key, key], now)
        assert con.execute("SELECT hit_count, last_hit_at FROM cache_entries").fetchall() == [(3, now)]


def test_clear_namespace_touches_only_that_tenant_and_namespace(tmp_path, now):
    with open_store(tmp_path / "cache.duckdb") as con:
        write_entries(
            con,
            entry_rows(
                [
                    identity("q", tenant="acme"),
                    identity("q", tenant="globex"),
                    identity("q", tenant="acme", namespace="other"),
                ],
                ["{}", "{}", "{}"],
                now,
            ),
        )
        assert clear_namespace(con, "acme", "faq") == 1
        left = con.execute("SELECT tenant, namespace FROM cache_entries ORDER BY ALL").fetchall()
    assert left == [("acme", "other"), ("globex", "faq")]


def test_an_open_waits_while_another_process_holds_the_file_then_says_what_to_do(tmp_path, monkeypatch):
    """A step held the file while a command opened it: both failed at once with DuckDB's lock
    error (a review). An open now waits for the file, and past its wait says what happened."""
    import time

    import pytest

    import storage.exact_store as exact_store

    path = tmp_path / "cache.duckdb"
    with open_store(path):
        pass
    child = hold_the_file(path, 1.5)
    started = time.monotonic()
    with open_store(path) as con:  # waits until the other process lets go
        assert con.execute("SELECT count(*) FROM cache_entries").fetchall() == [(0,)]
    assert time.monotonic() - started > 0.5
    child.wait(timeout=30)

    monkeypatch.setattr(exact_store, "LOCK_WAIT_SECONDS", 0.5)
    child = hold_the_file(path, 10)
    try:
        with pytest.raises(exact_store.StoreBusyError, match="held by another process.*run this again"):
            with open_store(path):
                pass
    finally:
        child.kill()
        child.wait(timeout=30)


def test_a_file_that_cannot_be_locked_at_all_fails_at_once_with_duckdbs_words(tmp_path, monkeypatch):
    """A filesystem without lock support makes DuckDB say "Conflicting lock is held in PID 0":
    no process to wait for, so the open fails at once with DuckDB's error (a review saw it wait
    the whole LOCK_WAIT_SECONDS and blame another process). DuckDB's connect is replaced by
    one raising that error, as no such filesystem can be mounted here."""
    import time

    import duckdb
    import pytest

    import storage.exact_store as exact_store

    calls = []

    def refused(*args, **kwargs):
        calls.append(args)
        raise duckdb.IOException(
            f'IO Error: Could not set lock on file "{tmp_path}/cache.duckdb": '
            "Conflicting lock is held in PID 0."
        )

    monkeypatch.setattr(exact_store.duckdb, "connect", refused)
    started = time.monotonic()
    with pytest.raises(duckdb.IOException, match="PID 0"):
        with open_store(tmp_path / "cache.duckdb"):
            pass
    assert len(calls) == 1 and time.monotonic() - started < 1
