"""Which requests the language rule switches to exact matching only:
`python -m benchmarks languages [--qqp 20000] --json`.

For an English-only model, the shipped rule (storage/languages.py: scripts, then the
detector's reading unless enough of the words are English) beside scripts and the detector
alone at 0.7 (the rule before it), on
English texts (the workloads and written families of benchmarks/data and
inference/verifier_data, and QQP questions) and on questions written in nine other
Latin-script languages (benchmarks/data/foreign_questions.jsonl: a tuning part the
thresholds were chosen on, and a holdout part written after) and on short requests of two
or three words in those languages (benchmarks/data/foreign_short_requests.jsonl: the
tuning part decided that texts of two words or more are read, the holdout part was set
aside before), and on questions in nine Latin-script languages the detector's first reading
does not list (benchmarks/data/foreign_unlisted_questions.jsonl: Danish, Finnish, Swahili,
Czech, Hungarian, Romanian, Estonian, Croatian, Norwegian; the wide reading's threshold was
chosen on them). The rule before that, which read only texts of four words or more, stands
beside it. An English text switched off loses semantic reuse; a foreign text left on is
looked up by a model that cannot read it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from benchmarks.common import REPO, WORKLOADS_FOLDER, qqp_questions

FOREIGN = WORKLOADS_FOLDER / "foreign_questions.jsonl"
FOREIGN_SHORT = WORKLOADS_FOLDER / "foreign_short_requests.jsonl"
FOREIGN_UNLISTED = WORKLOADS_FOLDER / "foreign_unlisted_questions.jsonl"
ENGLISH_SOURCES = (WORKLOADS_FOLDER, REPO / "inference" / "verifier_data")
EXAMPLES = 10


def english_texts(qqp: int) -> list[str]:
    texts: set[str] = set()
    for folder in ENGLISH_SOURCES:
        for path in sorted(folder.rglob("*.jsonl")):
            if path in (FOREIGN, FOREIGN_SHORT, FOREIGN_UNLISTED):
                continue
            for line in path.read_text().splitlines():
                row = json.loads(line) if line.strip() else {}
                texts.update(row[k] for k in ("text", "a", "b") if isinstance(row.get(k), str))
    # --qqp 0 needs no QQP file (../shared/data may be absent, e.g. in a clone elsewhere).
    questions = qqp_questions()[:qqp] if qqp else []
    return sorted(texts) + [q for q in questions if q not in texts]


def _switched_off(texts, detections, rule) -> list[bool]:
    return [rule(text, detected) is not None for text, detected in zip(texts, detections, strict=True)]


def _read_from_four_words(rule):
    """A rule as it stood when texts under four words were not given to the detector."""
    return lambda text, detected: rule(text, detected if len(text.split()) >= 4 else None)


def _labelled(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _per_part(rows: list[dict]) -> dict:
    return _caught(rows, [True] * len(rows))


def _caught(rows: list[dict], off: list[bool]) -> dict:
    return {
        part: sum(o for row, o in zip(rows, off, strict=True) if row["part"] == part)
        for part in ("tuning", "holdout")
    }


def _missed(rows: list[dict], off: list[bool]) -> list[str]:
    return [f"{row['language']}: {row['text']}" for row, o in zip(rows, off, strict=True) if not o]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks languages", description=__doc__)
    parser.add_argument("--qqp", type=int, default=20000, help="QQP questions added to the English texts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from storage.languages import coverage_gap, detect_languages, load_detector, uncovered_scripts

    load_detector()
    english = english_texts(args.qqp)
    short = [len(text.split()) < 4 for text in english]
    foreign, foreign_short = _labelled(FOREIGN), _labelled(FOREIGN_SHORT)
    foreign_texts = [row["text"] for row in foreign]
    # The same questions in Title Case: every word capitalised, none of them a name.
    title_texts = [text.title() for text in foreign_texts]
    started = time.perf_counter()
    english_detected = detect_languages(english)
    foreign_detected = detect_languages(foreign_texts)
    detect_seconds = time.perf_counter() - started
    title_detected = detect_languages(title_texts)
    short_detected = detect_languages([row["text"] for row in foreign_short])
    unlisted = _labelled(FOREIGN_UNLISTED)
    unlisted_detected = detect_languages([row["text"] for row in unlisted])

    def shipped(text, detected):
        return coverage_gap(text, "m", ("en",), detected)

    def detector_alone(text, detected):
        foreign_reading = detected and detected[0] != "en" and detected[1] >= 0.7
        return "off" if uncovered_scripts(text, ("en",)) or foreign_reading else None

    rules = {
        "shipped": shipped,
        "shipped_from_four_words": _read_from_four_words(shipped),
        "detector_alone_0.7_from_four_words": _read_from_four_words(detector_alone),
    }
    report: dict = {
        "english_texts": len(english),
        "english_texts_under_four_words": sum(short),
        "english_detected": sum(d is not None for d in english_detected),
        "foreign_texts": _per_part(foreign),
        "foreign_short_requests": _per_part(foreign_short),
        "foreign_unlisted_questions": len(unlisted),
        "detect_seconds": round(detect_seconds, 2),
        "rules": {},
    }
    for name, rule in rules.items():
        english_off = _switched_off(english, english_detected, rule)
        foreign_off = _switched_off(foreign_texts, foreign_detected, rule)
        short_off = _switched_off([row["text"] for row in foreign_short], short_detected, rule)
        unlisted_off = _switched_off([row["text"] for row in unlisted], unlisted_detected, rule)
        report["rules"][name] = {
            "english_switched_off": sum(english_off),
            "english_under_four_words_switched_off": sum(
                o for o, s in zip(english_off, short, strict=True) if s
            ),
            "english_switched_off_examples": [t for t, off in zip(english, english_off, strict=True) if off][
                :EXAMPLES
            ],
            "foreign_caught": _caught(foreign, foreign_off),
            "foreign_caught_in_title_case": sum(_switched_off(title_texts, title_detected, rule)),
            "foreign_missed": _missed(foreign, foreign_off),
            "foreign_short_caught": _caught(foreign_short, short_off),
            "foreign_short_missed": _missed(foreign_short, short_off),
            "foreign_unlisted_caught": sum(unlisted_off),
            "foreign_unlisted_missed": _missed(unlisted, unlisted_off),
        }
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
