"""Zero-shot classification with a sentence-embedding model.

Each candidate label becomes a hypothesis sentence; the answer is a softmax over
the cosine similarities of the input to each hypothesis.
"""

from __future__ import annotations

import numpy as np

from inference.base import CallResult, ModelCall
from inference.embedder import SentenceEmbedder

# Cosine similarities of MiniLM sit in a narrow band; this sharpens the softmax.
SOFTMAX_TEMPERATURE = 0.05


class ZeroShotClassifier:
    def __init__(self, embedder: SentenceEmbedder, hypothesis_template: str) -> None:
        self.embedder = embedder
        self.hypothesis_template = hypothesis_template
        self._label_vectors: dict[str, np.ndarray] = {}

    def token_count(self, call: ModelCall) -> int:
        # Word pieces run about 1.3 per word; an estimate is enough to size a batch.
        return int(len(call.input.split()) * 1.3) + 2

    def run_batch(self, calls: list[ModelCall]) -> list[CallResult]:
        inputs = self.embedder([f"{c.prefix}\n{c.input}" if c.prefix else c.input for c in calls])
        results = []
        for call, vector in zip(calls, inputs, strict=True):
            labels = [str(label) for label in call.params.get("labels") or []]
            if not labels:
                results.append(
                    CallResult(
                        None,
                        "no candidate labels: set `labels` for this namespace in "
                        "namespaces.yaml or pass params.labels",
                    )
                )
                continue
            similarities = self._hypotheses(labels) @ vector
            weights = np.exp((similarities - similarities.max()) / SOFTMAX_TEMPERATURE)
            scores = weights / weights.sum()
            best = int(np.argmax(scores))
            results.append(
                CallResult(
                    {
                        "label": labels[best],
                        "score": round(float(scores[best]), 6),
                        "scores": {
                            label: round(float(s), 6) for label, s in zip(labels, scores, strict=True)
                        },
                    }
                )
            )
        return results

    def _hypotheses(self, labels: list[str]) -> np.ndarray:
        missing = [label for label in labels if label not in self._label_vectors]
        if missing:
            vectors = self.embedder([self.hypothesis_template.format(label) for label in missing])
            self._label_vectors.update(zip(missing, vectors, strict=True))
        return np.stack([self._label_vectors[label] for label in labels])
