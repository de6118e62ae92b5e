"""Which held-out families ask what a training family already asks.

The held-out workload and the verifier's hand-written training families were written
apart, but both reach for well-known near misses (the capital of Australia or Austria,
a list or a tuple), so some held-out families share their intent with a training
family even where no text is the same. A held-out family counts as overlapping when
any of its requests has a training request at MiniLM cosine >= OVERLAP_COSINE.

Writes holdout_training_overlap.json (the families and their closest pairs) and
holdout_report_clean.jsonl (the report half without the overlapping families), so the
benchmark can report on requests whose intents the verifier never saw. Run from the
repository root after changing the training families:
`python -m benchmarks.data.training_overlap`.
"""

import json
from pathlib import Path

from benchmarks.common import embed_through_cache, quiet_environment
from inference.pair_data import family_of, read_workload

HERE = Path(__file__).resolve().parent
OVERLAP_COSINE = 0.85


def overlapping_families(holdout: list[dict], training_texts: list[str]) -> dict[str, list[dict]]:
    texts = [row["text"] for row in holdout]
    matrix, _ = embed_through_cache(texts + training_texts)
    similarity = matrix[: len(texts)] @ matrix[len(texts) :].T
    closest = similarity.argmax(axis=1)
    found: dict[str, list[dict]] = {}
    for row, index, scores in zip(holdout, closest, similarity, strict=True):
        if scores[index] >= OVERLAP_COSINE:
            found.setdefault(family_of(row["group"]), []).append(
                {"holdout": row["text"], "training": training_texts[index], "cosine": round(float(scores[index]), 3)}
            )
    return dict(sorted(found.items()))


def main() -> None:
    quiet_environment()
    from inference.train_verifier import DEFAULT_FAMILIES

    holdout = read_workload(HERE / "adversarial_holdout.jsonl")
    training = list(dict.fromkeys(row["text"] for path in DEFAULT_FAMILIES for row in read_workload(path)))
    found = overlapping_families(holdout, training)
    (HERE / "holdout_training_overlap.json").write_text(
        json.dumps({"overlap_cosine": OVERLAP_COSINE, "families": found}, indent=1, ensure_ascii=False) + "\n"
    )
    report = read_workload(HERE / "holdout_report.jsonl")
    clean = [row for row in report if family_of(row["group"]) not in found]
    (HERE / "holdout_report_clean.jsonl").write_text("".join(json.dumps(r) + "\n" for r in clean))
    print(f"{len(found)} held-out families overlap training; report half {len(report)} -> {len(clean)} requests")


if __name__ == "__main__":
    main()
