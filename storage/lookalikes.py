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

from storage.scope_search import cosines


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


# Earlier rows considered per row, their verifier scores asked for in one batched call.
CANDIDATES_PER_ROW = 8
# Where more earlier rows than that pass the threshold (the candidates may all have been
# answered by others), the leaders among the rest compared with the row, the most similar
# first: a one-by-one cache would search its few nearest entries too, and comparing with
# every leader so far made the verifier's work grow with the square of a scope's misses
# (a scope of templated requests that all differ in a number: 2 million pairs for 2,000).
FALLBACK_LEADERS = 8
# Rows whose similarities to the rows before them are computed at once: memory is this many
# times the rows (about 200 MB for 100,000 rows), where the whole matrix would be rows².
SIMILARITY_BLOCK_ROWS = 512


@dataclass(frozen=True)
class External:
    """An entry already in the cache that a row may be answered by."""

    text: str
    similarity: float
    ref: object
    # What breaks a tie of similarity where a row is offered its nearest (resolve_lookalikes'
    # nearest, with row_keys): the entry's key, as the look-up orders its candidates.
    key: object = None


@dataclass(frozen=True)
class Resolution:
    leader_row: int | None = None  # answered by this earlier row of the batch
    external: External | None = None  # answered by this cached entry
    best_similarity: float | None = None  # best similarity seen, also when not answered
    # leader_row is a copy of this row's request (resolve_lookalikes' copy_of): an exact
    # match of the entry that row stored, not a semantic one.
    identical: bool = False

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
    nearest: int | None = None,
    copy_of: Sequence[int | None] | None = None,
    row_keys: Sequence | None = None,
) -> list[Resolution]:
    """Resolve each row; `verify` None means no verification.

    With `fold_within`, rows may be answered by earlier rows (they must then share
    one scope); without it, only by the external candidates given per row. A pair
    (row, earlier row) in `blocked` is never answered that way (a reported wrong answer).

    Two options make a batch resolve as a cache taking the rows one at a time would,
    where each leader is stored as an entry and each external is one (evaluate's replay):
    - nearest: a row is offered only its `nearest` most similar leaders and externals
      together, as a look-up searching the cache's `nearest` nearest entries; otherwise
      every external given and its most similar earlier rows are. Equal similarities are
      ordered by key (External.key, row_keys: the key each row is stored under) where
      row_keys is given, as the look-up orders its candidates; else externals first.
    - copy_of: for each row, the first earlier row with the same request, or None. A
      row whose copy became a leader (stored) is answered by it exactly (`identical`); one
      whose copies were all answered by others is resolved as any row, against the
      leaders before it.
    """
    count = len(texts)
    externals = externals or [[] for _ in range(count)]
    copy_of = copy_of or [None] * count
    stored_copy: dict[int, int] = {}  # a request's first row -> its row that became a leader
    resolutions: list[Resolution] = []
    is_leader = np.zeros(count, dtype=bool)  # rows that made their own call
    # Without folding no row answers another: no similarities between rows are needed.
    block_rows = SIMILARITY_BLOCK_ROWS if fold_within else max(count, 1)
    for start in range(0, count, block_rows):
        stop = min(start + block_rows, count)
        # Row i of the block against every row up to the block's end (only earlier ones are read).
        similarities = (
            cosines(vectors[start:stop], vectors[:stop], floor=min(thresholds[start:stop]))
            if fold_within
            else None
        )
        candidates, exhaustive = _candidates(similarities, start, stop, thresholds)
        scores = _verified_scores(texts, start, candidates, externals, thresholds, verify, verify_thresholds)
        for row in range(start, stop):
            first = row if copy_of[row] is None else copy_of[row]
            if first in stored_copy:
                resolutions.append(
                    Resolution(leader_row=stored_copy[first], best_similarity=1.0, identical=True)
                )
                continue
            earlier = None if similarities is None else similarities[row - start, :row]
            chosen = _choose(
                row,
                earlier,
                candidates[row - start],
                exhaustive[row - start],
                is_leader,
                externals[row],
                texts,
                thresholds[row],
                verify,
                verify_thresholds[row],
                scores,
                blocked,
                nearest,
                row_keys,
            )
            seen = [e.similarity for e in externals[row]]
            if earlier is not None and row:
                seen.append(float(earlier.max()))
            best_seen = max(seen, default=None)
            if chosen is None:
                is_leader[row] = True
                stored_copy[first] = row
                resolutions.append(Resolution(best_similarity=best_seen))
            else:
                resolutions.append(
                    Resolution(leader_row=chosen[0], external=chosen[1], best_similarity=best_seen)
                )
    return resolutions


