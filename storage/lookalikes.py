"""Sequential look-alike resolution: which earlier request (if any) may answer each request.

Rows are taken in order. A row is answered by an earlier *leader* (a row that was
not itself answered by another) or by an external candidate (an entry already in
the cache) when the similarity is at or above its threshold and the verifier
accepts the pair, the verifier's surest choice first (then the most similar);
otherwise it becomes a leader. This is what a cache
replayed one request at a time would do; here it runs for a whole batch, with
similarities computed as matrix products and the verifier called on all
candidate pairs at once.

The pipeline uses it to fold look-alike misses of a partition into one model
call; `evaluate` uses it to replay a workload block by block with the counts a
one-by-one replay would give.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class Verify(Protocol):
    """Scores input pairs from 0 to 1 (inference.pair_verifier.PairVerifier.score).
    `at_least` gives the threshold each score will be held to, so a verifier may spare
    work on a pair that cannot reach it (it must then score it under the threshold)."""

    def __call__(
        self, pairs: list[tuple[str, str]], at_least: Sequence[float] | None = None
    ) -> np.ndarray: ...


def unread_pairs(verify: Verify | None, pairs: list[tuple[str, str]], among=None) -> np.ndarray:
    """Which pairs the verifier behind `verify` does not read whole (it scores them 0,
    inference.pair_verifier.PairVerifier.unread); none where it says nothing of that. A
    caller for whom 0 is the unsafe answer (a reported wrong answer must still block) asks."""
    unread = getattr(getattr(verify, "__self__", None), "unread", None)
    return np.zeros(len(pairs), dtype=bool) if unread is None else unread(pairs, among=among)


# Earlier rows considered per row before falling back to an exhaustive check.
CANDIDATES_PER_ROW = 8


@dataclass(frozen=True)
class External:
    """An entry already in the cache that a row may be answered by."""

    text: str
    similarity: float
    ref: object


@dataclass(frozen=True)
class Resolution:
    leader_row: int | None = None  # answered by this earlier row of the batch
    external: External | None = None  # answered by this cached entry
    best_similarity: float | None = None  # best similarity seen, also when not answered

    @property
    def is_leader(self) -> bool:
        return self.leader_row is None and self.external is None


def resolve_lookalikes(
    vectors: np.ndarray,
    texts: Sequence[str],
    thresholds: Sequence[float],
    verify: Verify | None,
    verify_thresholds: Sequence[float],
    externals: Sequence[Sequence[External]] | None = None,
    fold_within: bool = True,
    blocked: frozenset[tuple[int, int]] = frozenset(),
) -> list[Resolution]:
    """Resolve each row; `verify` None means no verification.

    With `fold_within`, rows may be answered by earlier rows (they must then share
    one scope); without it, only by the external candidates given per row. A pair
    (row, earlier row) in `blocked` is never answered that way (a reported wrong answer).
    """
    count = len(texts)
    externals = externals or [[] for _ in range(count)]
    if fold_within and count:
        similarities = vectors @ vectors.T
    else:
        # No row answers another: an all-minus-one matrix keeps every threshold unmet.
        similarities = np.full((count, count), -1.0, dtype=np.float32)
    candidates: list[list[int]] = []
    exhaustive: list[bool] = []
    for row in range(count):
        earlier = similarities[row, :row]
        above = np.flatnonzero(earlier >= thresholds[row])
        ranked = above[np.argsort(-earlier[above], kind="stable")]
        candidates.append([int(j) for j in ranked[:CANDIDATES_PER_ROW]])
        exhaustive.append(len(ranked) <= CANDIDATES_PER_ROW)
    scores = _verified_scores(texts, candidates, externals, thresholds, verify, verify_thresholds)
    leaders: list[int] = []
    resolutions: list[Resolution] = []
    for row in range(count):
        options: list[tuple[float, int | None, External | None]] = [
            (float(similarities[row, j]), j, None) for j in candidates[row]
        ]
        options += [(e.similarity, None, e) for e in externals[row] if e.similarity >= thresholds[row]]
        if not exhaustive[row]:
            # Too many look-alikes to pre-check: compare with every leader so far.
            extra = [
                j for j in leaders if j not in candidates[row] and similarities[row, j] >= thresholds[row]
            ]
            options += [(float(similarities[row, j]), j, None) for j in extra]
            if verify is not None and extra:
                fresh = verify(
                    [(texts[row], texts[j]) for j in extra], at_least=[verify_thresholds[row]] * len(extra)
                )
                scores.update({(row, ("row", j)): float(s) for j, s in zip(extra, fresh, strict=True)})
        chosen, chosen_rank = None, None
        for similarity, leader, external in options:
            if leader is not None and (not resolutions[leader].is_leader or (row, leader) in blocked):
                continue  # only rows that made their own call (leaders) answer others, where not blocked
            ref = ("row", leader) if leader is not None else ("external", id(external))
            score = 1.0 if verify is None else scores.get((row, ref), 0.0)
            # The verifier's confidence ranks the candidates that pass it, then similarity.
            rank = (score, similarity)
            if score >= verify_thresholds[row] and (chosen_rank is None or rank > chosen_rank):
                chosen, chosen_rank = (leader, external), rank
        seen = [e.similarity for e in externals[row]]
        if row and fold_within:
            seen.append(float(similarities[row, :row].max()))
        best_seen = max(seen, default=None)
        if chosen is None:
            leaders.append(row)
            resolutions.append(Resolution(best_similarity=best_seen))
        else:
            resolutions.append(
                Resolution(leader_row=chosen[0], external=chosen[1], best_similarity=best_seen)
            )
    return resolutions


def resolve_within_scopes(
    scopes: Sequence[object],
    vectors: np.ndarray,
    texts: Sequence[str],
    thresholds: Sequence[float],
    verify: Verify | None,
    verify_thresholds: Sequence[float],
    externals: Sequence[Sequence[External]] | None = None,
) -> list[Resolution]:
    """resolve_lookalikes where only rows of one scope answer each other (a replay that
    keeps each text's language to its own scope): each scope's rows in their order, every
    leader_row a row of the whole batch. The externals given must be of the row's scope."""
    if len(set(scopes)) <= 1:
        return resolve_lookalikes(vectors, texts, thresholds, verify, verify_thresholds, externals=externals)
    externals = externals or [[] for _ in texts]
    rows_by_scope: dict[object, list[int]] = {}
    for row, scope in enumerate(scopes):
        rows_by_scope.setdefault(scope, []).append(row)
    resolutions: list[Resolution] = [Resolution()] * len(texts)
    for rows in rows_by_scope.values():
        resolved = resolve_lookalikes(
            vectors[rows],
            [texts[r] for r in rows],
            [thresholds[r] for r in rows],
            verify,
            [verify_thresholds[r] for r in rows],
            externals=[externals[r] for r in rows],
        )
        for row, resolution in zip(rows, resolved, strict=True):
            leader = None if resolution.leader_row is None else rows[resolution.leader_row]
            resolutions[row] = dataclasses.replace(resolution, leader_row=leader)
    return resolutions


def _verified_scores(texts, candidates, externals, thresholds, verify, verify_thresholds) -> dict:
    """Verifier scores of every candidate pair, in one batched call."""
    if verify is None:
        return {}
    keys, pairs, at_least = [], [], []
    for row, rows in enumerate(candidates):
        for j in rows:
            keys.append((row, ("row", j)))
            pairs.append((texts[row], texts[j]))
            at_least.append(verify_thresholds[row])
        for external in externals[row]:
            if external.similarity >= thresholds[row]:
                keys.append((row, ("external", id(external))))
                pairs.append((texts[row], external.text))
                at_least.append(verify_thresholds[row])
    if not pairs:
        return {}
    return dict(zip(keys, (float(s) for s in verify(pairs, at_least=at_least)), strict=True))


# (one scope's misses, their vectors, the verifier or None) -> (row, earlier row) pairs that
# must not fold together (storage/wrong_answers.py: reported wrong answers).
BlockedPairs = Callable[[object, np.ndarray, Verify | None], frozenset[tuple[int, int]]]


def fold_lookalike_misses(
    misses, verify: Verify | None, blocked_pairs: BlockedPairs | None = None
) -> dict[bytes, bytes]:
    """Map each miss key answered by a look-alike to its leader's key.

    misses (a Polars frame, ordered): key, input, semantic_scope, semantic_threshold,
    semantic_verify, semantic_verify_threshold, vector (null where semantic reuse is off).
    Only rows of the same scope (tenant, namespace, model, version, params, prefix,
    embedding model) can fold together; identical keys are the caller's to fold, and
    `blocked_pairs` names pairs of a scope's rows that must not.
    """
    import polars as pl

    candidates = misses.filter(pl.col("vector").is_not_null()).unique(
        subset="key", keep="first", maintain_order=True
    )
    leaders: dict[bytes, bytes] = {}
    for _, group in candidates.group_by("semantic_scope", maintain_order=True):
        keys = group["key"].to_list()
        vectors = np.asarray(group["vector"].to_list(), dtype=np.float32)
        group_verify = verify if group["semantic_verify"][0] else None
        resolved = resolve_lookalikes(
            vectors,
            group["input"].to_list(),
            group["semantic_threshold"].to_list(),
            group_verify,
            group["semantic_verify_threshold"].to_list(),
            blocked=blocked_pairs(group, vectors, group_verify) if blocked_pairs else frozenset(),
        )
        for key, resolution in zip(keys, resolved, strict=True):
            if resolution.leader_row is not None:
                leaders[key] = keys[resolution.leader_row]
    return leaders
