"""Sequential look-alike resolution, with a hand-made verifier where the test is about the logic."""

import functools

import numpy as np

from storage.lookalikes import External, resolve_lookalikes


def _unit(*rows):
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def test_rows_fold_into_the_earliest_similar_leader():
    vectors = _unit([1, 0], [1, 0.05], [0, 1], [0.02, 1])
    out = resolve_lookalikes(vectors, ["a", "a2", "b", "b2"], [0.9] * 4, None, [0.5] * 4)
    assert [r.leader_row for r in out] == [None, 0, None, 2]
    assert [r.is_leader for r in out] == [True, False, True, False]


def test_a_follower_never_answers_another_row():
    # Row 1 is close to row 0 and row 2 is close to row 1 but not to row 0.
    vectors = _unit([1, 0], [0.8, 0.6], [0.28, 0.96])
    out = resolve_lookalikes(vectors, ["x", "y", "z"], [0.79] * 3, None, [0.5] * 3)
    assert out[1].leader_row == 0
    assert out[2].is_leader  # y folded into x, so y cannot answer z


def test_the_verifier_can_refuse_a_close_pair():
    vectors = _unit([1, 0], [1, 0.01])

    def refuse_different_text(pairs, at_least=None):
        return np.array([1.0 if a == b else 0.0 for a, b in pairs])

    out = resolve_lookalikes(
        vectors, ["cancel order", "cancel subscription"], [0.9] * 2, refuse_different_text, [0.5] * 2
    )
    assert out[1].is_leader
    assert out[1].best_similarity > 0.99


def test_a_refused_pair_never_passes_even_at_a_verify_threshold_of_zero():
    """The conflict checks refuse "increase" / "decrease" with a score of 0."""
    vectors = _unit([1, 0], [1, 0.01], [1, 0.02])
    cached = External(text="decrease the volume", similarity=0.999, ref="entry-1")

    def refuse_all(pairs, at_least=None):
        return np.zeros(len(pairs))

    texts = ["increase the volume", "decrease the volume", "lower the volume"]
    out = resolve_lookalikes(vectors, texts, [0.9] * 3, refuse_all, [0.0] * 3, [[], [], [cached]])
    assert all(r.is_leader for r in out)


def test_cached_entries_compete_with_earlier_rows_by_similarity():
    vectors = _unit([1, 0], [1, 0.1])
    cached = External(text="stored", similarity=0.999, ref="entry-1")
    out = resolve_lookalikes(vectors, ["a", "b"], [0.9] * 2, None, [0.5] * 2, [[], [cached]])
    assert out[1].external is cached and out[1].leader_row is None


def test_many_lookalikes_still_find_a_leader_past_the_precomputed_candidates():
    # Ten identical rows then one more: the ten after the first all fold into row 0.
    vectors = _unit(*([[1, 0]] * 12))
    out = resolve_lookalikes(vectors, [f"t{i}" for i in range(12)], [0.9] * 12, None, [0.5] * 12)
    assert all(r.leader_row == 0 for r in out[1:])


def test_a_blocked_pair_is_never_resolved_also_past_the_precomputed_candidates():
    # Rows 0-8 are 0.8 from the last row and 0.64 from each other; row 9 is 0.75 from it, so
    # the last row reaches row 9 only through the fallback that checks every leader so far.
    axes = np.eye(11, dtype=np.float32)
    vectors = np.stack(
        [0.8 * axes[10] + 0.6 * axes[i] for i in range(9)]
        + [0.75 * axes[10] + np.sqrt(1 - 0.75**2) * axes[9], axes[10]]
    )
    texts = [f"other {i}" for i in range(9)] + ["leader", "asker"]

    def only_leader_and_asker(pairs, at_least=None):
        return np.array([1.0 if {a, b} == {"leader", "asker"} else 0.0 for a, b in pairs])

    resolve = functools.partial(
        resolve_lookalikes, vectors, texts, [0.7] * 11, only_leader_and_asker, [0.5] * 11
    )
    assert resolve()[10].leader_row == 9
    assert resolve(blocked=frozenset({(10, 9)}))[10].is_leader


