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


def _weights(folder, content: bytes):
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 4}')
    (folder / "model.safetensors").write_bytes(content)
    (folder / "README.md").write_text(str(folder))  # not part of what a model computes
    return folder


def test_the_fingerprint_tells_weights_apart_wherever_they_lie(tmp_path):
    from storage.model_fingerprint import folder_fingerprint

    big = bytes(range(256)) * (16 * 1024)  # 4 MiB
    tuned = bytearray(big)
    tuned[100_000] ^= 1  # one byte of one early layer
    same = folder_fingerprint(_weights(tmp_path / "a", big))
    assert folder_fingerprint(_weights(tmp_path / "copy", big)) == same
    assert folder_fingerprint(_weights(tmp_path / "tuned", bytes(tuned))) != same
    # An export for another runtime beside the weights is not other weights.
    exported = _weights(tmp_path / "exported", big)
    (exported / "onnx").mkdir()
    (exported / "onnx" / "model.onnx").write_bytes(b"graph")
    assert folder_fingerprint(exported) == same


def test_other_weights_under_the_same_model_name_are_refused(tmp_path):
    """Same width, other training: nothing in the vectors shows it, so the table records
    which weights filled it."""
    store = tmp_path / "lance"
    EmbeddingCache(store, "my-model", 4, "sha256:first").put(["h"], np.ones((1, 4)))
    assert EmbeddingCache(store, "my-model", 4, "sha256:first").count() == 1
    with pytest.raises(ConfigError, match="was filled by other weights") as raised:
        EmbeddingCache(store, "my-model", 4, "sha256:second")
    assert "Give the new model its own name" in str(raised.value)
    assert EmbeddingCache(store, "other-name", 4, "sha256:second").count() == 0  # its own table
    # Starting the table afresh (its folder deleted) is taking the new weights.
    import shutil

    shutil.rmtree(store / "embeddings__my_model.lance")
    assert EmbeddingCache(store, "my-model", 4, "sha256:second").count() == 0
    assert EmbeddingCache(store, "my-model", 4, "sha256:second").count() == 0


@pytest.mark.slow
def test_the_pipeline_resource_records_and_checks_the_model_weights(tmp_path):
    """The resource hands the configured model's fingerprint to both of its vector tables."""
    import json

    from orchestration.resources import InferCacheResource

    resource = InferCacheResource(home=str(tmp_path))
    resource.embedding_cache("all-MiniLM-L6-v2")
    resource.semantic_index("all-MiniLM-L6-v2")
    lance = resource.locations.lance_folder
    expected = resource.settings().embedding_model("all-MiniLM-L6-v2").fingerprint()
    for table in ("embeddings__all_minilm_l6_v2", "semantic__all_minilm_l6_v2"):
        record = lance / f".{table}.model.json"
        assert json.loads(record.read_text()) == {"fingerprint": expected}
        record.write_text(json.dumps({"fingerprint": "sha256:another-training"}))
    with pytest.raises(ConfigError, match="was filled by other weights"):
        resource.embedding_cache("all-MiniLM-L6-v2")
    with pytest.raises(ConfigError, match="was filled by other weights"):
        resource.semantic_index("all-MiniLM-L6-v2")


def test_two_models_making_one_table_at_once_never_both_fill_it(tmp_path):
    """Whichever makes the table records its weights before anyone else compares with them."""
    import json

    for trial in range(10):
        folder = tmp_path / str(trial)
        start = threading.Barrier(6)
        accepted: list[str] = []

        def fill(fingerprint, folder=folder, start=start, accepted=accepted):
            start.wait()
            try:
                EmbeddingCache(folder, "my-model", 4, fingerprint).put([fingerprint], np.ones((1, 4)))
                accepted.append(fingerprint)
            except ConfigError:
                pass

        threads = [threading.Thread(target=fill, args=(f"sha256:{i % 2}",)) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(set(accepted)) == 1 and len(accepted) == 3, accepted
        recorded = json.loads((folder / ".embeddings__my_model.model.json").read_text())["fingerprint"]
        assert recorded == accepted[0]


def test_an_unreadable_weights_record_is_a_clear_error(tmp_path):
    EmbeddingCache(tmp_path, "my-model", 4, "sha256:first")
    (tmp_path / ".embeddings__my_model.model.json").write_text("")  # a crash mid-write, say
    with pytest.raises(ConfigError, match="does not say which model's weights filled"):
        EmbeddingCache(tmp_path, "my-model", 4, "sha256:first")


def test_requests_naming_an_embedding_model_no_longer_configured_fail_clearly():
    """Stored vectors are checked against the weights the name stands for; a name the
    configuration lost says which partition and what to do."""
    import dagster as dg
    import polars as pl

    from assets.lookups import current_embeddings
    from storage.keys import text_hash

    def fingerprint_of(name):
        raise ConfigError(f"unknown embedding model {name!r}")

    requests = pl.DataFrame(
        {
            "request_id": ["r-1"],
            "input": ["How do I reset my password?"],
            "embedding_model": ["gone-model"],
            "text_hash": [text_hash("How do I reset my password?")],
            "model_fingerprint": ["sha256:old"],
        }
    )
    with pytest.raises(dg.Failure, match="of 2026-03-01 name the embedding model 'gone-model'"):
        current_embeddings(requests, "2026-03-01", fingerprint_of)
    assert current_embeddings(requests, "2026-03-01", lambda name: "sha256:old") is requests


def test_two_writers_embedding_one_new_text_at_once_store_it_once(tmp_path):
    """A run and `calibrate` both find a text missing and both embed it: the one that
    appends second finds the first's row and stores nothing (a plain append had stored the
    text twice), and uses the stored vector, so the text has one vector everywhere. The
    other writer is a second cache object finishing while the first embeds (a review's case;
    the lock excludes threads as it does processes)."""
    first, other = EmbeddingCache(tmp_path, "my-model", 4), EmbeddingCache(tmp_path, "my-model", 4)
    texts = ["cancel my order", "track my parcel"]

    def embed_while_the_other_finishes(batch):
        other.embed(batch, lambda inner: np.full((len(inner), 4), 2.0, dtype=np.float32))
        return np.ones((len(batch), 4), dtype=np.float32)

    matrix, embedded = first.embed(texts, embed_while_the_other_finishes)
    assert embedded == 2  # both texts were embedded here too: the work is done twice, not the rows
    assert first.count() == 2
    np.testing.assert_array_equal(matrix, np.full((2, 4), 2.0))
    # A text only one of them embeds is appended as before.
    again, embedded = first.embed([*texts, "reset my password"], lambda batch: np.ones((len(batch), 4)))
    assert embedded == 1 and first.count() == 3
    np.testing.assert_array_equal(again[2], np.ones(4))
