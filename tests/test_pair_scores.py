"""Kept pair scores: each verifier stage reads a pair once; what it serves does not change."""

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from inference.pair_verifier import load_verifier, models_digest, stage_identity
from storage.config import load_settings
from storage.exact_store import open_store, write_entries
from storage.pair_scores import VerifiedPairScores, count_kept, forget_unused
from tests.helpers import entry_rows, identity

PAIRS = [
    ("How do I reset my password?", "How can I reset my password?"),
    ("cancel my order", "cancel my plan"),
]


def test_a_kept_score_is_recalled_under_its_stage_only(tmp_path: Path, now):
    kept = VerifiedPairScores(tmp_path / "cache.duckdb", now)
    assert np.isnan(kept.recall("stage-a", PAIRS)).all()
    kept.keep("stage-a", PAIRS, np.array([0.9, 0.1]))
    assert kept.recall("stage-a", PAIRS) == pytest.approx([0.9, 0.1])
    assert np.isnan(kept.recall("stage-b", PAIRS)).all()
    # A pair is kept in the order the verifier reads it: the other order is another pair.
    assert np.isnan(kept.recall("stage-a", [PAIRS[0][::-1]])).all()
    # Asked twice in one call, found twice.
    assert kept.recall("stage-a", [PAIRS[1], PAIRS[1]]) == pytest.approx([0.1, 0.1])


def test_a_pair_kept_again_keeps_its_first_score_and_no_text_is_stored(tmp_path: Path, now):
    path = tmp_path / "cache.duckdb"
    kept = VerifiedPairScores(path, now)
    kept.keep("stage-a", PAIRS, np.array([0.9, 0.1]))
    kept.keep("stage-a", [PAIRS[0], PAIRS[0]], np.array([0.5, 0.5]))
    assert kept.recall("stage-a", PAIRS) == pytest.approx([0.9, 0.1])
    assert count_kept(path) == 2 and count_kept(path, "stage-a") == 2 and count_kept(path, "stage-b") == 0
    with open_store(path) as con:
        stored = " ".join(
            str(value) for row in con.sql("SELECT * FROM verified_pair_scores").fetchall() for value in row
        )
    assert "password" not in stored and "cancel" not in stored


def test_scores_unread_for_longer_than_any_entry_lives_are_forgotten(tmp_path: Path, now):
    path = tmp_path / "cache.duckdb"
    VerifiedPairScores(path, now - timedelta(days=10)).keep("stage-a", PAIRS[:1], np.array([0.9]))
    VerifiedPairScores(path, now - timedelta(days=10)).keep("stage-a", PAIRS[1:], np.array([0.1]))
    # Reading a score marks it used: only the other one is left unread for 10 days.
    VerifiedPairScores(path, now - timedelta(days=1)).recall("stage-a", PAIRS[1:])
    with open_store(path) as con:
        assert forget_unused(con, now) == 0  # no entries: no lifetime to measure by
        write_entries(con, entry_rows([identity("q")], ['{"a": 1}'], now, ttl_seconds=7 * 86400))
        assert forget_unused(con, now) == 1
    kept = VerifiedPairScores(path, now)
    assert np.isnan(kept.recall("stage-a", PAIRS[:1])).all()
    assert kept.recall("stage-a", PAIRS[1:]) == pytest.approx([0.1])


def test_a_stage_identity_changes_with_its_files_and_dtype(tmp_path: Path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "weights.safetensors").write_bytes(b"weights one")
    (folder / "training.json").write_text("{}")
    first = stage_identity(models_digest([folder]), "float32")
    assert stage_identity(models_digest([folder]), "float32") == first
    assert stage_identity(models_digest([folder]), "bfloat16") != first
    (folder / "training.json").write_text('{"note": "how it was trained does not change what it computes"}')
    assert stage_identity(models_digest([folder]), "float32") == first
    (folder / "weights.safetensors").write_bytes(b"weights two")
    assert stage_identity(models_digest([folder]), "float32") != first


def test_a_score_that_is_not_a_number_is_not_kept(tmp_path: Path, now):
    kept = VerifiedPairScores(tmp_path / "cache.duckdb", now)
    kept.keep("stage-a", PAIRS, np.array([np.nan, 0.1]))
    recalled = kept.recall("stage-a", PAIRS)
    assert np.isnan(recalled[0]) and recalled[1] == pytest.approx(0.1)
    kept.keep("stage-a", PAIRS[:1], np.array([0.9]))  # read again, it is kept now
    assert kept.recall("stage-a", PAIRS[:1]) == pytest.approx([0.9])


@pytest.mark.slow
def test_a_remembering_verifier_scores_as_before_and_reads_each_pair_once(tmp_path: Path, now, monkeypatch):
    """The real shipped verifier (both stages) on a real DuckDB file."""
    settings = load_settings()
    base = settings.embedding_model("all-MiniLM-L6-v2").model_folder()
    verifier = load_verifier(str(base), dtype=settings.verifier_dtype)
    pairs = [
        ("How do I reset my password?", "How can I reset my password?"),
        ("How can I reset my password?", "How do I reset my password?"),  # the same pair, read once
        ("how do i cancel an order", "How do I cancel my order?"),
        ("Reset after 3 failed attempts", "Reset after 5 failed attempts"),  # vetoed: never read
        ("Is there a warranty on electronics?", "Do electronics come with a warranty?"),
        ("What are your opening hours?", "Do you ship internationally?"),  # under the second stage's floor
    ]
    at_least = [0.7] * len(pairs)
    fresh = verifier.score(pairs, at_least=at_least)
    path = tmp_path / "cache.duckdb"
    remembering = verifier.remembering(VerifiedPairScores(path, now))
    first = remembering.score(pairs, at_least=at_least)
    np.testing.assert_allclose(first, fresh, atol=1e-5)
    assert count_kept(path, verifier.identity) == 4  # distinct pairs no check vetoed
    read_by_second = count_kept(path, verifier.second_stage.identity)
    assert 1 <= read_by_second < 4

    def no_reading(pairs):
        raise AssertionError(f"read {len(pairs)} pairs again")

    monkeypatch.setattr(remembering, "_read", no_reading)
    monkeypatch.setattr(remembering.second_stage, "_read", no_reading)
    again = remembering.score(pairs, at_least=at_least)
    np.testing.assert_array_equal(again, first)
    # Under another dtype the scores differ a little: that is another stage, with none kept.
    other = load_verifier(str(base), dtype="float32" if verifier.dtype == "bfloat16" else "bfloat16")
    assert other.identity != verifier.identity
    assert other.second_stage.identity != verifier.second_stage.identity
    assert np.isnan(VerifiedPairScores(path, now).recall(other.identity, pairs)).all()
