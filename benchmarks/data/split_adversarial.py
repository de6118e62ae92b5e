"""Split the held-out adversarial workload by family into a tuning half and a report half.

adversarial_holdout.jsonl was written by hand apart from the verifier's rules and
is never trained on (the first workload, adversarial_workload.jsonl, is training
data for the verifier since it shaped the rules). Its families (h001, h002, ...)
are independent sets of near-miss intents: the odd-numbered ones, as labelled
pairs, choose the default thresholds (`infercache calibrate`); the even-numbered
ones are replayed only to report. Run from the repository root:
`python -m benchmarks.data.split_adversarial`.
"""

import json
from pathlib import Path

from inference.pair_data import family_of, family_pairs, read_workload

HERE = Path(__file__).resolve().parent


def family_number(group: str) -> int:
    return int(family_of(group).lstrip("h"))


def main() -> None:
    rows = read_workload(HERE / "adversarial_holdout.jsonl")
    tuning = [r for r in rows if family_number(r["group"]) % 2 == 1]
    report = [r for r in rows if family_number(r["group"]) % 2 == 0]
    pairs = family_pairs(tuning)
    (HERE / "holdout_tuning_pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    (HERE / "holdout_report.jsonl").write_text("".join(json.dumps(r) + "\n" for r in report))
    duplicates = sum(p["duplicate"] for p in pairs)
    print(f"{len(pairs)} tuning pairs ({duplicates} duplicates), {len(report)} report rows")


if __name__ == "__main__":
    main()
