"""Split the adversarial workload by family into a tuning half and a report half.

Families (fam001, fam002, ...) are independent sets of near-miss intents, so the
odd-numbered families can be used to choose the default thresholds (as labelled
pairs for `infercache calibrate`) and the even-numbered ones to report on, unseen.
Writes adversarial_tuning_pairs.jsonl and adversarial_workload_report.jsonl here.
"""

import itertools
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def family(group: str) -> int:
    return int(group.split("-")[0].removeprefix("fam"))


def main() -> None:
    rows = [json.loads(line) for line in (HERE / "adversarial_workload.jsonl").read_text().splitlines()]
    tuning = [r for r in rows if family(r["group"]) % 2 == 1]
    report = [r for r in rows if family(r["group"]) % 2 == 0]
    pairs = []
    for (_, members) in itertools.groupby(sorted(tuning, key=lambda r: r["group"]), key=lambda r: family(r["group"])):
        members = list(members)
        for a, b in itertools.combinations(members, 2):
            pairs.append({"a": a["text"], "b": b["text"], "duplicate": a["group"] == b["group"]})
    (HERE / "adversarial_tuning_pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    (HERE / "adversarial_workload_report.jsonl").write_text("".join(json.dumps(r) + "\n" for r in report))
    print(f"{len(pairs)} tuning pairs ({sum(p['duplicate'] for p in pairs)} duplicates), {len(report)} report rows")


if __name__ == "__main__":
    main()
