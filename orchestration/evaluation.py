"""`infercache evaluate` and `infercache calibrate`: measuring and tuning the semantic cache."""

from __future__ import annotations

import dataclasses
import functools
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from inference.embedder import load_embedder
from inference.pair_conflicts import assess, reason_kind
from inference.pair_data import LabelledFileError, read_pairs, read_workload
from inference.pair_verifier import UNREAD_PAIR, VERIFIER_BASE_MODEL, load_verifier
from storage.calibration import VERIFY_GRID, Operating, per_threshold_verify
from storage.config import NO_SETTING_MET, ConfigError, NamespaceSettings, Settings
from storage.input_length import cut_short
from storage.keys import normalized_text
from storage.languages import load_detector
from storage.lookalikes import Verify, unread_pairs
from storage.replay import ReplayStores, WrongHit, replay_key, replay_workload
from storage.semantic_coverage import (
    coverage_signature,
    language_scoped,
    replay_decisions,
    semantic_decisions,
)

# A replay goes through the workload block by block once for each of the grid's settings,
# comparing each block with every entry before it: its time grows with the square of the
# distinct texts.
MAX_REPLAYED_TEXTS = 10_000
# Pairs below every grid threshold are never served: the verifier need not read them.
COSINE_FLOOR = 0.5


def effective_namespace(
    settings: Settings,
    namespace: str,
    tenant: str | None,
    threshold: float | None = None,
    verify: bool | None = None,
    verify_threshold: float | None = None,
    embedding_model: str | None = None,
) -> NamespaceSettings:
    """The namespace's settings with the command line's overrides applied."""
    if threshold is not None and not 0.0 < threshold <= 1.0:
        raise ConfigError(f"--threshold {threshold} is not a cosine in (0, 1]")
    if verify_threshold is not None and not 0.0 <= verify_threshold <= 1.0:
        raise ConfigError(f"--verify-threshold {verify_threshold} is not a probability in [0, 1]")
    if verify is False and verify_threshold is not None:
        raise ConfigError("--verify-threshold does nothing with --no-verify: give one or the other")
    base = settings.namespace(namespace, tenant)
    semantic = base.semantic
    changes = {
        "threshold": threshold,
        "verify": verify,
        "verify_threshold": verify_threshold,
        "embedding_model": embedding_model,
    }
    semantic = dataclasses.replace(semantic, **{k: v for k, v in changes.items() if v is not None})
    settings.embedding_model(semantic.embedding_model)  # a clear error for an unknown model
    return dataclasses.replace(base, semantic=semantic)


def verifier_for(settings: Settings):
    """The shipped verifier's scoring function."""
    base = settings.embedding_model(VERIFIER_BASE_MODEL).model_folder()
    return load_verifier(str(base), dtype=settings.verifier_dtype).score


