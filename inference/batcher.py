"""Batching misses for a backend: prefix ordering, a token budget, out-of-memory back-off.

Device time is measured per batch and shared among its calls by token count, so
every answer carries the device seconds it cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from inference.base import Backend, CallResult, ModelCall

DEFAULT_MAX_BATCH_TOKENS = 8192
DEFAULT_MAX_BATCH_SIZE = 64


@dataclass(frozen=True)
class TimedResult:
    result: CallResult
    device_seconds: float
    batch_index: int


def plan_batches(
    token_counts: list[int],
    prefixes: list[str],
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
) -> list[list[int]]:
    """Group call indices into batches under the token budget.

    Calls are ordered by prefix, then by length, so a batch shares its prefix and
    pads little. A padded batch costs its longest call times its size.
    """
    order = sorted(range(len(token_counts)), key=lambda i: (prefixes[i], token_counts[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        longest_if_added = max(longest, token_counts[i])
        if current and (
            len(current) >= max_batch_size or longest_if_added * (len(current) + 1) > max_batch_tokens
        ):
            batches.append(current)
            current, longest_if_added = [], token_counts[i]
        current.append(i)
        longest = longest_if_added
    if current:
        batches.append(current)
    return batches


def run_calls(
    backend: Backend,
    calls: list[ModelCall],
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
) -> list[TimedResult]:
    """Run every call, in planned batches; one call's failure never fails the others."""
    token_counts = []
    outcomes: list[TimedResult | None] = [None] * len(calls)
    for i, call in enumerate(calls):
        try:
            token_counts.append(backend.token_count(call))
        except Exception as error:  # noqa: BLE001 - a bad input must not stop the batch
            token_counts.append(0)
            outcomes[i] = TimedResult(CallResult(None, f"tokenization failed: {error}"), 0.0, -1)
    pending = [i for i in range(len(calls)) if outcomes[i] is None]
    plan = plan_batches(
        [token_counts[i] for i in pending],
        [calls[i].prefix for i in pending],
        max_batch_tokens,
        max_batch_size,
    )
    for batch_index, batch in enumerate(plan):
        members = [pending[j] for j in batch]
        for i, timed in zip(
            members,
            _run_with_backoff(backend, calls, members, token_counts, batch_index),
            strict=True,
        ):
            outcomes[i] = timed
    return outcomes  # type: ignore[return-value]  # every slot is filled above


def _run_with_backoff(
    backend: Backend,
    calls: list[ModelCall],
    members: list[int],
    token_counts: list[int],
    batch_index: int,
) -> list[TimedResult]:
    """Run a batch; on out-of-memory halve it and retry, on another error isolate the culprit."""
    started = time.perf_counter()
    try:
        results = backend.run_batch([calls[i] for i in members])
    except torch.OutOfMemoryError:
        if len(members) == 1:
            return [TimedResult(CallResult(None, "out of device memory even alone"), 0.0, batch_index)]
        _release_device_memory()
        half = len(members) // 2
        return _run_with_backoff(backend, calls, members[:half], token_counts, batch_index) + (
            _run_with_backoff(backend, calls, members[half:], token_counts, batch_index)
        )
    except Exception as error:  # noqa: BLE001 - isolate which call failed
        if len(members) == 1:
            message = f"{type(error).__name__}: {error}"
            return [TimedResult(CallResult(None, message), 0.0, batch_index)]
        return [
            timed
            for i in members
            for timed in _run_with_backoff(backend, calls, [i], token_counts, batch_index)
        ]
    elapsed = _device_elapsed(started)
    tokens = sum(token_counts[i] for i in members) or len(members)
    return [
        TimedResult(result, elapsed * (token_counts[i] or 1) / tokens, batch_index)
        for i, result in zip(members, results, strict=True)
    ]


def _device_elapsed(started: float) -> float:
    # Kernels run asynchronously on an accelerator: wait for them before reading the clock.
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - started


def _release_device_memory() -> None:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
