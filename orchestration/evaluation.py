"""`infercache evaluate` and `infercache calibrate`: measuring and tuning the semantic cache."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path

from inference.embedder import SentenceEmbedder
from inference.pair_verifier import SHIPPED_MODEL, VERIFIER_BASE_MODEL, load_verifier
from storage.config import NamespaceSettings, Settings
from storage.replay import ReplayStores, replay_workload


def read_workload(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row.get("text"), str) or not row["text"].strip() or "group" not in row:
            raise ValueError(f'{path}:{number}: each row needs a non-empty "text" and a "group"')
        rows.append({"text": row["text"], "group": str(row["group"])})
    return rows


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


def verifier_for(settings: Settings, folder: Path = SHIPPED_MODEL):
    base = settings.embedding_model(VERIFIER_BASE_MODEL).model_folder()
    return load_verifier(str(base), str(folder)).score


def evaluate(
    settings: Settings,
    workload: Path,
    namespace: NamespaceSettings,
    store: Path | None,
    tenant: str = "evaluation",
) -> dict:
    rows = read_workload(workload)
    embedder = SentenceEmbedder(settings.embedding_model(namespace.semantic.embedding_model).model_folder())
    verify = verifier_for(settings) if namespace.semantic.enabled and namespace.semantic.verify else None
    with tempfile.TemporaryDirectory(prefix="infercache-evaluate-") as scratch:
        folder = store or Path(scratch)
        stores = ReplayStores(folder / "cache.duckdb", folder / "lance")
        report = replay_workload(rows, namespace, stores, embedder, embedder.dimension, verify, tenant)
    semantic = namespace.semantic
    report["settings"] = {
        "namespace": namespace.name,
        "semantic_enabled": semantic.enabled,
        "threshold": semantic.threshold,
        "verify": semantic.verify,
        "verify_threshold": semantic.verify_threshold if semantic.verify else None,
        "embedding_model": semantic.embedding_model,
        "store": str(store) if store else "temporary",
        "workload": str(workload),
    }
    return report
