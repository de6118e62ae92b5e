"""What identifies an embedding model's weights, so that vectors of two models are never
mixed in one table under one name."""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

# The files that decide what a model computes; code, caches and read-me files do not, nor
# do exports for other runtimes that sentence-transformers writes into subfolders.
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".onnx", ".json", ".txt", ".model")
_OTHER_RUNTIMES = frozenset({"onnx", "openvino"})
_CHUNK = 1 << 20


def package_fingerprint(package: str) -> str:
    """Weights shipped inside a package: its installed version names them."""
    return f"{package}=={metadata.version(package)}"


@functools.cache
def folder_fingerprint(folder: Path) -> str:
    """A short digest of the weight and configuration files under `folder`, read whole (a
    fine-tune may change a few layers only; MiniLM's 87 MiB take about 0.2 s, once a
    process). Conservative: the same weights saved again by another library version (its
    version is in config.json) read as other weights."""
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix in _WEIGHT_SUFFIXES
        and _OTHER_RUNTIMES.isdisjoint(p.relative_to(folder).parts[:-1])
    )
    for path in files:
        digest.update(f"{path.relative_to(folder).as_posix()}\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return f"sha256:{digest.hexdigest()[:24]}"
