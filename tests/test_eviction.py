"""Capacity limits per tenant namespace, LRU or LFU, on a real DuckDB file."""

from datetime import timedelta

from storage.eviction import enforce_capacity
from storage.exact_store import open_store, record_hits, write_entries
from storage.keys import cache_key, canonical_request
from tests.helpers import entry_rows, identity


def _fill(con, now):
    """Five entries written a minute apart; e0 is hit three times early, e3 once late."""
    for i in range(5):
        write_entries(con, entry_rows([identity(f"e{i}")], ["{}"], now + timedelta(minutes=i)), None)
    key = {i: cache_key(canonical_request(identity(f"e{i}"))) for i in range(5)}
    record_hits(con, [key[0], key[0], key[0]], now + timedelta(minutes=5))
    record_hits(con, [key[3]], now + timedelta(minutes=6))
    write_entries(con, entry_rows([identity("other tenant", tenant="globex")], ["{}"], now), None)


def _left(con):
    return sorted(
        r[0] for r in con.execute("SELECT input_text FROM cache_entries WHERE tenant = 'acme'").fetchall()
    )


def test_lru_keeps_the_most_recently_used(tmp_path, now):
    with open_store(tmp_path / "c.duckdb") as con:
        _fill(con, now)
        deleted = enforce_capacity(con, "acme", "faq", "lru", max_entries=3, max_bytes=None)
        assert len(deleted) == 2
        assert _left(con) == ["e0", "e3", "e4"]
        assert con.execute("SELECT count(*) FROM cache_entries WHERE tenant = 'globex'").fetchall() == [(1,)]


def test_lfu_keeps_the_most_frequently_used(tmp_path, now):
    with open_store(tmp_path / "c.duckdb") as con:
        _fill(con, now)
        enforce_capacity(con, "acme", "faq", "lfu", max_entries=2, max_bytes=None)
        assert _left(con) == ["e0", "e3"]


def test_byte_limit_counts_sizes_in_keep_order(tmp_path, now):
    with open_store(tmp_path / "c.duckdb") as con:
        _fill(con, now)
        size = con.execute("SELECT max(size_bytes) FROM cache_entries").fetchall()[0][0]
        enforce_capacity(con, "acme", "faq", "lru", max_entries=None, max_bytes=size * 2)
        assert _left(con) == ["e0", "e3"]  # all the same size: the two most recently used


def test_no_limits_delete_nothing(tmp_path, now):
    with open_store(tmp_path / "c.duckdb") as con:
        _fill(con, now)
        assert enforce_capacity(con, "acme", "faq", "lru", None, None) == []
        assert len(_left(con)) == 5
