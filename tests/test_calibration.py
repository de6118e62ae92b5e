"""Choosing thresholds from labelled pairs (the selection logic, on made-up scores) and
from a labelled workload replayed at each setting (the real model and verifier)."""

import numpy as np
import pytest

from storage.calibration import choose, minimum_served, operating_points, replay_points
from storage.replay import BLOCK_SIZE, ReplayStores, replay_workload


def _pairs():
    rng = np.random.default_rng(0)
    duplicate = np.array([True] * 300 + [False] * 300)
    # Near misses sit as close in cosine as paraphrases; only the verifier tells them apart.
    cosine = np.concatenate([rng.uniform(0.75, 0.99, 300), rng.uniform(0.75, 0.99, 300)])
    verifier = np.concatenate([rng.uniform(0.6, 1.0, 300), rng.uniform(0.0, 0.55, 300)])
    return cosine, verifier, duplicate


def test_plain_cosine_cannot_meet_a_strict_target_but_the_verifier_can():
    cosine, verifier, duplicate = _pairs()
    points = operating_points(cosine, verifier, duplicate)
    assert choose([p for p in points if p.verify_threshold is None], 0.01) is None
    chosen = choose(points, 0.01)
    assert chosen is not None and chosen.verify_threshold is not None
    assert chosen.precision >= 0.99 and chosen.recall > 0.5


def test_the_choice_maximises_recall_within_the_target():
    cosine, verifier, duplicate = _pairs()
    points = operating_points(cosine, verifier, duplicate)
    chosen = choose(points, 0.01)
    for p in points:
        if p.served >= minimum_served(0.01) and p.wrong_rate is not None and p.wrong_rate <= 0.01:
            assert p.recall <= chosen.recall


def test_pairs_the_pipeline_cannot_serve_semantically_are_never_served():
    """A pair with a text given exact matching only (its language, its length) is a miss at
    every setting: it keeps its place in recall's denominator and is never counted served."""
    cosine, verifier, duplicate = _pairs()
    servable = np.ones_like(duplicate)
    servable[::3] = False  # a third of the pairs, some duplicates and some not
    only_plain = {False: servable, True: np.ones_like(duplicate)}
    everything = operating_points(cosine, verifier, duplicate)
    masked = operating_points(cosine, verifier, duplicate, {False: servable, True: servable})
    for full, point in zip(everything, masked, strict=True):
        assert point.positives == full.positives
        masked_off = (cosine >= point.threshold) & ~servable
        if point.verify_threshold is not None:
            masked_off &= verifier >= point.verify_threshold
        assert point.served == full.served - int(masked_off.sum())
    # Each mask applies to its own settings (the verifier's languages may differ).
    plain_masked = operating_points(cosine, verifier, duplicate, only_plain)
    for full, point in zip(everything, plain_masked, strict=True):
        if point.verify_threshold is not None:
            assert point.served == full.served
        elif point.threshold == 0.5:
            assert point.served == full.served - int((~servable).sum())


def test_too_few_served_pairs_never_qualify():
    duplicate = np.array([True] * 5 + [False] * 5)
    points = operating_points(np.full(10, 0.95), np.ones(10), duplicate)
    assert choose(points, 0.5) is None  # 10 served pairs are fewer than the 20 required


