"""Choosing a namespace's semantic threshold and verifier threshold from labelled data.

From pairs: a pair is "served" at settings (t, v) when its cosine similarity is at
least t and, with verification, its verifier score is at least v. Over the pairs:
precision is the share of served pairs that are true duplicates, recall the share of
true duplicates served.

From a workload (rows {"text", "group"}, as `evaluate` reads them): each setting is
replayed through the cache's own look-alike resolution, so a "served" row is a semantic
hit and precision and recall are `evaluate`'s. A replay sees what a pair cannot: a
request competes with every entry before it, and one wrong entry can serve many rows.

Calibration picks the settings with the most right hits whose wrong-hit rate (1 -
precision) stays within the target, on enough served pairs or hits for the rate to
mean something. Over pairs that is the most recall; in a replay, recall's denominator
(rows whose group already had an entry) moves with the setting, since a row served
wrongly is not inserted, so a setting can gain recall by a wrong hit alone.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from fractions import Fraction

import numpy as np

from storage.lookalikes import Verify, resolve_within_scopes

COSINE_GRID = tuple(round(0.5 + 0.02 * i, 2) for i in range(25))  # 0.50 ... 0.98
VERIFY_GRID = (None, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99)
# A replay costs far more than counting pairs, so a workload is calibrated on a coarser grid.
REPLAY_COSINE_GRID = (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
REPLAY_VERIFY_GRID = (None, 0.5, 0.7, 0.8, 0.9, 0.95, 0.97)


@dataclass(frozen=True)
class Operating:
    threshold: float
    verify_threshold: float | None  # None: plain cosine, no verifier
    served: int
    right: int
    precision: float | None
    recall: float | None
    positives: int  # recall's denominator, so that points of several workloads can be pooled

    @classmethod
    def counted(
        cls, threshold: float, verify_threshold: float | None, served: int, right: int, positives: int
    ) -> Operating:
        """A point from its counts; `positives` is recall's denominator."""
        return cls(
            threshold,
            verify_threshold,
            served,
            right,
            right / served if served else None,
            right / positives if positives else None,
            positives,
        )

    @property
    def wrong_rate(self) -> float | None:
        return None if self.precision is None else 1.0 - self.precision


def operating_points(
    cosine: np.ndarray,
    verifier_scores: np.ndarray | dict[float, np.ndarray] | None,
    duplicate: np.ndarray,
    servable: dict[bool, np.ndarray] | None = None,
) -> list[Operating]:
    """Every (threshold, verify threshold) of the grid with its precision and recall.
    `verifier_scores`: one score a pair, or one array per verify threshold of the grid
    (per_threshold_verify). `servable[verified]` marks the pairs the pipeline could serve
    semantically at all at settings that verify (True) or not (False): neither text given
    exact matching only."""
    positives = int(duplicate.sum())
    points = []
    for verify_threshold in VERIFY_GRID:
        if verify_threshold is not None and verifier_scores is None:
            continue
        if verify_threshold is None:
            accepted = np.ones_like(duplicate, dtype=bool)
        elif isinstance(verifier_scores, dict):
            accepted = verifier_scores[verify_threshold] >= verify_threshold
        else:
            accepted = verifier_scores >= verify_threshold
        if servable is not None:
            accepted = accepted & servable[verify_threshold is not None]
        for threshold in COSINE_GRID:
            served = accepted & (cosine >= threshold)
            right = int((served & duplicate).sum())
            points.append(Operating.counted(threshold, verify_threshold, int(served.sum()), right, positives))
    return points


# Under this a target asks for more than a million served pairs or hits: no labelled file
# here holds that many, so such a target is refused as given in error.
SMALLEST_WRONG_RATE = 1e-6


def minimum_served(max_wrong_rate: float) -> int:
    """Served pairs needed before a wrong-hit rate at the target can be told from zero."""
    return max(20, math.ceil(1 / _exact_rate(max_wrong_rate)))


def _exact_rate(max_wrong_rate: float) -> Fraction:
    """The rate as written (0.01 is 1/100), so that counts are compared without rounding:
    1 - 99/100 is 0.010000000000000009 in floating point."""
    return Fraction(repr(max_wrong_rate))


def within_target(served: int, right: int, max_wrong_rate: float) -> bool:
    """Wrong hits at most `max_wrong_rate` of those served, so that 99 right of 100 meets 0.01."""
    return served > 0 and Fraction(served - right, served) <= _exact_rate(max_wrong_rate)


def qualifies(point: Operating, max_wrong_rate: float) -> bool:
    """Enough served for the rate to mean something, and within the target."""
    return point.served >= minimum_served(max_wrong_rate) and within_target(
        point.served, point.right, max_wrong_rate
    )


def right_needed(max_wrong_rate: float) -> int:
    """The fewest right hits any qualifying setting has: a setting serving the minimum
    within the target (right >= served x (1 - rate)). A setting serving more needs more."""
    return math.ceil(minimum_served(max_wrong_rate) * (1 - _exact_rate(max_wrong_rate)))