def evaluate(
    settings: Settings,
    workload: Path,
    namespace: NamespaceSettings,
    store: Path | None,
    tenant: str = "evaluation",
    verify: Verify | None = None,
    show_wrong: int = 0,
) -> dict:
    """`verify` replaces the shipped verifier (for comparisons); it applies only where the
    namespace verifies. `show_wrong` > 0 adds up to that many wrong hits to the report
    ("wrong_hit_examples": what was asked, what answered it, their cosine and, where the
    namespace verifies, the verifier's score), in the order the replay served them."""
    if store is not None and store.exists() and not store.is_dir():
        raise ConfigError(f"--store {store} is a file: give a folder (one that does not exist yet is made)")
    rows = read_workload(workload)
    if not rows:
        raise LabelledFileError(
            f'{workload} holds no rows: give one JSON object {{"text", "group"}} per line'
        )
    spec = settings.embedding_model(namespace.semantic.embedding_model)
    embedder = load_embedder(spec.engine, spec.model_folder, spec.dtype)
    if not (namespace.semantic.enabled and namespace.semantic.verify):
        verify = None
    elif verify is None:
        verify = verifier_for(settings)
    if namespace.semantic.enabled:
        # Loaded before the replay, as the models are: their time is not the look-ups'.
        load_detector()
        cut_short(spec, [""])  # the embedding model's tokenizer, which counts lengths
    decided = _decided_once(namespace, settings)
    scoped = language_scoped(namespace, settings)
    vetoes: Counter = Counter()
    cautions: Counter = Counter()
    with tempfile.TemporaryDirectory(prefix="infercache-evaluate-") as scratch:
        folder = store or Path(scratch)
        stores = ReplayStores(folder / "cache.duckdb", folder / "lance")
        counted = _counting_checks(verify, vetoes, cautions) if verify is not None else None
        wrong_hits: list[WrongHit] | None = [] if show_wrong > 0 else None
        report = replay_workload(
            rows,
            namespace,
            stores,
            embedder,
            embedder.dimension,
            counted,
            tenant,
            wrong_hits=wrong_hits,
            skip_reasons=lambda texts: [reason for reason, _ in decided(texts)],
            model_fingerprint=spec.fingerprint(),
            scope_languages=(lambda texts: [language for _, language in decided(texts)]) if scoped else None,
            # What decides which entries get a vector and its scope (thresholds do not).
            replayed_under={
                "semantic_enabled": namespace.semantic.enabled,
                "coverage": coverage_signature(namespace, settings),
                "languages_in_scope": scoped,
                "embedding_weights": spec.fingerprint(),
            },
        )
    if wrong_hits is not None:
        report["wrong_hit_examples"] = _described(wrong_hits[:show_wrong], verify)
    # Which conflict checks objected, over every candidate pair the verifier was asked about.
    report["candidates_vetoed_by_check"] = dict(vetoes.most_common()) if verify is not None else None
    # ... and which only cautioned (served only where the verifier was sure of the pair).
    report["candidates_cautioned_by_check"] = dict(cautions.most_common()) if verify is not None else None
    semantic = namespace.semantic
    report["settings"] = {
        "namespace": namespace.name,
        "tenant": tenant,
        "semantic_enabled": semantic.enabled,
        "threshold": semantic.threshold,
        # What the replay did: a namespace without semantic reuse verifies nothing.
        "verify": semantic.enabled and semantic.verify,
        "verify_threshold": semantic.verify_threshold if semantic.enabled and semantic.verify else None,
        # The dtype of the verifier that ran (None where none did, or a stand-in scored).
        "verifier_dtype": getattr(getattr(verify, "__self__", None), "dtype", None),
        "embedding_model": semantic.embedding_model,
        "embedding_dtype": getattr(embedder, "dtype", None),
        # Whether each text's language was part of its semantic scope (no answer across languages).
        "language_in_scope": language_scoped(namespace, settings),
        "store": str(store) if store else "temporary",
        "workload": str(workload),
    }
    return report


def _described(wrong_hits: list[WrongHit], verify: Verify | None) -> list[dict]:
    pairs = [(hit.request, hit.served) for hit in wrong_hits]
    scores = verify(pairs) if verify is not None and pairs else [None] * len(pairs)
    return [
        dataclasses.asdict(hit)
        | {
            "cosine": None if hit.cosine is None else round(hit.cosine, 4),
            "verifier_score": None if score is None else round(float(score), 4),
        }
        for hit, score in zip(wrong_hits, scores, strict=True)
    ]


def _counting_checks(verify: Verify, vetoes: Counter, cautions: Counter) -> Verify:
    def counted(pairs: list[tuple[str, str]], at_least=None):
        verdicts = [assess(a, b) for a, b in pairs]
        # The verifier also refuses pairs it cannot read whole (a veto of its own).
        unread = unread_pairs(verify, pairs, among=np.array([v.veto is None for v in verdicts], dtype=bool))
        for verdict, too_long in zip(verdicts, unread, strict=True):
            if verdict.veto:
                vetoes[reason_kind(verdict.veto)] += 1
            elif too_long:
                vetoes[UNREAD_PAIR] += 1
            elif verdict.caution:
                cautions[reason_kind(verdict.caution)] += 1
        return verify(pairs, at_least=at_least)

    return counted


