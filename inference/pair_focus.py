"""The training pairs a second verifier stage will actually read at serving time.

A second stage scores only the pairs that reach it: a request and a neighbour whose
embedding cosine clears the namespace's threshold, that no conflict check vetoes, and
that the first stage already passes (pair_verifier.SECOND_STAGE_FLOOR and up). Trained
on every pair, most of its examples are ones it never meets (two unrelated questions,
a near miss the first stage already rejects). `focused_pairs` keeps the examples of the
serving distribution, so the second stage learns the cases it decides.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from inference.embedder import pair_cosines
from storage.keys import normalized_text

# The lowest cosine a namespace's threshold is likely set at: calibration's grid and the
# development replays start at 0.6 to 0.65, the default is 0.72.
DEFAULT_MIN_COSINE = 0.6


def focused_pairs(
    examples: list[dict],
    embed: Callable[[list[str]], np.ndarray],
    first_stage_score: Callable[[list[tuple[str, str]]], np.ndarray],
    min_cosine: float,
    min_score: float,
) -> list[dict]:
    """The examples (rows {"a", "b", "duplicate"}, repeats kept) whose texts lie at
    `min_cosine` or more under `embed` (normalised vectors) and that `first_stage_score`
    (conflict checks included) scores at `min_score` or more. Each distinct pair is
    embedded and scored once."""
    distinct = list(dict.fromkeys(_pair(row) for row in examples))
    texts = list(dict.fromkeys(text for pair in distinct for text in pair))
    # Serving embeds the normalised text, so the focus does too.
    cosines = pair_cosines(embed([normalized_text(text) for text in texts]), texts, distinct)
    close = [pair for pair, cosine in zip(distinct, cosines, strict=True) if cosine >= min_cosine]
    scores = first_stage_score(close) if close else np.zeros(0)
    kept = {pair for pair, score in zip(close, scores, strict=True) if score >= min_score}
    print(
        f"focus: {len(distinct)} distinct pairs, {len(close)} at cosine >= {min_cosine}, "
        f"{len(kept)} scored >= {min_score} by the first stage",
        file=sys.stderr,
    )
    return [row for row in examples if _pair(row) in kept]


def _pair(row: dict) -> tuple[str, str]:
    return tuple(sorted((row["a"], row["b"])))