def could_qualify(point: Operating, max_wrong_rate: float) -> bool:
    """Whether the point has the evidence a qualifying setting needs (served and right
    counts), whatever its precision: without it, no setting can be told apart from zero."""
    return point.served >= minimum_served(max_wrong_rate) and point.right >= right_needed(max_wrong_rate)


def choose(points: list[Operating], max_wrong_rate: float) -> Operating | None:
    """Most right hits within the target, then fewest wrong; ties go to the stricter
    settings. None if none qualifies. Right hits, not recall: a replay's recall divides by
    a count that the setting itself moves (module docstring)."""
    eligible = [p for p in points if qualifies(p, max_wrong_rate)]
    if not eligible:
        return None
    return max(
        eligible,
        key=lambda p: (p.right, p.right - p.served, p.verify_threshold or 0.0, p.threshold),
    )


def curve(points: list[Operating], verify_threshold: float | None) -> list[dict]:
    """The precision/recall curve over the cosine grid at one verify threshold."""
    return [asdict(p) for p in points if p.verify_threshold == verify_threshold]


def replay_points(
    texts: list[str],
    groups: list[str],
    vectors: np.ndarray,
    verify: Verify | None,
    cosine_grid: tuple[float, ...] = REPLAY_COSINE_GRID,
    verify_grid: tuple[float | None, ...] = REPLAY_VERIFY_GRID,
    block_size: int | None = None,
    exact_only: dict[bool, set[str]] | None = None,
    scope_languages: dict[bool, dict[str, str] | None] | None = None,
    tie_key: Callable[[str], object] | None = None,
) -> list[Operating]:
    """Every setting of the grid replayed over a workload in order, counted as `evaluate`
    counts (storage/replay.py, whose block counting it shares): the workload goes in blocks,
    each row seeing the entries of earlier blocks through the same nearest-candidate limit
    as the semantic index, and the rows before it in its block. `vectors` holds one row per
    distinct text (after Unicode normalisation, as keys are made), in order of first
    appearance. The verifier reads each candidate pair once, whatever the number of settings.
    `exact_only[verified]` holds the distinct texts the pipeline gives exact matching only
    at settings that verify (True) or not (False): their language, their length.
    `scope_languages[verified]` maps each distinct text to the language its scope holds,
    where the pipeline keeps answers to one language at that kind of setting (no entry or
    None: the scope holds none); rows of different languages never answer each other.
    Candidates of equal similarity are ordered by `tie_key` of their text (`evaluate`'s:
    storage.replay.replay_key, the key the text is stored under), else by the text."""
    from storage.keys import normalized_text
    from storage.replay import BLOCK_SIZE

    keys = [normalized_text(text) for text in texts]
    distinct = list(dict.fromkeys(keys))
    if len(distinct) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors for {len(distinct)} distinct texts")
    row_of = {key: i for i, key in enumerate(distinct)}
    order_of = {key: (tie_key or str)(key) for key in distinct}
    scored: dict[tuple[tuple[str, str], float], float] = {}
    faithful = per_threshold_verify(verify)
    per_threshold = faithful is not None
    verify = faithful or verify

    def remembered(pairs: list[tuple[str, str]], at_least=None) -> np.ndarray:
        # Without a second reading near a cut, scored without `at_least`: one score serves every threshold.
        bars = list(at_least) if per_threshold and at_least is not None else [0.0] * len(pairs)
        asked = list(zip(pairs, bars, strict=True))
        new = list(dict.fromkeys(a for a in asked if a not in scored))
        if new:
            new_pairs = [pair for pair, _ in new]
            bars_asked = [bar for _, bar in new]
            scores = verify(new_pairs, at_least=bars_asked) if per_threshold else verify(new_pairs)
            scored.update(zip(new, (float(s) for s in scores), strict=True))
        return np.array([scored[a] for a in asked], dtype=np.float32)

    points = []
    for verify_threshold in verify_grid:
        if verify_threshold is not None and verify is None:
            continue
        for threshold in cosine_grid:
            counts = _replay_counts(
                keys,
                groups,
                distinct,
                vectors,
                row_of,
                threshold,
                None if verify_threshold is None else remembered,
                verify_threshold or 0.0,
                block_size or BLOCK_SIZE,
                (exact_only or {}).get(verify_threshold is not None, set()),
                (scope_languages or {}).get(verify_threshold is not None),
                order_of,
            )
            points.append(
                Operating.counted(
                    threshold,
                    verify_threshold,
                    counts["semantic_hits"],
                    counts["right_semantic_hits"],
                    counts["recall_denominator"],
                )
            )
    return points


