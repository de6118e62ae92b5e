"""Sequential look-alike resolution, with a hand-made verifier where the test is about the logic."""

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

    def refuse_different_text(pairs):
        return np.array([1.0 if a == b else 0.0 for a, b in pairs])

    out = resolve_lookalikes(
        vectors, ["cancel order", "cancel subscription"], [0.9] * 2, refuse_different_text, [0.5] * 2
    )
    assert out[1].is_leader
    assert out[1].best_similarity > 0.99


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


QUERY = "fluid flush due"


def _scores(table):
    """A hand-made verifier: the probability each (request, candidate) pair is given."""
    return lambda pairs: np.array([table.get(tuple(sorted(pair)), 0.0) for pair in pairs])


def test_a_request_two_stored_entries_pass_almost_equally_is_left_unanswered():
    # Two cached entries that were stored apart, and a request the verifier accepts
    # against both: it cannot mean the same as both, so neither is served.
    vectors = _unit([1, 0.02])
    brake = External(text="brake fluid flush", similarity=0.95, ref="brake")
    clutch = External(text="clutch fluid flush", similarity=0.94, ref="clutch")
    verify = _scores({("brake fluid flush", QUERY): 0.93, ("clutch fluid flush", QUERY): 0.88})
    texts, externals = [QUERY], [[brake, clutch]]
    out = resolve_lookalikes(vectors, texts, [0.9], verify, [0.7], externals, ambiguity_margins=[0.2])
    assert out[0].is_leader and out[0].ambiguous
    # A clear preference is served, and a margin of 0 turns the rule off.
    clear = _scores({("brake fluid flush", QUERY): 0.99, ("clutch fluid flush", QUERY): 0.71})
    out = resolve_lookalikes(vectors, texts, [0.9], clear, [0.7], externals, ambiguity_margins=[0.2])
    assert out[0].external is brake and not out[0].ambiguous
    out = resolve_lookalikes(vectors, texts, [0.9], verify, [0.7], externals, ambiguity_margins=[0.0])
    assert out[0].external is brake


def test_the_ambiguity_rule_needs_a_verifier_and_two_passing_candidates():
    vectors = _unit([1, 0.02])
    one = External(text="a", similarity=0.95, ref="a")
    two = External(text="b", similarity=0.94, ref="b")
    # Plain cosine: every candidate scores alike, so the rule would refuse everything.
    out = resolve_lookalikes(vectors, ["q"], [0.9], None, [0.5], [[one, two]], ambiguity_margins=[0.2])
    assert out[0].external is one
    # One candidate fails the verifier: the other is served, however close their scores.
    verify = _scores({("a", "q"): 0.75, ("b", "q"): 0.65})
    out = resolve_lookalikes(vectors, ["q"], [0.9], verify, [0.7], [[one, two]], ambiguity_margins=[0.2])
    assert out[0].external is one
