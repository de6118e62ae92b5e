"""What every backend takes and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ModelCall:
    prefix: str
    input: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallResult:
    """A post-processed answer (a JSON-ready dict) or the error that prevented it."""

    answer: dict[str, Any] | None
    error: str | None = None


class Backend(Protocol):
    def token_count(self, call: ModelCall) -> int:
        """Tokens the call will occupy on the device (prompt plus generation). A backend
        that generates also says how many of them it generates, `generation_tokens(call)`
        (optional: without it the batcher reads the whole count as prompt), and a backend
        that cannot run some calls at all says why in `refusal(call)` (optional: a message,
        or None), so that they stay out of every batch."""

    def run_batch(self, calls: list[ModelCall]) -> list[CallResult]:
        """Run one batch; raise only for a failure of the whole batch (e.g. out of memory)."""
