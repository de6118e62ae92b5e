"""The verifier's learned scores, kept in the cache file: no pair is read twice by one stage.

A daily job sends many of yesterday's texts again. Those answered from the cache the day
before (served semantically, or folded into a look-alike's call) are no exact hits today,
so the same pairs meet the verifier again: each day, the same forward passes of its two
stages, its costliest part on a CPU. Each stage's learned score of a pair is kept here
under that stage's identity (its weights, tokenizer and dtype: inference/pair_verifier.py),
so it is read, not recomputed; what is served does not change. Only hashes of the pairs
are kept, never their texts.

A kept score is worth keeping while a request may meet its pair again; rows that no
look-up has read for longer than any entry lives are removed with a partition's
write-back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from storage.exact_store import open_store


def pair_hash(pair: tuple[str, str]) -> str:
    """Hex SHA-256 of the pair exactly as the verifier reads it (its texts as given, in its
    order): the tokenizer sees every code point, so no normalising."""
    return hashlib.sha256(json.dumps(list(pair)).encode("ascii")).hexdigest()


class VerifiedPairScores:
    """inference.pair_verifier.LearnedScoreMemory over the DuckDB cache file.

    Each call opens the file briefly (storage/exact_store.open_store), as the assets do;
    in one process this shares the database an asset may hold open."""

    def __init__(self, duckdb_path: Path, now: datetime) -> None:
        self.duckdb_path = duckdb_path
        self.now = now

    def recall(self, stage: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Each pair's kept score under `stage`, NaN where none is kept; marks them used."""
        hashes = [pair_hash(pair) for pair in pairs]
        scores = np.full(len(hashes), np.nan, dtype=np.float32)
        if not hashes:
            return scores
        with open_store(self.duckdb_path) as con:
            con.register("asked_pairs", pa.table({"pair_hash": list(dict.fromkeys(hashes))}))
            kept = con.execute(
                """
                UPDATE verified_pair_scores s SET used_at = $now
                FROM asked_pairs a
                WHERE s.stage = $stage AND s.pair_hash = a.pair_hash
                RETURNING s.pair_hash, s.score
                """,
                {"now": self.now, "stage": stage},
            ).fetchall()
            con.unregister("asked_pairs")
        found = dict(kept)
        for position, key in enumerate(hashes):
            if key in found:
                scores[position] = found[key]
        return scores

    def keep(self, stage: str, pairs: Sequence[tuple[str, str]], scores: np.ndarray) -> None:
        """Keep each pair's score under `stage` (a pair kept already keeps its score)."""
        if not len(pairs):
            return
        incoming = pa.table(
            {"pair_hash": [pair_hash(pair) for pair in pairs], "score": np.asarray(scores, dtype=np.float32)}
        )
        with open_store(self.duckdb_path) as con:
            con.register("incoming_scores", incoming)
            con.execute(
                """
                INSERT INTO verified_pair_scores
                SELECT $stage, pair_hash, any_value(score), $now, $now
                FROM incoming_scores i
                WHERE NOT EXISTS (
                    SELECT 1 FROM verified_pair_scores s
                    WHERE s.stage = $stage AND s.pair_hash = i.pair_hash
                )
                GROUP BY pair_hash
                """,
                {"stage": stage, "now": self.now},
            )
            con.unregister("incoming_scores")


def count_kept(duckdb_path: Path, stage: str | None = None) -> int:
    """How many scores are kept (under one stage, or all)."""
    with open_store(duckdb_path) as con:
        return con.execute(
            "SELECT count(*) FROM verified_pair_scores WHERE $stage IS NULL OR stage = $stage",
            {"stage": stage},
        ).fetchone()[0]


def forget_unused(con: duckdb.DuckDBPyConnection, now: datetime) -> int:
    """Remove the scores no look-up has read or written for longer than any cache entry
    lives (its TTL); returns how many. Such a pair is unlikely to be met again, and should
    it be, it is read once more."""
    removed = con.execute(
        """
        DELETE FROM verified_pair_scores
        WHERE used_at < $now - (SELECT max(expires_at - created_at) FROM cache_entries)
        RETURNING 1
        """,
        {"now": now},
    ).fetchall()
    return len(removed)
