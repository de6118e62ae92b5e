"""Choosing thresholds from labelled pairs (the selection logic, on made-up scores)."""

import numpy as np

from storage.calibration import choose, minimum_served, operating_points


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


def test_too_few_served_pairs_never_qualify():
    duplicate = np.array([True] * 5 + [False] * 5)
    points = operating_points(np.full(10, 0.95), np.ones(10), duplicate)
    assert choose(points, 0.5) is None  # 10 served pairs are fewer than the 20 required
