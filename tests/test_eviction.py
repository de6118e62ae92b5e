"""Capacity limits per tenant namespace, LRU or LFU, on a real DuckDB file."""

from datetime import timedelta

from storage.eviction import enforce_capacity
from storage.exact_store import open_store, record_hits, write_entries
from storage.keys import cache_key, canonical_request
from tests.helpers import entry_rows, identity


def _fill(con, now):
    """Five entries written a minute apart; e0 is hit three times early, e3 once late."""
    for i in range(5):
        write_entries(con, entry_rows([identity(f"e{i}")], ["{}"], now + timedelta(minutes=i)))
    key = {i: cache_key(canonical_request(identity(f"e{i}"))) for i in range(5)}
    record_hits(con, [key[0], key[0], key[0]], now + timedelta(minutes=5))
    record_hits(con, [key[3]], now + timedelta(minutes=6))
    write_entries(con, entry_rows([identity("other tenant", tenant="globex")], ["{}"], now))


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


def test_an_entry_larger_than_the_byte_limit_goes_alone(tmp_path, now):
    """The newest entry alone is over the limit: it is evicted, and the rest, which fit, stay."""
    with open_store(tmp_path / "c.duckdb") as con:
        _fill(con, now)
        size = con.execute("SELECT max(size_bytes) FROM cache_entries").fetchall()[0][0]
        big = entry_rows([identity("big")], ['"' + "x" * (size * 6) + '"'], now + timedelta(minutes=9))
        write_entries(con, big)
        deleted = enforce_capacity(con, "acme", "faq", "lru", max_entries=None, max_bytes=size * 5)
        assert deleted == [cache_key(canonical_request(identity("big")))]
        assert _left(con) == ["e0", "e1", "e2", "e3", "e4"]
        # Nor does it take a place under an entry limit as well.
        write_entries(con, big)
        deleted = enforce_capacity(con, "acme", "faq", "lru", max_entries=5, max_bytes=size * 5)
        assert deleted == [cache_key(canonical_request(identity("big")))]
        assert _left(con) == ["e0", "e1", "e2", "e3", "e4"]


def test_lfu_admits_what_the_write_back_just_stored(tmp_path, now):
    """Without admission a new entry (no hits yet) would be evicted by the write-back that
    stored it, every time; admitted, it takes the place of the least used older entry."""
    with open_store(tmp_path / "c.duckdb") as con:
        _fill(con, now)
        later = now + timedelta(days=1)
        write_entries(con, entry_rows([identity("new")], ["{}"], later))
        enforce_capacity(con, "acme", "faq", "lfu", max_entries=2, max_bytes=None, admitted_at=later)
        assert _left(con) == ["e0", "new"]  # e3, hit once, is now the least used


def test_entries_of_a_superseded_model_version_go_first(tmp_path, now):
    """Under LFU the old version's hits would keep its entries, which no request reaches,
    and push out the new version's."""
    with open_store(tmp_path / "c.duckdb") as con:
        _fill(con, now)  # tiny-llm version 1; e0 hit three times
        later = now + timedelta(days=1)
        write_entries(
            con, entry_rows([identity(f"v2-{i}", model_version="2") for i in range(2)], ["{}"] * 2, later)
        )
        enforce_capacity(
            con, "acme", "faq", "lfu", max_entries=3, max_bytes=None, current_versions={"tiny-llm": "2"}
        )
        assert _left(con) == ["e0", "v2-0", "v2-1"]
        # Old entries are not deleted while there is room: a rollback to version 1 finds them.
        assert enforce_capacity(con, "acme", "faq", "lfu", 5, None, current_versions={"tiny-llm": "2"}) == []


def test_entries_of_a_model_the_registry_no_longer_lists_go_first(tmp_path, now):
    with open_store(tmp_path / "c.duckdb") as con:
        _fill(con, now)  # tiny-llm; e0 hit three times
        later = now + timedelta(days=1)
        write_entries(con, entry_rows([identity("retired", model="old-llm")], ["{}"], now))
        record_hits(con, [cache_key(canonical_request(identity("retired", model="old-llm")))] * 9, now)
        write_entries(con, entry_rows([identity("new")], ["{}"], later))
        enforce_capacity(
            con, "acme", "faq", "lfu", 2, None, admitted_at=later, current_versions={"tiny-llm": "1"}
        )
        assert _left(con) == ["e0", "new"]  # nine hits do not keep an entry no request reaches
