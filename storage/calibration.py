"""Choosing a namespace's semantic threshold and verifier threshold from labelled data.

From pairs: a pair is "served" at settings (t, v) when its cosine similarity is at
least t and, with verification, its verifier score is at least v. Over the pairs:
precision is the share of served pairs that are true duplicates, recall the share of
true duplicates served.

From a workload (rows {"text", "group"}, as `evaluate` reads them): each setting is
replayed through the cache's own look-alike resolution, so a "served" row is a semantic
hit and precision and recall are `evaluate`'s. A replay sees what a pair cannot: a
request competes with every entry before it, and one wrong entry can serve many rows.

Calibration picks the settings with the most recall whose wrong-hit rate (1 -
precision) stays within the target, on enough served pairs or hits for the rate to
mean something.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from storage.lookalikes import Verify, resolve_lookalikes

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
        )

    @property
    def wrong_rate(self) -> float | None:
        return None if self.precision is None else 1.0 - self.precision


def operating_points(
    cosine: np.ndarray, verifier_scores: np.ndarray | None, duplicate: np.ndarray
) -> list[Operating]:
    """Every (threshold, verify threshold) of the grid with its precision and recall."""
    positives = int(duplicate.sum())
    points = []
    for verify_threshold in VERIFY_GRID:
        if verify_threshold is not None and verifier_scores is None:
            continue
        accepted = (
            np.ones_like(duplicate, dtype=bool)
            if verify_threshold is None
            else verifier_scores >= verify_threshold
        )
        for threshold in COSINE_GRID:
            served = accepted & (cosine >= threshold)
            right = int((served & duplicate).sum())
            points.append(Operating.counted(threshold, verify_threshold, int(served.sum()), right, positives))
    return points


def minimum_served(max_wrong_rate: float) -> int:
    """Served pairs needed before a wrong-hit rate at the target can be told from zero."""
    return max(20, math.ceil(1.0 / max_wrong_rate))


def choose(points: list[Operating], max_wrong_rate: float) -> Operating | None:
    """Most recall within the target; ties go to the stricter settings. None if none qualifies."""
    floor = minimum_served(max_wrong_rate)
    eligible = [
        p for p in points if p.served >= floor and p.wrong_rate is not None and p.wrong_rate <= max_wrong_rate
    ]
    if not eligible:
        return None
    return max(
        eligible,
        key=lambda p: (p.recall or 0.0, p.verify_threshold or 0.0, p.threshold),
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
) -> list[Operating]:
    """Every setting of the grid replayed over a workload in order, counted as `evaluate`
    counts: a repeat of an inserted text is an exact hit; a semantic hit is right when the
    entry that served it is of the row's group; recall is over rows whose group already
    had an entry. `vectors` holds one row per distinct text, in order of first appearance.
    The verifier reads each candidate pair once, whatever the number of settings."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) != len(vectors):
        raise ValueError(f"{len(vectors)} vectors for {len(distinct)} distinct texts")
    position = {text: i for i, text in enumerate(distinct)}
    first_group = {}
    for text, group in zip(texts, groups, strict=True):
        first_group.setdefault(text, group)
    distinct_groups = [first_group[text] for text in distinct]
    scored: dict[tuple[str, str], float] = {}

    def remembered(pairs: list[tuple[str, str]]) -> np.ndarray:
        new = list(dict.fromkeys(pair for pair in pairs if pair not in scored))
        if new:
            scored.update(zip(new, (float(s) for s in verify(new)), strict=True))
        return np.array([scored[pair] for pair in pairs], dtype=np.float32)

    points = []
    for verify_threshold in verify_grid:
        if verify_threshold is not None and verify is None:
            continue
        for threshold in cosine_grid:
            resolutions = resolve_lookalikes(
                vectors,
                distinct,
                [threshold] * len(distinct),
                None if verify_threshold is None else remembered,
                [verify_threshold or 0.0] * len(distinct),
            )
            served, right, eligible = _count_replay(texts, groups, position, resolutions, distinct_groups)
            points.append(Operating.counted(threshold, verify_threshold, served, right, eligible))
    return points


def _count_replay(texts, groups, position, resolutions, distinct_groups) -> tuple[int, int, int]:
    """Semantic hits, right ones, and the recall denominator of one replay."""
    seen: set[str] = set()
    groups_with_entry: set[str] = set()
    served = right = eligible = 0
    for text, group in zip(texts, groups, strict=True):
        resolution = resolutions[position[text]]
        repeat = text in seen
        seen.add(text)
        if repeat and resolution.is_leader:
            continue  # an exact hit on the entry the first copy inserted
        eligible += group in groups_with_entry
        if resolution.is_leader:
            groups_with_entry.add(group)
            continue
        served += 1
        right += distinct_groups[resolution.leader_row] == group
    return served, right, eligible
