"""Which held-out families ask what a training family already asks.

The held-out workloads and the verifier's hand-written training families were written
apart, but both reach for well-known near misses (the capital of Australia or Austria,
a list or a tuple), so some held-out families share their intent with a training
family even where no text is the same. A held-out family counts as overlapping when
any of its requests has a training request at MiniLM cosine >= OVERLAP_COSINE.

Writes holdout_training_overlap.json (per held-out workload, the overlapping families
and their closest pairs), holdout_report_clean.jsonl (the first holdout's report half
without them), adversarial_holdout2_clean.jsonl, adversarial_holdout3_clean.jsonl and
adversarial_holdout4_clean.jsonl (the second, third and fourth holdouts without them),
so the benchmark can report on requests whose intents no hand-written training file
asks (QQP's training side is not compared). Run from
the repository root after changing the training families or a holdout:
`python -m benchmarks.data.training_overlap`.
"""

import json
from pathlib import Path

from benchmarks.common import embed_through_cache, quiet_environment
from inference.pair_data import family_of, read_workload

HERE = Path(__file__).resolve().parent
OVERLAP_COSINE = 0.85
# held-out workload -> (rows to clean, where the clean rows go)
CLEANED = {
    "adversarial_holdout.jsonl": ("holdout_report.jsonl", "holdout_report_clean.jsonl"),
    "adversarial_holdout2.jsonl": ("adversarial_holdout2.jsonl", "adversarial_holdout2_clean.jsonl"),
    "adversarial_holdout3.jsonl": ("adversarial_holdout3.jsonl", "adversarial_holdout3_clean.jsonl"),
    "adversarial_holdout4.jsonl": ("adversarial_holdout4.jsonl", "adversarial_holdout4_clean.jsonl"),
}


def overlapping_families(holdout: list[dict], training: list[str], training_matrix) -> dict[str, list[dict]]:
    """The holdout's families with a request within OVERLAP_COSINE of a training request
    (`training_matrix`: the normalised embeddings of `training`, row for row)."""
    matrix, _ = embed_through_cache([row["text"] for row in holdout])
    similarity = matrix @ training_matrix.T
    closest = similarity.argmax(axis=1)
    found: dict[str, list[dict]] = {}
    for row, index, scores in zip(holdout, closest, similarity, strict=True):
        if scores[index] >= OVERLAP_COSINE:
            found.setdefault(family_of(row["group"]), []).append(
                {"holdout": row["text"], "training": training[index], "cosine": round(float(scores[index]), 3)}
            )
    return dict(sorted(found.items()))


def training_file_names() -> list[str]:
    """The hand-written training files compared (QQP's training side and the generated
    pairs are not), as the overlap record names them."""
    from inference.train_verifier import ALL_FAMILIES, DEFAULT_ADVERSARIAL

    return [str(path.relative_to(HERE.parents[1])) for path in (*ALL_FAMILIES, DEFAULT_ADVERSARIAL)]


def training_texts() -> list[str]:
    from inference.pair_data import read_pairs
    from inference.train_verifier import ALL_FAMILIES, DEFAULT_ADVERSARIAL

    texts = [row["text"] for path in ALL_FAMILIES for row in read_workload(path)]
    texts += [text for pair in read_pairs(DEFAULT_ADVERSARIAL) for text in (pair["a"], pair["b"])]
    return list(dict.fromkeys(texts))


def main() -> None:
    quiet_environment()
    training = training_texts()
    training_matrix, _ = embed_through_cache(training)  # once, for every holdout
    record: dict = {"overlap_cosine": OVERLAP_COSINE, "training_files": training_file_names(), "holdouts": {}}
    outputs: dict[str, str] = {}
    for holdout, (to_clean, clean_file) in CLEANED.items():
        found = overlapping_families(read_workload(HERE / holdout), training, training_matrix)
        record["holdouts"][holdout] = found
        rows = read_workload(HERE / to_clean)
        clean = [row for row in rows if family_of(row["group"]) not in found]
        outputs[clean_file] = "".join(json.dumps(r) + "\n" for r in clean)
        print(f"{holdout}: {len(found)} families overlap training; {to_clean} {len(rows)} -> {len(clean)} requests")
    outputs["holdout_training_overlap.json"] = json.dumps(record, indent=1, ensure_ascii=False) + "\n"
    for name, text in outputs.items():  # written only once every holdout is read
        (HERE / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
