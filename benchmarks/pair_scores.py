"""What kept pair scores save on a second day: `python -m benchmarks pair_scores --json`.

Day 1 replays a workload through the look-up path (`infercache evaluate` on a store,
the namespace's default settings) with the verifier keeping its learned scores. Day 2
sends the same requests again to copies of day 1's store: what day 1 inserted is an
exact hit now, and what it served semantically meets the verifier again. Day 2 runs
side by side, in alternating order, reading every pair afresh and reading kept scores,
each from the same starting state (a fresh copy of the store and of the kept scores per
round). It prints each day 2's median seconds and look-ups per second, the pairs each
stage read, and whether both gave the same counts (hits, right and wrong ones).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import WORKLOADS_FOLDER, quiet_environment
from storage.config import DTYPES

DEFAULT_WORKLOAD = WORKLOADS_FOLDER / "adversarial_holdout4.jsonl"
COMPARED = ("exact_hits", "semantic_hits", "right_semantic_hits", "wrong_hits", "precision", "recall")


def _day(settings, workload: Path, namespace, store: Path, verifier) -> tuple[float, dict, dict]:
    from orchestration.evaluation import evaluate

    started = time.perf_counter()
    report = evaluate(settings, workload, namespace, store, verify=verifier.score)
    seconds = time.perf_counter() - started
    return (
        seconds,
        report,
        {"first_stage": verifier.pairs_read, "second_stage": verifier.second_stage.pairs_read},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks pair_scores", description=__doc__)
    parser.add_argument("--workload", type=Path, default=DEFAULT_WORKLOAD)
    parser.add_argument("--rounds", type=int, default=3, help="day-2 runs of each kind")
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default=None,
        help="the dtype the verifier computes in (default: models.yaml's verifier.dtype)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    quiet_environment()
    from inference.pair_verifier import VERIFIER_BASE_MODEL, load_verifier
    from storage.config import load_settings
    from storage.pair_scores import VerifiedPairScores, count_kept

    now = datetime.now(UTC).replace(tzinfo=None)
    with tempfile.TemporaryDirectory(prefix="infercache-pair-scores-") as scratch:
        root = Path(scratch)
        settings = load_settings(home=root / "home")
        namespace = settings.namespace("default")
        loaded = load_verifier(
            str(settings.embedding_model(VERIFIER_BASE_MODEL).model_folder()),
            dtype=args.dtype or settings.verifier_dtype,
        )
        kept_day1 = root / "kept-day1.duckdb"
        day1_seconds, day1, day1_read = _day(
            settings,
            args.workload,
            namespace,
            root / "day1",
            loaded.remembering(VerifiedPairScores(kept_day1, now)),
        )
        timings: dict[str, list[float]] = {"reading_every_pair": [], "reading_kept_scores": []}
        reports: dict[str, dict] = {}
        read: dict[str, dict] = {}
        for round_number in range(args.rounds):
            order = list(timings) if round_number % 2 == 0 else list(timings)[::-1]
            for kind in order:
                store = root / f"{kind}-{round_number}"
                shutil.copytree(root / "day1", store)
                memory = None
                if kind == "reading_kept_scores":
                    kept = root / f"kept-{round_number}.duckdb"
                    shutil.copy(kept_day1, kept)
                    memory = VerifiedPairScores(kept, now)
                verifier = loaded.remembering(memory)  # a copy per day: its read counts are its own
                seconds, reports[kind], read[kind] = _day(settings, args.workload, namespace, store, verifier)
                timings[kind].append(seconds)
        requests = day1["requests"]
        medians = {kind: statistics.median(values) for kind, values in timings.items()}
        result = {
            "workload": str(args.workload),
            "requests_per_day": requests,
            "verifier_dtype": loaded.dtype,
            "day1": {
                "seconds": day1_seconds,
                "pairs_read": day1_read,
                "scores_kept": {
                    "first_stage": count_kept(kept_day1, loaded.identity),
                    "second_stage": count_kept(kept_day1, loaded.second_stage.identity),
                },
                **{name: day1[name] for name in COMPARED},
            },
            "day2": {
                kind: {
                    "median_seconds": medians[kind],
                    "seconds": timings[kind],
                    "lookups_per_s": requests / medians[kind],
                    "pairs_read": read[kind],
                    **{name: reports[kind][name] for name in COMPARED},
                }
                for kind in timings
            },
            "day2_speedup": medians["reading_every_pair"] / medians["reading_kept_scores"],
            "day2_same_counts": all(
                reports["reading_every_pair"][name] == reports["reading_kept_scores"][name]
                for name in COMPARED
            ),
        }
    print(json.dumps(result, indent=2) if args.json else result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
