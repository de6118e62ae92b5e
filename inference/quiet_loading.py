"""Loading a model without transformers' loading bar and load-time warnings."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet_loading() -> Iterator[None]:
    """Within it, transformers shows no loading bar and only errors; the previous state
    comes back afterwards. A bar on every process that embeds or verifies says nothing to a
    pipeline's log, and a head reported "newly initialised" before its trained weights are
    put in would only mislead."""
    from transformers.utils import logging as transformers_logging

    verbosity = transformers_logging.get_verbosity()
    bars_shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.set_verbosity_error()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)
        if bars_shown:
            transformers_logging.enable_progress_bar()
