"""Compare pair-verifier candidates on the development workloads: `python -m benchmarks
candidates --candidate NAME=FOLDER[,FOLDER...] ... [--second-stage-candidate NAME=FOLDER ...]
[--workloads NAME ...] [--grid] [--cosine-grid T ...] [--verify-grid V ...] --json`.

Chooses among trained verifiers without replaying the holdouts that report quality (the
third, fourth and statement holdouts). Each candidate (one verifier folder, or several
whose logits are averaged, before the shipped second stage; or, with
--second-stage-candidate, the shipped first stage before another second stage; the
shipped verifier is always one, as "shipped") replays
each development workload over a grid of settings the way `calibrate --workload` does
(storage.calibration.replay_points: the look-up path's own counting, each candidate pair
scored once), and the counts are pooled over the workloads. It reports, per candidate,
the pooled figures at the defaults and at the strict setting, the most recall reached at
pooled precision 0.99, 0.98 and 0.97 (and where), and each workload at the defaults.

Development workloads: the first holdout (replayed whole, both halves in one replay), the
second, and the fifth, sixth and seventh (written for this choice), by default; the
family files 29 to 34 (rows shuffled with a fixed seed) on request, for candidates that
did not train on them: the shipped models did (their records say so). Texts are
embedded once, in float32, through the benchmarks' own embedding cache (where
`evaluate` embeds in the namespace's dtype: counts can differ by a hit where a cosine
lies on a threshold).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from benchmarks.common import WORKLOADS_FOLDER, embed_through_cache, quiet_environment
from inference.pair_data import read_workload
from inference.pair_verifier import WEIGHTS_FILE
from inference.train_verifier import DEVELOPMENT_FAMILIES

# name -> (file, whether its rows need shuffling)
WORKLOADS = {
    "first_holdout": (WORKLOADS_FOLDER / "adversarial_holdout.jsonl", False),
    "second_holdout": (WORKLOADS_FOLDER / "adversarial_holdout2.jsonl", False),
    "fifth_holdout": (WORKLOADS_FOLDER / "adversarial_holdout5.jsonl", False),
    "sixth_holdout": (WORKLOADS_FOLDER / "adversarial_holdout6.jsonl", False),
    "seventh_holdout": (WORKLOADS_FOLDER / "adversarial_holdout7.jsonl", False),
} | {f"family_file_{path.stem.removeprefix('part')}": (path, True) for path in DEVELOPMENT_FAMILIES}
DEFAULT_WORKLOADS = ["first_holdout", "second_holdout", "fifth_holdout", "sixth_holdout", "seventh_holdout"]
COSINE_GRID = (0.65, 0.7, 0.72, 0.75, 0.8, 0.85)
VERIFY_GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97)
STRICT = (0.8, 0.9)
PRECISIONS = (0.99, 0.98, 0.97)
SHUFFLE_SEED = 0  # a family file lists its groups together; a replay needs them mixed


def _candidate(text: str) -> tuple[str, tuple[str, ...]]:
    name, _, folders = text.partition("=")
    if not name or not folders:
        raise argparse.ArgumentTypeError(f"expected NAME=FOLDER[,FOLDER...], not {text!r}")
    listed = tuple(folders.split(","))
    missing = [folder for folder in listed if not (Path(folder) / WEIGHTS_FILE).exists()]
    if missing:
        raise argparse.ArgumentTypeError(f"no verifier weights in {', '.join(missing)}")
    return name, listed


def _second_stage_candidate(text: str) -> tuple[str, str]:
    name, folders = _candidate(text)
    if len(folders) != 1:
        raise argparse.ArgumentTypeError(f"a second stage is one folder, not {len(folders)}: {text!r}")
    return name, folders[0]


def read_rows(path: Path, shuffle: bool) -> tuple[list[str], list[str]]:
    rows = read_workload(path)
    if shuffle:
        random.Random(SHUFFLE_SEED).shuffle(rows)
    return [row["text"] for row in rows], [row["group"] for row in rows]


def pooled(points_by_workload: dict[str, list]) -> dict[tuple, list[int]]:
    """(cosine, verify threshold) -> [served, right, positives] summed over the workloads."""
    totals: dict[tuple, list[int]] = {}
    for points in points_by_workload.values():
        for point in points:
            total = totals.setdefault((point.threshold, point.verify_threshold), [0, 0, 0])
            total[0] += point.served
            total[1] += point.right
            total[2] += point.positives
    return totals


def pooled_grid(points_by_workload: dict[str, list]) -> list[dict]:
    """Every setting with its pooled hits and wrong hits, in order of the settings."""
    return [
        {"threshold": threshold, "verify_threshold": verify, "served": served, "wrong": served - right}
        for (threshold, verify), (served, right, _) in sorted(pooled(points_by_workload).items())
    ]


def _figures(served: int, right: int, positives: int) -> dict:
    return {
        "served": served,
        "wrong": served - right,
        "precision": right / served if served else None,
        "recall": right / positives if positives else None,
    }


def summary(points_by_workload: dict[str, list], defaults: tuple[float, float]) -> dict:
    totals = pooled(points_by_workload)
    frontier = {}
    for target in PRECISIONS:
        reaching = [
            (right / positives, setting)
            for setting, (served, right, positives) in totals.items()
            if served and positives and right / served >= target
        ]
        recall, setting = max(reaching, default=(None, None))
        frontier[str(target)] = {"recall": recall, "setting": setting}
    return {
        "defaults": _figures(*totals[defaults]),
        "strict": _figures(*totals[STRICT]),
        "best_recall_at_precision": frontier,
        "each_workload_at_defaults": {
            name: next(
                _figures(p.served, p.right, p.positives)
                for p in points
                if (p.threshold, p.verify_threshold) == defaults
            )
            for name, points in points_by_workload.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks candidates", description=__doc__)
    parser.add_argument("--candidate", type=_candidate, action="append", default=[], metavar="NAME=FOLDERS")
    parser.add_argument(
        "--second-stage-candidate",
        type=_second_stage_candidate,
        action="append",
        default=[],
        metavar="NAME=FOLDER",
        help="the shipped first stage followed by this second stage (a delta over all-mpnet-base-v2) "
        "instead of the shipped one",
    )
    parser.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), default=DEFAULT_WORKLOADS)
    parser.add_argument("--cosine-grid", type=float, nargs="+", default=COSINE_GRID, metavar="T")
    parser.add_argument("--verify-grid", type=float, nargs="+", default=VERIFY_GRID, metavar="V")
    parser.add_argument(
        "--grid", action="store_true", help="also report every pooled setting of the grid (hits, wrong)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    names = ["shipped"] + [name for name, _ in args.candidate + args.second_stage_candidate]
    if len(set(names)) != len(names):
        parser.error(f"each candidate needs its own name (and not 'shipped'): {', '.join(names[1:])}")
    quiet_environment()
    from inference.pair_verifier import SECOND_STAGE_MODEL, SHIPPED_MODELS, VERIFIER_BASE_MODEL, load_verifier
    from storage.calibration import replay_points
    from storage.config import load_settings
    from storage.keys import normalized_text
    from storage.semantic_coverage import exact_only_texts

    settings = load_settings()
    default = settings.namespace("default")
    semantic = default.semantic
    defaults = (semantic.threshold, semantic.verify_threshold)
    # The defaults and the strict setting are replayed whatever the grid holds (a calibrated
    # namespace may sit between).
    cosine_grid = tuple(sorted({*args.cosine_grid, defaults[0], STRICT[0]}))
    verify_grid = tuple(sorted({*args.verify_grid, defaults[1], STRICT[1]}))
    base = str(settings.embedding_model(VERIFIER_BASE_MODEL).model_folder())
    workloads = {}
    for name in args.workloads:
        texts, groups = read_rows(*WORKLOADS[name])
        distinct = list(dict.fromkeys(normalized_text(text) for text in texts))
        vectors, _ = embed_through_cache(distinct, semantic.embedding_model)
        exact_only = exact_only_texts(texts, settings, default)
        workloads[name] = (texts, groups, vectors, exact_only)
    shipped = tuple(str(folder) for folder in SHIPPED_MODELS)
    # (name, first-stage folders, second-stage folder)
    candidates = [
        ("shipped", shipped, str(SECOND_STAGE_MODEL)),
        *((name, folders, str(SECOND_STAGE_MODEL)) for name, folders in args.candidate),
        *((name, shipped, second) for name, second in args.second_stage_candidate),
    ]
    report = {"defaults": defaults, "strict": STRICT, "workloads": args.workloads, "candidates": {}}
    for name, folders, second_stage in candidates:
        verify = load_verifier(base, folders, dtype=settings.verifier_dtype, second_stage=second_stage).score
        points = {
            workload: replay_points(
                texts, groups, vectors, verify, cosine_grid, verify_grid, exact_only=exact_only
            )
            for workload, (texts, groups, vectors, exact_only) in workloads.items()
        }
        report["candidates"][name] = {"folders": list(folders), "second_stage": second_stage} | summary(
            points, defaults
        )
        if args.grid:
            report["candidates"][name]["pooled_grid"] = pooled_grid(points)
    print(json.dumps(report, indent=2) if args.json else report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