@dataclasses.dataclass(frozen=True)
class CalibrationSource:
    """What calibration reads: labelled pairs {"a", "b", "duplicate"}, or a labelled
    workload {"text", "group"} that is replayed at each setting (exactly one of them)."""

    pairs: Path | None = None
    workload: Path | None = None

    def __post_init__(self) -> None:
        if (self.pairs is None) == (self.workload is None):
            raise ValueError("calibrate reads either --pairs or --workload: give exactly one")

    @property
    def path(self) -> Path:
        return self.pairs or self.workload


def calibrated_settings(chosen: Operating | None, record: dict) -> dict:
    """What calibrate writes into the namespace's settings for its choice (None: no setting
    met the target, so semantic reuse goes off), with `record` saying how it was chosen."""
    if chosen is None:
        return {
            "semantic": {"enabled": False},
            "calibration": {**record, "result": NO_SETTING_MET},
        }
    semantic = {"enabled": True, "threshold": chosen.threshold, "verify": chosen.verify_threshold is not None}
    if chosen.verify_threshold is not None:
        # Plain cosine leaves the verifier's threshold as it was, for whoever turns it back on.
        semantic["verify_threshold"] = chosen.verify_threshold
    return {
        "semantic": semantic,
        "calibration": {**record, "precision": chosen.precision, "recall": chosen.recall},
    }


