"""Opening the LanceDB tables: made once, safely, and never mixed with vectors of another model."""

import threading

import numpy as np
import pytest

from storage.config import ConfigError
from storage.embedding_cache import EmbeddingCache


def test_writers_making_one_table_at_once_all_get_it(tmp_path):
    """Two runs embedding on a fresh store make the same table at the same moment: the
    commit conflict that loses is not an error (threads race tighter than processes here)."""
    failures = []
    for trial in range(20):
        folder = tmp_path / str(trial)
        start = threading.Barrier(6)

        def make(folder=folder, start=start):
            start.wait()
            try:
                EmbeddingCache(folder, "all-MiniLM-L6-v2", 4).put(["h"], np.ones((1, 4)))
            except Exception as error:  # noqa: BLE001 - every failure is the finding
                failures.append(f"{type(error).__name__}: {error}")

        threads = [threading.Thread(target=make) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert EmbeddingCache(folder, "all-MiniLM-L6-v2", 4).count() == 6
    assert not failures, failures[:3]


def test_a_model_of_another_width_under_the_same_name_is_refused(tmp_path):
    cache = EmbeddingCache(tmp_path, "my-model", 4)
    cache.put(["h"], np.ones((1, 4)))
    with pytest.raises(ConfigError, match="another width was used under the same name") as raised:
        EmbeddingCache(tmp_path, "my-model", 8)
    assert "embeddings__my_model.lance" in str(raised.value)
    assert set(EmbeddingCache(tmp_path, "my-model", 4).get(["h"])) == {"h"}  # nothing lost