def per_threshold_verify(verify):
    """Where `verify` is a verifier's that scores a pair near the threshold it is held to
    again, in float32 and alone (inference.pair_verifier.BFLOAT16_LOGIT_NOISE in bfloat16,
    FLOAT32_LOGIT_NOISE in float32; the pipeline passes the threshold), so that a score
    serves one verify threshold only: the same
    verifier keeping its stages' scores for the run (each pair read once a stage, whatever
    the thresholds asked). None where one score serves every threshold."""
    verifier = getattr(verify, "__self__", None)
    if getattr(verifier, "exact", None) is None:
        return None
    return (
        verify
        if getattr(verifier, "memory", None) is not None
        else verifier.remembering(_StageScoresInProcess()).score
    )


class _StageScoresInProcess:
    """Each verifier stage's learned scores of pairs for one calibration (the protocol of
    inference.pair_verifier.LearnedScoreMemory): a pair is read once per stage, whatever
    the number of verify thresholds it is held to."""

    def __init__(self) -> None:
        self._scores: dict[tuple[str, tuple[str, str]], float] = {}

    def recall(self, stage: str, pairs) -> np.ndarray:
        return np.array([self._scores.get((stage, tuple(pair)), np.nan) for pair in pairs], dtype=np.float32)

    def keep(self, stage: str, pairs, scores) -> None:
        self._scores.update(((stage, tuple(pair)), float(s)) for pair, s in zip(pairs, scores, strict=True))


def _replay_counts(
    keys,
    groups,
    distinct,
    vectors,
    row_of,
    threshold,
    verify,
    verify_threshold,
    block_size,
    exact_only,
    languages,
    order_of: dict[str, object],
) -> dict:
    """One replay in blocks, the store held in memory: entries are the rows that inserted,
    searched only where their text was not given exact matching only, and (with
    `languages`) only by rows of their language; ties in similarity go by `order_of` of
    the text."""
    from storage.lookalikes import External
    from storage.replay import count_block, rows_to_resolve, with_copies
    from storage.scope_search import cosines, nearest_columns
    from storage.semantic_index import CANDIDATES_PER_QUERY

    counts = {"exact_hits": 0, "semantic_hits": 0, "right_semantic_hits": 0, "recall_denominator": 0}
    groups_with_entry: set[str] = set()
    entry_keys: set[str] = set()
    entry_rows: list[int] = []  # rows of `vectors`
    entry_groups: list[str] = []
    entry_languages: list[str | None] = []
    for start in range(0, len(keys), block_size):
        block_keys, block_groups = keys[start : start + block_size], groups[start : start + block_size]
        stored = [key in entry_keys for key in block_keys]
        semantic_rows, copy_of = with_copies(
            block_keys, [i for i in rows_to_resolve(block_keys, stored) if block_keys[i] not in exact_only]
        )
        block_vectors = vectors[[row_of[block_keys[i]] for i in semantic_rows]]
        block_languages = [(languages or {}).get(block_keys[i]) for i in semantic_rows]
        externals: list[list[External]] = [[] for _ in semantic_rows]
        if entry_rows and semantic_rows:
            similarities = cosines(block_vectors, vectors[entry_rows], floor=threshold)
            if languages:
                # An entry of another language is as good as absent (below every threshold).
                other = np.array(block_languages, dtype=object)[:, None] != np.array(
                    entry_languages, dtype=object
                )
                similarities[other] = -2.0
            for query, columns in enumerate(nearest_columns(similarities, CANDIDATES_PER_QUERY)):
                # The most similar first, as the look-up path orders its candidates.
                externals[query] = [
                    External(
                        distinct[entry_rows[c]],
                        float(similarities[query, c]),
                        entry_groups[c],
                        key=order_of[distinct[entry_rows[c]]],
                    )
                    for c in sorted(columns.tolist(), key=lambda c: -similarities[query, c])
                ]
        resolved = resolve_within_scopes(
            block_languages,
            block_vectors,
            [block_keys[i] for i in semantic_rows],
            [threshold] * len(semantic_rows),
            verify,
            [verify_threshold] * len(semantic_rows),
            externals=externals,
            nearest=CANDIDATES_PER_QUERY,
            copy_of=copy_of,
            row_keys=[order_of[block_keys[i]] for i in semantic_rows],
        )
        resolutions = dict(zip(semantic_rows, resolved, strict=True))

        served_group = functools.partial(_served_group, block_groups, semantic_rows)
        inserted = count_block(
            block_keys, block_groups, stored, resolutions, served_group, counts, groups_with_entry
        )
        for i in inserted:
            entry_keys.add(block_keys[i])
            if block_keys[i] not in exact_only:
                entry_rows.append(row_of[block_keys[i]])
                entry_groups.append(block_groups[i])
                entry_languages.append((languages or {}).get(block_keys[i]))
    return counts


def _served_group(block_groups: list[str], semantic_rows: list[int], resolution) -> str:
    """The group of the entry (its ref) or of the earlier row of the block that served a row."""
    if resolution.external is not None:
        return resolution.external.ref
    return block_groups[semantic_rows[resolution.leader_row]]