def calibrate(
    settings: Settings,
    home: Path,
    source: CalibrationSource,
    tenant: str,
    namespace: str,
    max_wrong_rate: float,
    limit: int | None,
    lance_folder: Path,
    enable_semantic: bool = False,
) -> dict:
    """Pick and write the namespace's semantic settings; returns the choice and its curves.
    A namespace whose settings keep semantic reuse off is calibrated only with
    `enable_semantic` (a choice turns it on), unless a calibration turned it off."""
    from datetime import UTC, datetime

    from storage.calibration import SMALLEST_WRONG_RATE, choose, curve, minimum_served
    from storage.config import override_path, write_namespace_override
    from storage.embedding_cache import EmbeddingCache

    if not SMALLEST_WRONG_RATE <= max_wrong_rate < 1:
        raise ValueError(
            f"--max-wrong-rate must be from {SMALLEST_WRONG_RATE:g} to under 1, got {max_wrong_rate}"
        )
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be a positive number of pairs or rows, got {limit}")
    override_path(home)  # a home that would overwrite tracked settings fails before any work
    current = settings.namespace(namespace, tenant)
    if not (enable_semantic or settings.reuse_on_apart_from_calibration(namespace, tenant)):
        raise ConfigError(
            f"semantic reuse is off in namespace {namespace!r} for tenant {tenant!r} by its settings "
            "(a task that cannot tolerate a reused answer, say); a calibration that finds a setting "
            "turns it on: give --enable-semantic to do that, or leave the namespace as it is"
        )
    model = current.semantic.embedding_model
    spec = settings.embedding_model(model)
    # The file is read whole before any model loads: a bad row fails in a second, not a minute.
    rows = _calibration_rows(source, limit)
    left_out: dict = {}
    if source.pairs is not None:
        rows, left_out = _distinct_pairs(rows)
    _require_enough_rows(source, rows, max_wrong_rate)
    embedder = load_embedder(spec.engine, spec.model_folder, spec.dtype)
    cache = EmbeddingCache(lance_folder, model, embedder.dimension, spec.fingerprint())
    verify = verifier_for(settings)
    if source.pairs is not None:
        points, counts = _pair_points(rows, cache, embedder, verify, settings, current)
    else:
        points, counts = _workload_points(rows, cache, embedder, verify, settings, current, tenant)
    _require_enough_evidence(source.path, points, max_wrong_rate)
    chosen = choose(points, max_wrong_rate)
    plain = choose([p for p in points if p.verify_threshold is None], max_wrong_rate)
    record = {
        "source": str(source.path.resolve()),
        "read_as": "pairs" if source.pairs is not None else "workload replay",
        "used": counts["pairs"] if source.pairs is not None else counts["requests"],
        "max_wrong_rate": max_wrong_rate,
        # The thresholds hold for this model's similarities only: another model needs its own.
        "embedding_model": model,
        "calibrated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    values = calibrated_settings(chosen, record)
    # The record is this run's alone: nothing of an earlier calibration's result stays beside it.
    written = write_namespace_override(home, namespace, values, tenant=tenant, replacing=("calibration",))
    return {
        "tenant": tenant,
        "namespace": namespace,
        **record,
        **counts,
        **left_out,
        "minimum_served": minimum_served(max_wrong_rate),
        "chosen": None if chosen is None else {**chosen.__dict__, "wrong_rate": chosen.wrong_rate},
        "semantic_enabled": chosen is not None,
        "best_plain_cosine": None if plain is None else {**plain.__dict__, "wrong_rate": plain.wrong_rate},
        "written_to": str(written),
        "curve_chosen": curve(points, None if chosen is None else chosen.verify_threshold),
        "curve_plain_cosine": curve(points, None),
    }


def _calibration_rows(source: CalibrationSource, limit: int | None) -> list[dict]:
    """The source's pairs or rows (the first `limit`), refused where there are none, or
    where a workload is too long to replay."""
    if source.pairs is not None:
        rows = read_pairs(source.pairs, limit=limit)
        if not rows:
            raise LabelledFileError(
                f'{source.pairs} holds no pairs: give one {{"a", "b", "duplicate"}} per line'
            )
        return rows
    rows = read_workload(source.workload, limit=limit)
    if not rows:
        raise LabelledFileError(f'{source.workload} holds no rows: give one {{"text", "group"}} per line')
    distinct = len({normalized_text(row["text"]) for row in rows})
    if distinct > MAX_REPLAYED_TEXTS:
        raise LabelledFileError(
            f"{source.workload} holds {distinct} distinct texts; a replay compares each with every "
            f"other, so calibrate on at most {MAX_REPLAYED_TEXTS} (use --limit)"
        )
    return rows


def _distinct_pairs(rows: list[dict]) -> tuple[list[dict], dict]:
    """Each pair once, as the cache would meet it: a pair of one text twice is an exact hit
    and never served semantically, and a line repeating a pair (the same two texts, keyed
    as the exact cache keys them, with the same label) is no more evidence than the first.
    Both are left out and counted; a pair labelled both ways is kept both ways."""
    kept, seen = [], set()
    same_text = repeated = 0
    for row in rows:
        a, b = normalized_text(row["a"]), normalized_text(row["b"])
        if a == b:
            same_text += 1
            continue
        key = (frozenset((a, b)), row["duplicate"])
        if key in seen:
            repeated += 1
            continue
        seen.add(key)
        kept.append(row)
    return kept, {"pairs_left_out": {"same_text": same_text, "repeated": repeated}}


def _evidence_refusal(path: Path, max_wrong_rate: float, found: str) -> LabelledFileError:
    from storage.calibration import minimum_served, right_needed

    return LabelledFileError(
        f"{path}: at --max-wrong-rate {max_wrong_rate} a setting must serve at least "
        f"{minimum_served(max_wrong_rate)} hits, {right_needed(max_wrong_rate)} of them right, "
        f"before its wrong-hit rate can be told from zero; {found}. Give more labelled "
        "duplicates (or rows of repeated groups), or a looser --max-wrong-rate; the namespace's "
        "settings were left as they were"
    )


def _require_enough_rows(source: CalibrationSource, rows: list[dict], max_wrong_rate: float) -> None:
    """Refuse, before any model loads, a file that holds too few duplicates for any setting
    to qualify. Right hits cannot outnumber the labelled duplicates (pairs), nor, in a
    workload, the rows whose group had by then been written in another wording: a right
    hit needs an entry of its group under another key (a row served is not inserted, so
    each later copy of it may be served again and counts)."""
    from storage.calibration import right_needed

    if source.pairs is not None:
        if all(row["duplicate"] for row in rows):
            # Precision measured without a single non-duplicate is 1.0 at every setting, and
            # the loosest would be written.
            raise LabelledFileError(
                f"{source.path}: every pair is labelled a duplicate (after leaving out pairs of "
                "one text and repeated lines), so no setting can be seen to serve a wrong "
                "answer; add pairs labelled false (near misses the namespace meets); the "
                "namespace's settings were left as they were"
            )
        most_right = sum(row["duplicate"] for row in rows)
        found = f"the file labels {most_right} distinct pairs of two texts duplicates"
    else:
        if len({row["group"] for row in rows}) < 2:
            raise LabelledFileError(
                f"{source.path}: every row is in one group, so no setting can be seen to serve a "
                "wrong answer; add rows of other groups (near misses the namespace meets); the "
                "namespace's settings were left as they were"
            )
        first_wording: dict[str, str] = {}
        reworded: set[str] = set()
        most_right = 0
        for row in rows:
            key = normalized_text(row["text"])
            if first_wording.setdefault(row["group"], key) != key:
                reworded.add(row["group"])
            most_right += row["group"] in reworded
        found = f"at most {most_right} of its rows follow another wording of their group"
    if most_right < right_needed(max_wrong_rate):
        raise _evidence_refusal(source.path, max_wrong_rate, found)


def _require_enough_evidence(path: Path, points: list, max_wrong_rate: float) -> None:
    """Refuse where no setting has the served and right hits a qualifying one needs, so
    that a small file cannot switch off a namespace calibrated before. A setting with that
    evidence at too low a precision is an answer (semantic reuse off) and is written."""
    from storage.calibration import could_qualify

    if not any(could_qualify(point, max_wrong_rate) for point in points):
        most_served = max((p.served for p in points), default=0)
        most_right = max((p.right for p in points), default=0)
        raise _evidence_refusal(
            path,
            max_wrong_rate,
            f"here the loosest setting serves {most_served}, and the most right at any is {most_right}",
        )


def _pair_points(
    pairs: list[dict], cache, embedder, verify: Verify, settings: Settings, current: NamespaceSettings
):
    """Operating points over labelled pairs, and what was read."""
    import numpy as np

    from inference.embedder import pair_cosines
    from storage.calibration import operating_points

    texts = list(dict.fromkeys([p["a"] for p in pairs] + [p["b"] for p in pairs]))
    matrix, embedded_now = cache.embed(texts, embedder)
    cosine = pair_cosines(matrix, texts, [(p["a"], p["b"]) for p in pairs])
    duplicate = np.array([p["duplicate"] for p in pairs])
    # A pair with a text the pipeline gives exact matching only is never served semantically
    # at settings of that kind (the verifier may read fewer languages than the embedding model).
    # Nor is a pair of two languages where the pipeline keeps each language to its own scope.
    exact_only, scope_languages = replay_decisions(texts, settings, current)
    keyed = [(normalized_text(p["a"]), normalized_text(p["b"])) for p in pairs]
    servable = {
        verified: np.array(
            [
                a not in skipped
                and b not in skipped
                and _same_scope_language(scope_languages[verified], a, b)
                for a, b in keyed
            ],
            dtype=bool,
        )
        for verified, skipped in exact_only.items()
    }
    # The verifier only matters where some grid threshold could serve the pair.
    scored = (cosine >= min(COSINE_FLOOR, current.semantic.threshold)) & servable[True]
    asked = [(p["a"], p["b"]) for p, s in zip(pairs, scored, strict=True) if s]
    faithful = per_threshold_verify(verify)
    if faithful is None:
        scores = np.zeros(len(pairs), dtype=np.float32)
        scores[scored] = verify(asked)
    else:  # a bfloat16 verifier: each threshold asked as the pipeline asks it
        scores = {}
        for verify_threshold in (t for t in VERIFY_GRID if t is not None):
            scores[verify_threshold] = np.zeros(len(pairs), dtype=np.float32)
            scores[verify_threshold][scored] = faithful(asked, at_least=[verify_threshold] * len(asked))
    labels: dict[frozenset, set] = {}
    for pair in pairs:
        # Keyed as the exact cache keys texts, so one pair typed two ways is one pair.
        same_two = frozenset((normalized_text(pair["a"]), normalized_text(pair["b"])))
        labels.setdefault(same_two, set()).add(pair["duplicate"])
    counts = {
        "pairs": len(pairs),
        "duplicates": int(duplicate.sum()),
        # Pairs of the same two texts labelled both ways (noisy labels): kept, and counted
        # so that a file at odds with itself shows.
        "pairs_labelled_both_ways": sum(len(seen) > 1 for seen in labels.values()),
        "texts": len(texts),
        "embedded_now": embedded_now,
        # Texts given exact matching only (their language, their length) at settings that
        # verify and at plain cosine settings: a pair with one of them is not served there.
        "texts_exact_only": _counted(exact_only),
    }
    return operating_points(cosine, scores, duplicate, servable), counts


def _workload_points(
    rows: list[dict],
    cache,
    embedder,
    verify: Verify,
    settings: Settings,
    current: NamespaceSettings,
    tenant: str,
):
    """Operating points of the workload replayed at each setting, and what was read."""
    from storage.calibration import replay_points

    texts = [row["text"] for row in rows]
    distinct = list(dict.fromkeys(normalized_text(text) for text in texts))
    matrix, embedded_now = cache.embed(distinct, embedder)
    exact_only, scope_languages = replay_decisions(texts, settings, current)
    points = replay_points(
        texts,
        [row["group"] for row in rows],
        matrix,
        verify,
        exact_only=exact_only,
        scope_languages=scope_languages,
        # Ties ordered as `evaluate --tenant --namespace` orders them, so both count alike.
        tie_key=functools.partial(replay_key, current.name, tenant),
    )
    counts = {
        "requests": len(rows),
        "groups": len({row["group"] for row in rows}),
        "texts": len(distinct),
        "embedded_now": embedded_now,
        # Distinct texts given exact matching only (as evaluate gives them: their language,
        # their length) at settings that verify and at plain cosine settings.
        "texts_exact_only": _counted(exact_only),
    }
    return points, counts


def _decided_once(
    namespace: NamespaceSettings, settings: Settings
) -> Callable[[list[str]], list[tuple[str | None, str | None]]]:
    """Each text's (reason it gets exact matching only, language its scope holds), from one
    reading of it: the replay asks for a block's scope languages and then for its unique
    rows' reasons, and the language detector is most of the cost of either."""
    decided: dict[str, tuple[str | None, str | None]] = {}

    def decide(texts: list[str]) -> list[tuple[str | None, str | None]]:
        new = [text for text in dict.fromkeys(texts) if text not in decided]
        if new:
            reasons, languages = semantic_decisions(new, [namespace] * len(new), settings)
            decided.update(zip(new, zip(reasons, languages, strict=True), strict=True))
        return [decided[text] for text in texts]

    return decide


def _same_scope_language(languages: dict[str, str] | None, a: str, b: str) -> bool:
    return languages is None or languages.get(a) == languages.get(b)


def _counted(exact_only: dict[bool, set[str]]) -> dict[str, int]:
    return {"verified": len(exact_only[True]), "plain_cosine": len(exact_only[False])}
