"""Cache keys: canonical encoding of a request, then SHA-256.

The key covers everything that changes the answer. The canonical request (an
ordered JSON array) is stored with the entry, and a hit is served only when it
equals the new request's: that, not the hash, is the collision guard.
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from dataclasses import dataclass
from typing import Any

# Bump when the canonical encoding changes: old entries then simply stop matching.
KEY_SCHEMA_VERSION = 1


class InvalidParams(ValueError):
    """Inference parameters that cannot be encoded canonically."""


@dataclass(frozen=True)
class RequestIdentity:
    tenant: str
    namespace: str
    model: str
    model_version: str
    params: dict[str, Any]
    prefix: str
    input: str


def canonical_params(params: dict[str, Any]) -> str:
    """Params as canonical JSON: sorted keys, integral floats as integers, no NaN/inf."""
    if not isinstance(params, dict):
        raise InvalidParams(f"params must be a JSON object, got {type(params).__name__}")
    return json.dumps(_normalize(params, "params"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_request(identity: RequestIdentity) -> str:
    """The ordered JSON array the key is the hash of."""
    return _canonical_json([*_context(identity), normalized_text(identity.input)])


def cache_key(canonical: str) -> bytes:
    """The fixed-length key: SHA-256 of the canonical request's UTF-8 bytes."""
    return hashlib.sha256(canonical.encode("utf-8")).digest()


def semantic_scope(identity: RequestIdentity, embedding_model: str, language: str | None = None) -> str:
    """Hex hash of everything but the input: the hard prefilter of a semantic search.

    Two requests may share an answer only if they agree on all of it. `language` is the
    text's language where the namespace keeps answers to one language
    (storage.semantic_coverage.language_scoped); None leaves it out.
    """
    return _scope_hash(_context(identity), embedding_model, language)


def semantic_scopes_of_stored(
    canonicals: list[str], embedding_model: str, languages: list[str | None] | None = None
) -> list[str]:
    """The semantic scopes of stored entries, from their canonical requests (as
    semantic_scope gives them for the requests that wrote them, with each entry's
    language where given): an entry written without a vector, or under another embedding
    model, can be indexed afterwards under the scope its requests search. The context
    (everything but the input) is hashed once per distinct context and language, not
    parsed again for every entry: the vector checks read a namespace's entries by the
    million."""
    languages = [None] * len(canonicals) if languages is None else languages
    scopes: dict[tuple[str, str | None], str] = {}
    found = []
    for canonical, language in zip(canonicals, languages, strict=True):
        context = _context_json(canonical)
        scope = scopes.get((context, language))
        if scope is None:
            scope = scopes[(context, language)] = _scope_hash(
                json.loads(context + "]"), embedding_model, language
            )
        found.append(scope)
    return found


def _context_json(canonical: str) -> str:
    """The canonical request's JSON up to its last item (the input, always a string), without
    the comma before it. That item starts at the last `,"` before the closing `"]`: inside a
    JSON string every quote is escaped (`\\"`), so a comma right before a bare quote is the
    separator, except at the string's own closing quote, which the search stops short of."""
    return canonical[: canonical.rfind(',"', 0, len(canonical) - 2)]


def _scope_hash(context: list[Any], embedding_model: str, language: str | None) -> str:
    items = [*context, embedding_model] if language is None else [*context, embedding_model, language]
    return hashlib.sha256(_canonical_json(items).encode("utf-8")).hexdigest()


def _context(identity: RequestIdentity) -> list[Any]:
    """Everything that decides an answer except the input, in the key's fixed order."""
    return [
        KEY_SCHEMA_VERSION,
        identity.tenant,
        identity.namespace,
        identity.model,
        identity.model_version,
        json.loads(canonical_params(identity.params)),
        normalized_text(identity.prefix),
    ]


def _canonical_json(items: list[Any]) -> str:
    return json.dumps(items, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def text_hash(text: str) -> str:
    """Hex SHA-256 of a text as embedded (NFC), the embedding cache's key."""
    return hashlib.sha256(normalized_text(text).encode("utf-8")).hexdigest()


def normalized_text(value: str | None) -> str:
    """NFC: the same characters typed with combining marks are the same request."""
    return unicodedata.normalize("NFC", value or "")


def _normalize(value: Any, where: str) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return normalized_text(value) if isinstance(value, str) else value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParams(f"{where} is {value}: NaN and infinity have no canonical form")
        # 1.0 and 1 mean the same temperature.
        return int(value) if value.is_integer() and abs(value) < 2**53 else value
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise InvalidParams(f"{where} has a non-string key {key!r}")
        return {key: _normalize(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise InvalidParams(f"{where} holds a {type(value).__name__}, which JSON cannot carry")