def _candidates(
    similarities: np.ndarray | None, start: int, stop: int, thresholds: Sequence[float]
) -> tuple[list[list[int]], list[bool]]:
    """For each row of a block: its most similar earlier rows at or above its threshold (at
    most CANDIDATES_PER_ROW), and whether those are all there are."""
    if similarities is None:
        return [[] for _ in range(start, stop)], [True] * (stop - start)
    candidates, exhaustive = [], []
    for row in range(start, stop):
        earlier = similarities[row - start, :row]
        above = np.flatnonzero(earlier >= thresholds[row])
        ranked = above[np.argsort(-earlier[above], kind="stable")]
        candidates.append([int(j) for j in ranked[:CANDIDATES_PER_ROW]])
        exhaustive.append(len(ranked) <= CANDIDATES_PER_ROW)
    return candidates, exhaustive


def _choose(
    row: int,
    earlier: np.ndarray | None,
    candidates: list[int],
    exhaustive: bool,
    is_leader: np.ndarray,
    externals: Sequence[External],
    texts: Sequence[str],
    threshold: float,
    verify: Verify | None,
    verify_threshold: float,
    scores: dict,
    blocked: frozenset[tuple[int, int]],
    nearest: int | None = None,
    row_keys: Sequence | None = None,
) -> tuple[int | None, External | None] | None:
    """The leader row or cached entry that answers `row`, or None (it makes its own call)."""
    options: list[tuple[float, int | None, External | None]] = [
        (e.similarity, None, e) for e in externals if e.similarity >= threshold
    ]
    if earlier is not None:
        # Only rows that made their own call (leaders) answer others, where not blocked.
        options += [
            (float(earlier[j]), j, None) for j in candidates if is_leader[j] and (row, j) not in blocked
        ]
        if not exhaustive:
            extra = _fallback_leaders(earlier, is_leader[:row], candidates, threshold, row, blocked)
            options += [(float(earlier[j]), j, None) for j in extra]
    if nearest is not None:
        # Externals come sorted and first: without keys, on equal similarity they keep their place.
        def order(option: tuple[float, int | None, External | None]) -> tuple:
            similarity, leader, external = option
            if row_keys is None:
                return (-similarity,)
            return (-similarity, row_keys[leader] if leader is not None else external.key)

        options = sorted(options, key=order)[:nearest]

    def ref_of(leader: int | None, external: External | None) -> tuple:
        return ("row", leader) if leader is not None else ("external", id(external))

    def pair_of(leader: int | None, external: External | None) -> tuple:
        return ("pair", texts[row], texts[leader] if leader is not None else external.text, verify_threshold)

    unscored = []
    for _, leader, external in options:
        if (row, ref_of(leader, external)) in scores:
            continue
        # A pair of texts already scored at this bar (a repeated request's) is not read again.
        known = scores.get(pair_of(leader, external))
        if known is not None:
            scores[(row, ref_of(leader, external))] = known
        else:
            unscored.append((leader, external))
    if verify is not None and unscored:
        # Leaders past the batch's candidates (the fallback), scored as they are needed.
        pairs = [pair_of(*option) for option in unscored]
        fresh = verify([(a, b) for _, a, b, _ in pairs], at_least=[verify_threshold] * len(unscored))
        for option, pair, score in zip(unscored, pairs, fresh, strict=True):
            scores[(row, ref_of(*option))] = scores[pair] = float(score)
    chosen, chosen_rank = None, None
    for similarity, leader, external in options:
        ref = ref_of(leader, external)
        score = 1.0 if verify is None else scores.get((row, ref), 0.0)
        # The verifier's confidence ranks the candidates that pass it, then similarity. A pair
        # the conflict checks refuse, or too long to read, scores 0: it never passes, also
        # at a verify threshold of 0.
        rank = (score, similarity)
        if score >= verify_threshold and score > 0 and (chosen_rank is None or rank > chosen_rank):
            chosen, chosen_rank = (leader, external), rank
    return chosen


