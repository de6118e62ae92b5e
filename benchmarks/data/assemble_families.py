"""Turn families written by hand as JSON into a workload file: `python -m
benchmarks.data.assemble_families RAW.json PREFIX OUT.jsonl --seed N [--written TEXT]`.

RAW.json is a list of families {"topic", "groups": [{"intent", "texts": [...]}]}: the
texts of a group mean the same, the groups of a family are near misses of each other.
OUT.jsonl gets one {"text", "group"} row per text, groups named PREFIX-FFF-g (family
number, group letter, so inference.pair_data.family_of finds the family), shuffled with
the seed; OUT.meta.json beside it records the counts, each group's intent and topic, and
`--written` (who wrote it, when, from what brief). A text given twice in one file (case
and spacing aside) is an error: it could sit in two groups and mislabel its pairs.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
from pathlib import Path


def assemble(families: list[dict], prefix: str) -> tuple[list[dict], list[dict]]:
    rows, meta, seen = [], [], {}
    for number, family in enumerate(families, start=1):
        if "groups" not in family or any("texts" not in group for group in family["groups"]):
            raise ValueError(f"family {number} ({family.get('topic')}) needs groups, each with texts")
        groups = family["groups"]
        if not 2 <= len(groups) <= len(string.ascii_lowercase):
            raise ValueError(
                f"family {number} ({family.get('topic')}) has {len(groups)} groups: give 2 to 26"
            )
        described = []
        for letter, group in zip(string.ascii_lowercase, groups, strict=False):
            name = f"{prefix}-{number:03d}-{letter}"
            for text in group["texts"]:
                normal = " ".join(text.lower().split())
                if normal in seen:
                    raise ValueError(f"{text!r} is in {seen[normal]} and {name}: keep one")
                seen[normal] = name
                rows.append({"text": text, "group": name})
            described.append({"group": name, "intent": group.get("intent", ""), "texts": len(group["texts"])})
        meta.append(
            {"family": f"{prefix}-{number:03d}", "topic": family.get("topic", ""), "groups": described}
        )
    return rows, meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("raw", type=Path)
    parser.add_argument("prefix")
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--written", default="", help="who wrote the families, when, from what brief")
    args = parser.parse_args(argv)
    try:
        rows, meta = assemble(json.loads(args.raw.read_text(encoding="utf-8")), args.prefix)
    except ValueError as error:
        print(f"cannot assemble {args.raw}: {error}", file=sys.stderr)
        return 1
    random.Random(args.seed).shuffle(rows)
    args.out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    record = {
        "families": len(meta),
        "groups": sum(len(family["groups"]) for family in meta),
        "rows": len(rows),
        "seed": args.seed,
        "written": args.written,
        "by_family": meta,
    }
    args.out.with_suffix(".meta.json").write_text(
        json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8"
    )
    print(f"{len(rows)} rows in {record['groups']} groups of {len(meta)} families -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
