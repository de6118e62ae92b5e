"""Which requests the language rule switches to exact matching only:
`python -m benchmarks languages [--qqp 20000] --json`.

For an English-only model, the shipped rule (storage/languages.py: scripts, then the
detector's reading unless enough of the words are English) beside scripts and the detector
alone at 0.7 (the rule before it), on
English texts (the workloads and written families of benchmarks/data and
inference/verifier_data, and QQP questions) and on questions written in nine other
Latin-script languages (benchmarks/data/foreign_questions.jsonl: a tuning part the
thresholds were chosen on, and a holdout part written after). An English text switched
off loses semantic reuse; a foreign text left on is looked up by a model that cannot read it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from benchmarks.common import REPO, WORKLOADS_FOLDER, qqp_questions

FOREIGN = WORKLOADS_FOLDER / "foreign_questions.jsonl"
ENGLISH_SOURCES = (WORKLOADS_FOLDER, REPO / "inference" / "verifier_data")
EXAMPLES = 10


def english_texts(qqp: int) -> list[str]:
    texts: set[str] = set()
    for folder in ENGLISH_SOURCES:
        for path in sorted(folder.rglob("*.jsonl")):
            if path == FOREIGN:
                continue
            for line in path.read_text().splitlines():
                row = json.loads(line) if line.strip() else {}
                texts.update(row[k] for k in ("text", "a", "b") if isinstance(row.get(k), str))
    return sorted(texts) + [q for q in qqp_questions()[:qqp] if q not in texts]


def _switched_off(texts, detections, rule) -> list[bool]:
    return [rule(text, detected) is not None for text, detected in zip(texts, detections, strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks languages", description=__doc__)
    parser.add_argument("--qqp", type=int, default=20000, help="QQP questions added to the English texts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from storage.languages import coverage_gap, detect_languages, load_detector, uncovered_scripts

    load_detector()
    english = english_texts(args.qqp)
    foreign = [json.loads(line) for line in FOREIGN.read_text().splitlines() if line.strip()]
    foreign_texts = [row["text"] for row in foreign]
    # The same questions in Title Case: every word capitalised, none of them a name.
    title_texts = [text.title() for text in foreign_texts]
    started = time.perf_counter()
    english_detected = detect_languages(english)
    foreign_detected = detect_languages(foreign_texts)
    detect_seconds = time.perf_counter() - started
    title_detected = detect_languages(title_texts)
    rules = {
        "shipped": lambda text, detected: coverage_gap(text, "m", ("en",), detected),
        "detector_alone_0.7": lambda text, detected: (
            "off"
            if uncovered_scripts(text, ("en",)) or (detected and detected[0] != "en" and detected[1] >= 0.7)
            else None
        ),
    }
    report: dict = {
        "english_texts": len(english),
        "english_detected": sum(d is not None for d in english_detected),
        "foreign_texts": {part: sum(r["part"] == part for r in foreign) for part in ("tuning", "holdout")},
        "detect_seconds": round(detect_seconds, 2),
        "rules": {},
    }
    for name, rule in rules.items():
        english_off = _switched_off(english, english_detected, rule)
        foreign_off = _switched_off(foreign_texts, foreign_detected, rule)
        report["rules"][name] = {
            "english_switched_off": sum(english_off),
            "english_switched_off_examples": [t for t, off in zip(english, english_off, strict=True) if off][
                :EXAMPLES
            ],
            "foreign_caught": {
                part: sum(off for row, off in zip(foreign, foreign_off, strict=True) if row["part"] == part)
                for part in ("tuning", "holdout")
            },
            "foreign_caught_in_title_case": sum(_switched_off(title_texts, title_detected, rule)),
            "foreign_missed": [
                f"{row['language']}: {row['text']}"
                for row, off in zip(foreign, foreign_off, strict=True)
                if not off
            ],
        }
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
