"""Files that several processes write: an exclusive lock, and replacing a file whole."""

from __future__ import annotations

import fcntl
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Held until the block ends. Each entry opens the file anew, so two threads of one
    process exclude each other as two processes do (flock locks an open file, not a pid)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def replace_file(path: Path, text: str) -> None:
    """Write beside the file, then rename over it: readers see the old or the new, whole,
    and a crash leaves the old. The file keeps its permissions; a new one gets what the
    process's umask gives (never changed here: other threads create files meanwhile)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o777)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
