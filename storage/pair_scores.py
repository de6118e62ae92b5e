"""The verifier's learned scores, kept in the cache file: no pair is read twice by one stage.

A daily job sends many of yesterday's texts again. Those answered from the cache the day
before (served semantically, or folded into a look-alike's call) are no exact hits today,
so the same pairs meet the verifier again: each day, the same forward passes of its two
stages, its costliest part on a CPU. Each stage's learned score of a pair is kept here
under that stage's identity (its models' files, dtype and libraries:
inference/pair_verifier.py), so it is read, not recomputed. Only what the models compute
is kept; the checks and thresholds apply afresh on every look-up. Only hashes of the
pairs are kept, never their texts.

A kept score is worth keeping while a request may meet its pair again; rows that no
look-up has read for longer than any entry lives are removed with a partition's
write-back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from storage.exact_store import open_store


def score_key(stage: str, pair: tuple[str, str]) -> bytes:
    """SHA-256 of the stage and the pair exactly as the verifier reads it (its texts as
    given, in its order): the tokenizer sees every code point, so no normalising."""
    return hashlib.sha256(json.dumps([stage, *pair]).encode("ascii")).digest()


class VerifiedPairScores:
    """inference.pair_verifier.LearnedScoreMemory over the DuckDB cache file.

    Each call opens the file briefly, as the assets do (in one process this shares the
    database an asset may hold open); only the first runs the schema migration."""

    def __init__(self, duckdb_path: Path, now: datetime) -> None:
        self.duckdb_path = duckdb_path
        self.now = now
        self._migrated = False

    @contextmanager
    def _connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with open_store(self.duckdb_path, migrated=self._migrated) as con:
            self._migrated = True
            yield con

    def recall(self, stage: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Each pair's kept score under `stage`, NaN where none is kept; marks them used."""
        keys = [score_key(stage, pair) for pair in pairs]
        scores = np.full(len(keys), np.nan, dtype=np.float32)
        if not keys:
            return scores
        with self._connection() as con:
            con.register("asked_scores", pa.table({"key": pa.array(list(dict.fromkeys(keys)), pa.binary())}))
            kept = con.execute(
                """
                UPDATE verified_pair_scores s SET used_at = greatest(s.used_at, $now)
                FROM asked_scores a
                WHERE s.key = a.key
                RETURNING s.key, s.score
                """,
                {"now": self.now},
            ).fetchall()
            con.unregister("asked_scores")
        found = dict(kept)
        for position, key in enumerate(keys):
            if key in found:
                scores[position] = found[key]
        return scores

    def keep(self, stage: str, pairs: Sequence[tuple[str, str]], scores: np.ndarray) -> None:
        """Keep each pair's score under `stage` (a pair kept already keeps its score; a
        score that is not a number is not kept, so the pair is read again)."""
        scores = np.asarray(scores, dtype=np.float32)
        finite = np.isfinite(scores)
        if not finite.any():
            return
        incoming = pa.table(
            {
                "key": pa.array(
                    [score_key(stage, pair) for pair, ok in zip(pairs, finite, strict=True) if ok],
                    pa.binary(),
                ),
                "score": scores[finite],
            }
        )
        with self._connection() as con:
            con.register("incoming_scores", incoming)
            con.execute(
                """
                INSERT OR IGNORE INTO verified_pair_scores (key, stage, score, scored_at, used_at)
                SELECT key, $stage, any_value(score), $now, $now FROM incoming_scores GROUP BY key
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
    it be, it is read once more. With no entries there is no lifetime to measure by, and
    nothing is removed."""
    removed = con.execute(
        """
        DELETE FROM verified_pair_scores
        WHERE used_at < $now - (SELECT max(expires_at - created_at) FROM cache_entries)
        RETURNING 1
        """,
        {"now": now},
    ).fetchall()
    return len(removed)
