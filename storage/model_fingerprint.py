"""What identifies an embedding model's weights, so that vectors of two models are never
mixed in one table under one name."""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

# The files that decide what a model computes; code, caches and read-me files do not.
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".onnx", ".json", ".txt", ".model")
# A weights file is sampled, not read whole: its size, header and three slices tell two
# trainings apart (every tensor changes in a fine-tune), at a few milliseconds a model.
_SAMPLE_BYTES = 1 << 20


def package_fingerprint(package: str) -> str:
    """Weights shipped inside a package: its installed version names them."""
    return f"{package}=={metadata.version(package)}"


@functools.cache
def folder_fingerprint(folder: Path) -> str:
    """A short digest of the weight and configuration files under `folder`."""
    digest = hashlib.sha256()
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    for path in files:
        size = path.stat().st_size
        digest.update(f"{path.relative_to(folder).as_posix()}\0{size}\0".encode())
        with open(path, "rb") as handle:
            if size <= 3 * _SAMPLE_BYTES:
                digest.update(handle.read())
                continue
            for offset in (0, size // 2, size - _SAMPLE_BYTES):
                handle.seek(offset)
                digest.update(handle.read(_SAMPLE_BYTES))
    return f"sha256:{digest.hexdigest()[:24]}"
