"""Choosing a namespace's semantic threshold and verifier threshold from labelled pairs.

A pair is "served" at settings (t, v) when its cosine similarity is at least t and,
with verification, its verifier score is at least v. Over the pairs: precision is
the share of served pairs that are true duplicates, recall the share of true
duplicates served. Calibration picks the settings with the most recall whose
wrong-hit rate (1 - precision) stays within the target, on enough served pairs
for the rate to mean something.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

COSINE_GRID = tuple(round(0.5 + 0.02 * i, 2) for i in range(25))  # 0.50 ... 0.98
VERIFY_GRID = (None, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97, 0.99)


@dataclass(frozen=True)
class Operating:
    threshold: float
    verify_threshold: float | None  # None: plain cosine, no verifier
    served: int
    right: int
    precision: float | None
    recall: float | None

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
            count, right = int(served.sum()), int((served & duplicate).sum())
            points.append(
                Operating(
                    threshold,
                    verify_threshold,
                    count,
                    right,
                    right / count if count else None,
                    right / positives if positives else None,
                )
            )
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