@pytest.mark.slow
def test_a_workload_replayed_at_each_setting_counts_what_evaluate_counts(tmp_path):
    """The calibration replay and `evaluate` (real stores, real model and verifier) agree on
    every count, over two replay blocks and with repeats, at a verified and a plain setting."""
    import dataclasses
    import json
    from pathlib import Path

    from inference.embedder import load_embedder
    from orchestration.evaluation import evaluate, verifier_for
    from storage.config import load_settings
    from storage.keys import normalized_text

    # A training family file (paraphrases and near misses), past one replay block.
    source = Path(__file__).resolve().parents[1] / "inference" / "verifier_data" / "written" / "part30.jsonl"
    rows = [json.loads(line) for line in source.read_text().splitlines()[:280]]
    rows += rows[:40]  # repeats: of inserted texts (exact hits) and of served ones (semantic again)
    assert len(rows) > BLOCK_SIZE
    workload = tmp_path / "w.jsonl"
    workload.write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = load_settings(home=tmp_path)
    default = settings.namespace("default")
    spec = settings.embedding_model(default.semantic.embedding_model)
    embedder = load_embedder(spec.engine, spec.model_folder, spec.dtype)
    texts = [r["text"] for r in rows]
    vectors = embedder(list(dict.fromkeys(normalized_text(t) for t in texts)))
    points = replay_points(
        texts, [r["group"] for r in rows], vectors, verifier_for(settings), (0.7, 0.8), (None, 0.7)
    )
    by_setting = {(p.threshold, p.verify_threshold): p for p in points}
    for threshold, verify_threshold in ((0.7, 0.7), (0.8, None)):
        semantic = dataclasses.replace(
            default.semantic,
            threshold=threshold,
            verify=verify_threshold is not None,
            verify_threshold=verify_threshold or 0.0,
        )
        report = evaluate(settings, workload, dataclasses.replace(default, semantic=semantic), None)
        point = by_setting[(threshold, verify_threshold)]
        assert report["exact_hits"] > 0 and report["semantic_hits"] > 0
        assert (point.served, point.right) == (report["semantic_hits"], report["right_semantic_hits"])
        assert point.recall == pytest.approx(report["recall"])
    verified, plain = by_setting[(0.7, 0.7)], by_setting[(0.8, None)]
    assert verified.precision > plain.precision  # the near misses of this workload need the verifier