def _fallback_leaders(
    earlier: np.ndarray,
    is_leader: np.ndarray,
    candidates: list[int],
    threshold: float,
    row: int,
    blocked: frozenset[tuple[int, int]],
) -> list[int]:
    """Of the leaders at or above the row's threshold, not among its candidates already and
    not blocked from answering it, the FALLBACK_LEADERS most similar (the earlier row first
    on equal similarity), in row order, as ties between them are broken."""
    similar = np.flatnonzero(is_leader & (earlier >= threshold))
    similar = similar[~np.isin(similar, candidates)]
    if blocked:
        similar = np.asarray([j for j in similar if (row, int(j)) not in blocked], dtype=np.int64)
    if len(similar) > FALLBACK_LEADERS:
        similar = similar[np.lexsort((similar, -earlier[similar]))[:FALLBACK_LEADERS]]
    return [int(j) for j in np.sort(similar)]


def resolve_within_scopes(
    scopes: Sequence[object],
    vectors: np.ndarray,
    texts: Sequence[str],
    thresholds: Sequence[float],
    verify: Verify | None,
    verify_thresholds: Sequence[float],
    externals: Sequence[Sequence[External]] | None = None,
    nearest: int | None = None,
    copy_of: Sequence[int | None] | None = None,
    row_keys: Sequence | None = None,
) -> list[Resolution]:
    """resolve_lookalikes where only rows of one scope answer each other (a replay that
    keeps each text's language to its own scope): each scope's rows in their order, every
    leader_row a row of the whole batch. The externals given must be of the row's scope,
    and copies (copy_of) are of one scope, as they are of one request."""
    if len(set(scopes)) <= 1:
        return resolve_lookalikes(
            vectors,
            texts,
            thresholds,
            verify,
            verify_thresholds,
            externals=externals,
            nearest=nearest,
            copy_of=copy_of,
            row_keys=row_keys,
        )
    externals = externals or [[] for _ in texts]
    copy_of = copy_of or [None] * len(texts)
    rows_by_scope: dict[object, list[int]] = {}
    for row, scope in enumerate(scopes):
        rows_by_scope.setdefault(scope, []).append(row)
    resolutions: list[Resolution] = [Resolution()] * len(texts)
    for rows in rows_by_scope.values():
        within = {row: n for n, row in enumerate(rows)}
        resolved = resolve_lookalikes(
            vectors[rows],
            [texts[r] for r in rows],
            [thresholds[r] for r in rows],
            verify,
            [verify_thresholds[r] for r in rows],
            externals=[externals[r] for r in rows],
            nearest=nearest,
            copy_of=[None if copy_of[r] is None else within[copy_of[r]] for r in rows],
            row_keys=None if row_keys is None else [row_keys[r] for r in rows],
        )
        for row, resolution in zip(rows, resolved, strict=True):
            leader = None if resolution.leader_row is None else rows[resolution.leader_row]
            resolutions[row] = dataclasses.replace(resolution, leader_row=leader)
    return resolutions


def _verified_scores(texts, start, candidates, externals, thresholds, verify, verify_thresholds) -> dict:
    """Verifier scores of every candidate pair of a block's rows (from `start`), in one batched call."""
    if verify is None:
        return {}
    keys, pairs, at_least = [], [], []
    for row, rows in enumerate(candidates, start):
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
    scores: dict = {}
    for key, pair, bar, score in zip(keys, pairs, at_least, verify(pairs, at_least=at_least), strict=True):
        # By pair of texts too: a fallback pair already read here is not read again (_choose).
        scores[key] = scores[("pair", *pair, bar)] = float(score)
    return scores


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
