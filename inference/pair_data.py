"""Labelled question pairs: reading them and splitting them by question.

A held-out split must not share a question with the training split, or the
held-out figures measure memory, not generalisation. Pairs are grouped into
connected components of the question graph and whole components are assigned
to one side by a hash, so the split is stable across runs and machines.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

HELDOUT_SHARE = 0.2


def read_pairs(path: Path, limit: int | None = None) -> list[dict]:
    """Rows {"a", "b", "duplicate"} from a .jsonl or .jsonl.gz file."""
    opener = gzip.open if path.suffix == ".gz" else open
    rows = []
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not {"a", "b", "duplicate"} <= row.keys():
                raise ValueError(f"{path}:{number}: a pair needs the fields a, b and duplicate")
            rows.append({"a": row["a"], "b": row["b"], "duplicate": bool(row["duplicate"])})
            if limit is not None and len(rows) >= limit:
                break
    return rows


def split_by_question(
    pairs: Iterable[dict], heldout_share: float = HELDOUT_SHARE
) -> tuple[list[dict], list[dict]]:
    """(train, heldout): pairs that share a question always land on the same side."""
    pairs = list(pairs)
    parent: dict[str, str] = {}

    def root(question: str) -> str:
        parent.setdefault(question, question)
        while parent[question] != question:
            parent[question] = parent[parent[question]]
            question = parent[question]
        return question

    for pair in pairs:
        a, b = root(pair["a"]), root(pair["b"])
        if a != b:
            parent[max(a, b)] = min(a, b)
    members: dict[str, list[str]] = {}
    for question in parent:
        members.setdefault(root(question), []).append(question)
    heldout_roots = {
        component for component, questions in members.items() if _bucket(min(questions)) < heldout_share
    }
    train, heldout = [], []
    for pair in pairs:
        (heldout if root(pair["a"]) in heldout_roots else train).append(pair)
    return train, heldout


def _bucket(text: str) -> float:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def read_workload(path: Path) -> list[dict]:
    """Rows {"text", "group"} from a .jsonl workload file."""
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not {"text", "group"} <= row.keys():
                raise ValueError(f"{path}:{number}: a workload row needs the fields text and group")
            rows.append({"text": row["text"], "group": str(row["group"])})
    return rows


def family_of(group: str) -> str:
    """ "fam017-b" -> "fam017": the groups of one family are near misses of each other."""
    return group.rsplit("-", 1)[0]


def family_pairs(rows: Iterable[dict]) -> list[dict]:
    """Every pair of requests within one family: a duplicate when both are in one group,
    a near miss otherwise. Requests of different families are not paired (too easy to teach)."""
    families: dict[str, list[dict]] = {}
    for row in rows:
        families.setdefault(family_of(row["group"]), []).append(row)
    pairs = []
    for members in families.values():
        for i, first in enumerate(members):
            for second in members[i + 1 :]:
                if first["text"] != second["text"]:
                    same = first["group"] == second["group"]
                    pairs.append({"a": first["text"], "b": second["text"], "duplicate": same})
    return pairs