def test_the_replay_counts_across_blocks_match_the_stores_replay(tmp_path):
    """Synthetic vectors and a made-up verifier, real DuckDB and LanceDB stores: 400 rows
    (two blocks and a half), clustered so that many stored entries compete, where the
    semantic index's candidate limit decides what later blocks can be served by."""
    import dataclasses
    import hashlib

    from storage.config import load_settings

    rng = np.random.default_rng(3)
    centres = rng.normal(size=(12, 16))
    rows, vector_of = [], {}
    for _ in range(400):
        group = int(rng.integers(24))  # groups 2k and 2k+1 share a centre: near misses
        text = f"request {int(rng.integers(300))} of group {group}"  # some texts repeat
        vector = centres[group // 2] + 0.25 * rng.normal(size=16)
        vector_of.setdefault(text, vector / np.linalg.norm(vector))
        rows.append({"text": text, "group": str(group)})

    def embed(texts):
        return np.array([vector_of[t] for t in texts], dtype=np.float32)

    def made_up_verifier(pairs, at_least=None):
        digests = [hashlib.sha256("|".join(sorted(pair)).encode()).digest() for pair in pairs]
        return np.array([d[0] / 255 for d in digests], dtype=np.float32)

    texts = [r["text"] for r in rows]
    default = load_settings(home=tmp_path).namespace("default")

    def points_replayed(exact_only=None):
        vectors = embed(list(dict.fromkeys(texts)))
        groups = [r["group"] for r in rows]
        return replay_points(
            texts, groups, vectors, made_up_verifier, (0.8,), (None, 0.5), exact_only=exact_only
        )

    def stores_replay(point, name, skip_reasons=None):
        semantic = dataclasses.replace(
            default.semantic,
            threshold=point.threshold,
            verify=point.verify_threshold is not None,
            verify_threshold=point.verify_threshold or 0.0,
        )
        folder = tmp_path / f"{name}-{point.verify_threshold}"
        return replay_workload(
            rows,
            dataclasses.replace(default, semantic=semantic),
            ReplayStores(folder / "cache.duckdb", folder / "lance"),
            embed,
            16,
            made_up_verifier if point.verify_threshold is not None else None,
            skip_reasons=skip_reasons,
        )

    points = points_replayed()
    for point in points:
        report = stores_replay(point, "stores")
        assert report["semantic_hits"] > 50
        assert (point.served, point.right) == (report["semantic_hits"], report["right_semantic_hits"])
        assert point.recall == pytest.approx(report["recall"])

    # Texts the pipeline gives exact matching only (their language, their length) are
    # neither served nor serving, in both replays alike: here every seventh request number,
    # and where settings verify every fifth too (the verifier may read fewer languages).
    plain_skipped = {text for text in texts if int(text.split()[1]) % 7 == 0}
    verified_skipped = plain_skipped | {text for text in texts if int(text.split()[1]) % 5 == 0}

    def skip_reasons_for(skipped):
        def skip_reasons(batch):
            return ["exact matching only" if text in skipped else None for text in batch]

        return skip_reasons

    skipping_points = points_replayed({False: plain_skipped, True: verified_skipped})
    for point, unskipped in zip(skipping_points, points, strict=True):
        skipped = verified_skipped if point.verify_threshold is not None else plain_skipped
        report = stores_replay(point, "skipping", skip_reasons_for(skipped))
        assert report["semantic_skipped"] > 0 and point.served < unskipped.served
        assert (point.served, point.right) == (report["semantic_hits"], report["right_semantic_hits"])
        assert point.recall == pytest.approx(report["recall"])


def test_entries_of_equal_similarity_are_ordered_as_the_stores_replay_orders_them(tmp_path):
    """Two stored requests of different groups with one vector (a case or accent apart, on an
    uncased model), then a request as near to both: which one serves it is a tie, which the
    look-up breaks by cache key. The in-memory replay given evaluate's keys breaks it the same
    way, so calibrate and evaluate count alike; ordered by text instead it counts otherwise
    (the made-up verifier refuses the tied pair, so both are stored)."""
    import dataclasses
    import functools

    from storage.config import load_settings
    from storage.replay import replay_key

    rng = np.random.default_rng(5)
    vector_of, rows = {}, []
    for i in range(60):
        vector = rng.normal(size=16)
        vector /= np.linalg.norm(vector)
        for text, group in ((f"tied {i} first", f"{i}-a"), (f"tied {i} second", f"{i}-b")):
            vector_of[text] = vector
            rows.append({"text": text, "group": group})
    for i in range(60):
        asked = vector_of[f"tied {i} first"] + 0.05 * rng.normal(size=16)
        vector_of[f"asked {i}"] = asked / np.linalg.norm(asked)
        rows.append({"text": f"asked {i}", "group": f"{i}-a"})

    def embed(texts):
        return np.array([vector_of[t] for t in texts], dtype=np.float32)

    def refuses_the_tied_pairs(pairs, at_least=None):
        return np.array([0.0 if "tied" in a and "tied" in b else 1.0 for a, b in pairs], dtype=np.float32)

    texts = [row["text"] for row in rows]
    groups = [row["group"] for row in rows]
    vectors = embed(list(dict.fromkeys(texts)))
    default = load_settings(home=tmp_path).namespace("default")
    semantic = dataclasses.replace(default.semantic, threshold=0.8, verify=True, verify_threshold=0.5)
    report = replay_workload(
        rows,
        dataclasses.replace(default, semantic=semantic),
        ReplayStores(tmp_path / "cache.duckdb", tmp_path / "lance"),
        embed,
        16,
        refuses_the_tied_pairs,
    )
    (by_key,) = replay_points(
        texts,
        groups,
        vectors,
        refuses_the_tied_pairs,
        (0.8,),
        (0.5,),
        tie_key=functools.partial(replay_key, "default", "evaluation"),
    )
    (by_text,) = replay_points(texts, groups, vectors, refuses_the_tied_pairs, (0.8,), (0.5,))
    assert report["semantic_hits"] == 60 and 0 < report["right_semantic_hits"] < 60
    assert (by_key.served, by_key.right) == (report["semantic_hits"], report["right_semantic_hits"])
    assert by_text.right == 60  # "first" < "second": the text's order is another count


def test_what_calibrate_writes_for_each_kind_of_choice(tmp_path):
    """Plain cosine turns the verifier off and leaves its threshold as it was; no choice
    turns semantic reuse off; a verified choice writes both thresholds."""
    from orchestration.evaluation import calibrated_settings
    from storage.calibration import Operating
    from storage.config import load_settings, write_namespace_override

    default = load_settings().namespace("faq", "acme").semantic
    record = {"source": "pairs.jsonl"}
    plain = Operating(0.9, None, served=40, right=40, precision=1.0, recall=0.5, positives=80)
    write_namespace_override(tmp_path, "faq", calibrated_settings(plain, record), tenant="acme")
    written = load_settings(home=tmp_path).namespace("faq", "acme").semantic
    assert (written.enabled, written.threshold, written.verify) == (True, 0.9, False)
    assert written.verify_threshold == default.verify_threshold

    verified = Operating(0.7, 0.95, served=60, right=60, precision=1.0, recall=0.75, positives=80)
    write_namespace_override(tmp_path, "faq", calibrated_settings(verified, record), tenant="acme")
    written = load_settings(home=tmp_path).namespace("faq", "acme").semantic
    assert (written.threshold, written.verify, written.verify_threshold) == (0.7, True, 0.95)

    write_namespace_override(tmp_path, "faq", calibrated_settings(None, record), tenant="acme")
    assert load_settings(home=tmp_path).namespace("faq", "acme").semantic.enabled is False


def test_a_bfloat16_calibration_reads_a_pair_near_its_threshold_in_float32_as_the_pipeline_does(
    minilm, monkeypatch
):
    """One bfloat16 score served every verify threshold of the grid, so a pair near a cut was
    decided as no look-up decides it (a review counted 8 of 900 pairs); each threshold now asks
    the verifier as the pipeline does, the stages' scores kept for the run."""
    from inference.pair_verifier import PairVerifier, load_verifier
    from storage.config import load_settings
    from tests.test_verifier import HSA

    base = str(load_settings().embedding_model("all-MiniLM-L6-v2").model_folder())
    in_bfloat16 = load_verifier(base, dtype="bfloat16")
    asked = []
    original = PairVerifier.score

    def recording(self, pairs, vetoes=True, at_least=None):
        asked.append((self.dtype, None if at_least is None else [float(b) for b in at_least]))
        return original(self, pairs, vetoes=vetoes, at_least=at_least)

    monkeypatch.setattr(PairVerifier, "score", recording)
    texts = list(HSA)  # 0.694 in bfloat16 alone: within 0.15 logits of 0.7
    replay_points(texts, ["hsa", "hsa"], minilm(texts), in_bfloat16.score, (0.3,), (0.1, 0.7, 0.97))
    # (the second stage's own asks carry no threshold)
    bfloat16_bars = [bars for dtype, bars in asked if dtype == "bfloat16" and bars is not None]
    assert bfloat16_bars == [[0.1], [0.7], [0.97]]  # one ask a threshold
    assert ("float32", [0.7]) in asked  # near 0.7: read again in float32, as a look-up would


def test_operating_points_take_one_score_array_per_verify_threshold():
    """A bfloat16 verifier's scores hold for the threshold they were asked at (a pair near it
    was read in float32), so each verify threshold of the grid counts with its own array."""
    from storage.calibration import VERIFY_GRID

    cosine = np.array([0.9, 0.9])
    duplicate = np.array([True, False])
    per_threshold = {t: np.array([0.69, 0.2]) for t in VERIFY_GRID if t is not None}
    per_threshold[0.7] = np.array([0.71, 0.2])  # as read in float32 near 0.7
    by_setting = {
        (p.threshold, p.verify_threshold): p for p in operating_points(cosine, per_threshold, duplicate)
    }
    assert by_setting[(0.5, 0.7)].served == 1 and by_setting[(0.5, 0.6)].served == 1
    assert by_setting[(0.5, 0.8)].served == 0
    single = {
        (p.threshold, p.verify_threshold): p
        for p in operating_points(cosine, np.array([0.69, 0.2]), duplicate)
    }
    assert single[(0.5, 0.7)].served == 0
