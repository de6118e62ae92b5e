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
import re
import reprlib
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from storage.keys import normalized_text

HELDOUT_SHARE = 0.2


class LabelledFileError(ValueError):
    """A labelled pairs or workload file that cannot be used as given; the message names
    the file, the line and what to change."""


def _json_rows(path: Path, limit: int | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, row) for each non-blank line of a .jsonl or .jsonl.gz file; the first
    `limit` rows only where a limit is given, reading no further. A file that cannot be read
    as UTF-8 JSON lines is refused with the line and what is wrong, never with a traceback."""
    if limit is not None and limit < 1:
        return
    read = 0
    for number, raw in _raw_lines(path):
        try:
            # utf-8-sig: files saved by spreadsheet tools often begin with a byte-order mark.
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise LabelledFileError(
                f"{path}:{number}: not UTF-8 text (byte {raw[error.start]:#04x} at byte {error.start + 1} "
                "of the line); save the file as UTF-8"
            ) from None
        if not line.strip():
            continue
        row = _parsed(path, number, line)
        read += 1
        yield number, row
        if limit is not None and read >= limit:
            return


_BARE_CR = re.compile(rb"\r(?!\n)")


def _split_at_bare_cr(raw: bytes) -> list[bytes]:
    """A CR alone ends a line too (files saved with classic Mac line ends), unless the
    line is one JSON document as it stands: a CR is also whitespace between JSON tokens,
    and such a row parsed before. JSON strings never hold one unescaped."""
    if not _BARE_CR.search(raw):
        return [raw]
    try:
        json.loads(raw.decode("utf-8"))
    except ValueError:  # not UTF-8 or not one document: read it as lines
        return _BARE_CR.split(raw)
    return [raw]


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of a plain or gzip file; only reading's own errors are turned
    into LabelledFileError, each saying what the file is."""
    gzipped = path.suffix.lower() == ".gz"
    try:
        if path.is_dir():
            raise LabelledFileError(f"{path}: is a folder; give one .jsonl or .jsonl.gz file")
        handle = gzip.open(path, "rb") if gzipped else open(path, "rb")  # closed by the with below
    except FileNotFoundError:
        raise LabelledFileError(f"{path}: no such file") from None
    except OSError as error:
        raise _unreadable(path, error) from None
    with handle:
        number = 0
        while True:
            try:
                raw = handle.readline()
            except (gzip.BadGzipFile, EOFError, zlib.error) as error:
                raise LabelledFileError(
                    f"{path}: not a whole gzip file ({error or 'it ends early'}); recompress it, or "
                    "drop the .gz suffix if it is plain text"
                ) from None
            except OSError as error:
                raise _unreadable(path, error) from None
            if not raw:
                return
            for piece in _split_at_bare_cr(raw):
                number += 1
                yield number, piece


def _unreadable(path: Path, error: OSError) -> LabelledFileError:
    return LabelledFileError(f"{path}: the file cannot be read ({error.strerror or error})")


def _parsed(path: Path, number: int, line: str) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise LabelledFileError(
            f"{path}:{number}: not valid JSON ({error.msg} at column {error.colno})"
        ) from None
    except ValueError:
        # The one other ValueError json raises: an integer of more digits than Python
        # converts (its message advises an interpreter setting, no help here).
        raise LabelledFileError(
            f"{path}:{number}: not usable JSON (a number of thousands of digits); write it as a string"
        ) from None
    except RecursionError:
        raise LabelledFileError(f"{path}:{number}: JSON nested too deep to read") from None
    if not isinstance(row, dict):
        raise LabelledFileError(f"{path}:{number}: each line must be one JSON object")
    if "\\u" in line:
        # An escaped lone surrogate ("\\ud800") parses but is no text: it cannot be stored.
        try:
            json.dumps(row, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise LabelledFileError(
                f"{path}:{number}: holds an unpaired surrogate escape (such as \\ud800), which "
                "is no character; write the text as UTF-8"
            ) from None
    return row


def _text(row: dict, field: str) -> str | None:
    value = row.get(field)
    return value if isinstance(value, str) and value.strip() else None


def read_pairs(path: Path, limit: int | None = None) -> list[dict]:
    """Rows {"a", "b", "duplicate"} from a .jsonl or .jsonl.gz file; "duplicate" is true,
    false, 1 or 0."""
    rows = []
    for number, row in _json_rows(path, limit):
        if not {"a", "b", "duplicate"} <= row.keys():
            raise LabelledFileError(f"{path}:{number}: a pair needs the fields a, b and duplicate")
        a, b = _text(row, "a"), _text(row, "b")
        for field, value in (("a", a), ("b", b)):
            if value is None:
                raise LabelledFileError(
                    f'{path}:{number}: "{field}" must be a non-empty string, not {reprlib.repr(row[field])}'
                )
        duplicate = row["duplicate"]
        # 2, "no" or null would read as a label under bool(): only the two labels are taken.
        if duplicate not in (True, False) or isinstance(duplicate, float):
            raise LabelledFileError(
                f'{path}:{number}: "duplicate" must be true or false (or 1 or 0), not {duplicate!r}'
            )
        rows.append({"a": a, "b": b, "duplicate": bool(duplicate)})
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


def read_workload(path: Path, limit: int | None = None) -> list[dict]:
    """Rows {"text", "group"} from a .jsonl workload file (the first `limit` rows where a
    limit is given). A group is a string or a whole number, compared as text; one text
    (as the exact cache keys it) may not stand in two groups, for it has one right answer."""
    rows = []
    first_seen: dict[str, tuple[int, str]] = {}
    for number, row in _json_rows(path, limit):
        text = _text(row, "text")
        if text is None:
            raise LabelledFileError(
                f'{path}:{number}: "text" must be a non-empty string, not {reprlib.repr(row.get("text"))}'
            )
        group = _group(row.get("group"))
        if group is None:
            raise LabelledFileError(
                f'{path}:{number}: "group" must be a non-empty string or a whole number, not '
                f"{reprlib.repr(row.get('group'))}"
            )
        seen_line, seen_group = first_seen.setdefault(normalized_text(text), (number, group))
        if seen_group != group:
            raise LabelledFileError(
                f"{path}:{number}: {text!r} is in group {group!r} here and in {seen_group!r} at line "
                f"{seen_line}; the cache serves one answer per text, so give it one group"
            )
        rows.append({"text": text, "group": group})
    return rows


def _group(value) -> str | None:
    """A group as text: 7, 7.0 (as tables with gaps write whole numbers) and "7" are one
    group; None for anything else (true, null, 7.5, "", and floats past 2**53, where two
    whole numbers read as one)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) and value.strip() else None


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