def test_rows_of_different_scopes_never_answer_each_other():
    """A replay that keeps each language to its scope: the same vector in another scope is a
    leader of its own, and each leader_row names a row of the whole batch."""
    from storage.lookalikes import resolve_within_scopes

    vectors = np.tile(np.eye(1, 4, dtype=np.float32), (4, 1))  # four identical vectors
    texts = ["fr one", "en one", "fr two", "en two"]
    resolved = resolve_within_scopes(["fr", "en", "fr", "en"], vectors, texts, [0.9] * 4, None, [0.0] * 4)
    assert [r.leader_row for r in resolved] == [None, None, 0, 1]
    assert [r.is_leader for r in resolved] == [True, True, False, False]
    together = resolve_within_scopes(["x"] * 4, vectors, texts, [0.9] * 4, None, [0.0] * 4)
    assert [r.leader_row for r in together] == [None, 0, 0, 0]


def _clustered(count, seed=0):
    """Unit vectors in tight clusters of a few rows each, so rows fold into earlier ones."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(count // 3 + 1, 16))
    vectors = centres[rng.integers(0, len(centres), count)] + 0.15 * rng.normal(size=(count, 16))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_rows_resolve_alike_whatever_the_block_of_similarities(monkeypatch):
    """Similarities are computed a block of rows at a time: the block's size changes nothing."""
    import storage.lookalikes

    vectors = _clustered(300)
    texts = [f"t{i}" for i in range(300)]

    def odd_rows_refused(pairs, at_least=None):
        return np.array([0.2 if int(a[1:]) % 7 == 0 else 0.9 for a, _ in pairs])

    def resolve():
        return resolve_lookalikes(vectors, texts, [0.8] * 300, odd_rows_refused, [0.5] * 300)

    whole = resolve()
    monkeypatch.setattr(storage.lookalikes, "SIMILARITY_BLOCK_ROWS", 7)
    assert resolve() == whole
    assert 50 < sum(r.is_leader for r in whole) < 250  # the case folds some rows, not all


def test_a_scope_of_look_alikes_that_all_differ_asks_the_verifier_a_bounded_number_of_pairs():
    """Templated requests that differ in a number embed close together and are all refused:
    each row is compared with its candidates and a few more leaders, not with every leader
    before it (2 million pairs for 2,000 such rows before)."""
    from storage.lookalikes import CANDIDATES_PER_ROW, FALLBACK_LEADERS

    count = 400
    vectors = _unit(*([[1, 0]] * count))
    asked = []

    def refuse_all(pairs, at_least=None):
        asked.append(len(pairs))
        return np.zeros(len(pairs))

    out = resolve_lookalikes(
        vectors, [f"order #{i}" for i in range(count)], [0.7] * count, refuse_all, [0.5] * count
    )
    assert all(r.is_leader for r in out)
    # At most 8 candidates and 8 more leaders a row; every leader before it would be 79,800 pairs.
    assert sum(asked) <= (CANDIDATES_PER_ROW + FALLBACK_LEADERS) * count <= 16 * count


def test_similarities_between_rows_are_never_held_whole(monkeypatch):
    """5,000 rows: a whole similarity matrix would take 100 MB; without folding (the look-up)
    none is built, and folding holds one block of rows at a time."""
    import tracemalloc

    count = 5_000
    vectors = _clustered(count)
    texts = [f"t{i}" for i in range(count)]
    for fold_within, limit_mb in ((False, 5), (True, 30)):
        tracemalloc.start()
        resolve_lookalikes(vectors, texts, [0.99] * count, None, [0.5] * count, fold_within=fold_within)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < limit_mb * 2**20, (fold_within, peak)


def test_blocked_leaders_take_no_place_among_the_few_checked_past_the_candidates(monkeypatch):
    """With 2 candidates and 2 more leaders a row: the last row may not be answered by leaders
    1 and 2 (a reported wrong answer), so leader 0, the next most similar, is the one checked."""
    import storage.lookalikes

    monkeypatch.setattr(storage.lookalikes, "CANDIDATES_PER_ROW", 2)
    monkeypatch.setattr(storage.lookalikes, "FALLBACK_LEADERS", 2)
    angles = [0.5, 0.1, 0.2, 0.01, 0.02, 0.0]  # leaders 0-2, rows 3 and 4 fold into 1, then the asker
    vectors = np.array([[np.cos(a), np.sin(a)] for a in angles], dtype=np.float32)
    thresholds = [1.5, 1.5, 1.5, 0.99, 0.99, 0.5]
    out = resolve_lookalikes(
        vectors, [str(i) for i in range(6)], thresholds, None, [0.5] * 6, blocked=frozenset({(5, 1), (5, 2)})
    )
    assert [r.leader_row for r in out] == [None, None, None, 1, 1, 0]
