import os
import subprocess
import sys

import pytest
from transformers.utils import logging as transformers_logging

from inference.quiet_loading import quiet_loading
from storage.config import load_settings


def test_within_it_transformers_is_quiet_and_afterwards_as_before():
    transformers_logging.set_verbosity_warning()
    transformers_logging.enable_progress_bar()
    with quiet_loading():
        assert transformers_logging.get_verbosity() == transformers_logging.ERROR
        assert not transformers_logging.is_progress_bar_enabled()
    assert transformers_logging.get_verbosity() == transformers_logging.WARNING
    assert transformers_logging.is_progress_bar_enabled()


def test_a_failed_load_still_gives_the_previous_state_back():
    transformers_logging.set_verbosity_info()
    transformers_logging.disable_progress_bar()
    with pytest.raises(OSError), quiet_loading():
        raise OSError("no weights in that folder")
    assert transformers_logging.get_verbosity() == transformers_logging.INFO
    assert not transformers_logging.is_progress_bar_enabled()
    transformers_logging.set_verbosity_warning()
    transformers_logging.enable_progress_bar()


def test_loading_the_embedding_model_prints_no_loading_bar():
    # In a fresh process: this one may have loaded the model already (it is cached).
    folder = load_settings().embedding_model("all-MiniLM-L6-v2").model_folder()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from inference.embedder import load_sentence_model; "
            "load_sentence_model(sys.argv[1])",
            str(folder),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Loading weights" not in done.stderr, done.stderr[-2000:]
