"""The embedding cache (LanceDB): no text is embedded twice by the same model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa

from storage.keys import normalized_text, text_hash
from storage.lance_tables import connect, literal, open_table, table_name, vector_field
from storage.safe_files import exclusive_lock

# LanceDB filters are strings; keep each IN list to a size the planner handles well.
_LOOKUP_CHUNK = 1000

Embed = Callable[[list[str]], np.ndarray]


class EmbeddingCache:
    def __init__(
        self, folder: Path, embedding_model: str, dimension: int, model_fingerprint: str | None = None
    ) -> None:
        """`model_fingerprint` (EmbeddingModelSpec.fingerprint) refuses a table that other
        weights filled under the same name; None skips that check."""
        self.embedding_model = embedding_model
        self.dimension = dimension
        self.model_fingerprint = model_fingerprint
        schema = pa.schema([pa.field("text_hash", pa.string()), vector_field(dimension)])
        name = table_name("embeddings", embedding_model)
        self._table = open_table(connect(folder), name, schema, model_fingerprint)
        # Held while new vectors are checked against the table and appended (put_missing).
        self._append_lock = Path(folder) / f".{name}.append.lock"

    def get(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), _LOOKUP_CHUNK):
            chunk = unique[start : start + _LOOKUP_CHUNK]
            rows = (
                self._table.search()
                .where(f"text_hash IN ({','.join(literal(h) for h in chunk)})")
                .select(["text_hash", "vector"])
                .limit(None)
                .to_arrow()
            )
            vectors = np.asarray(rows["vector"].to_pylist(), dtype=np.float32)
            found.update(zip(rows["text_hash"].to_pylist(), vectors, strict=True))
        return found

    def put(self, hashes: Sequence[str], vectors: np.ndarray) -> None:
        if not len(hashes):
            return
        self._table.add(
            pa.table(
                {
                    "text_hash": list(hashes),
                    "vector": pa.array(
                        vectors.astype(np.float32).tolist(), type=vector_field(self.dimension).type
                    ),
                }
            )
        )

    def put_missing(
        self, hashes: Sequence[str], vectors: np.ndarray, looked_at_version: int | None = None
    ) -> dict[str, np.ndarray]:
        """Append the vectors of the hashes the table does not hold yet; returns the vectors
        it already held for the others. Two processes that embed one new text at once (a run
        and `calibrate`, say) both find it missing and both embed it: under the lock the
        second finds the first's row and appends nothing, where a plain append stored the
        text twice, and it uses the stored vector, so a text has one vector everywhere.
        `looked_at_version`: the table's version when the caller found these hashes missing;
        where nothing was committed since, they still are, and the table is not read again
        (about 4 s a 100,000 texts, a review measured)."""
        with exclusive_lock(self._append_lock):
            unchanged = looked_at_version is not None and self._table.version == looked_at_version
            present = {} if unchanged else self.get(hashes)
            new = [i for i, h in enumerate(hashes) if h not in present]
            self.put([hashes[i] for i in new], np.asarray(vectors)[new])
        return present

    def count(self) -> int:
        return self._table.count_rows()

    def embed(self, texts: Sequence[str], embed: Embed) -> tuple[np.ndarray, int]:
        """Vectors for `texts` in order, embedding only texts not cached yet.

        Returns the matrix and how many texts were embedded now.
        """
        hashes = [text_hash(t) for t in texts]
        version = self._table.version  # before the look: a commit after it shows as a new version
        cached = self.get(hashes)
        # The text embedded is the one the key is made of (NFC): two spellings of one key
        # must not leave the vector of whichever came first (models that do not normalise
        # read them apart).
        missing = {h: normalized_text(t) for h, t in zip(hashes, texts, strict=True) if h not in cached}
        if missing:
            new_vectors = np.asarray(embed(list(missing.values())), dtype=np.float32)
            stored_meanwhile = self.put_missing(list(missing), new_vectors, version)
            cached.update(zip(missing, new_vectors, strict=True))
            cached.update(stored_meanwhile)
        matrix = (
            np.stack([cached[h] for h in hashes])
            if hashes
            else np.zeros((0, self.dimension), dtype=np.float32)
        )
        return matrix, len(missing)
