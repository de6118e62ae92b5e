"""Batching misses for a backend: prefix ordering, a token budget, out-of-memory back-off.

Device time is measured per batch and shared among its calls by token count, so
every answer carries the device seconds it cost; an attempt that failed (out of memory,
or an error that had to be isolated) is device time spent too, charged to the calls it held.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from inference.base import Backend, CallResult, ModelCall

DEFAULT_MAX_BATCH_TOKENS = 8192
DEFAULT_MAX_BATCH_SIZE = 64

# The clock device time is read from (a test steps its own).
_clock = time.perf_counter


@dataclass(frozen=True)
class TimedResult:
    result: CallResult
    device_seconds: float
    # The run that returned the result, counted from 0 in the order runs happen (a batch
    # halved after running out of memory is two runs); -1: the call never ran.
    batch_index: int


def plan_batches(
    token_counts: list[int],
    prefixes: list[str],
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
    generation_tokens: list[int] | None = None,
) -> list[list[int]]:
    """Group call indices into batches under the token budget.

    `token_counts` are each call's prompt plus generation, `generation_tokens` the
    generation part (none: a backend that generates nothing). Calls are ordered by
    prefix, then by generation length, then by length, so a batch shares its prefix and
    pads little. A padded batch costs (its longest prompt + its longest generation) times
    its size: every row is padded to the longest prompt and generates as long as the row
    that asks for most (pricing it by the longest call alone let a batch mixing a long
    prompt with a long generation take nearly twice the budget).
    """
    generated = generation_tokens or [0] * len(token_counts)
    prompts = [count - new for count, new in zip(token_counts, generated, strict=True)]
    order = sorted(range(len(token_counts)), key=lambda i: (prefixes[i], generated[i], token_counts[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    longest_prompt = longest_generation = 0
    for i in order:
        prompt_if_added = max(longest_prompt, prompts[i])
        generation_if_added = max(longest_generation, generated[i])
        if current and (
            len(current) >= max_batch_size
            or (prompt_if_added + generation_if_added) * (len(current) + 1) > max_batch_tokens
        ):
            batches.append(current)
            current, prompt_if_added, generation_if_added = [], prompts[i], generated[i]
        current.append(i)
        longest_prompt, longest_generation = prompt_if_added, generation_if_added
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
    token_counts, generated = [0] * len(calls), [0] * len(calls)
    generation_tokens = getattr(backend, "generation_tokens", None)
    refusal = getattr(backend, "refusal", None)
    outcomes: list[TimedResult | None] = [None] * len(calls)
    for i, call in enumerate(calls):
        try:
            count = backend.token_count(call)
            new = generation_tokens(call) if generation_tokens else 0
            refused = refusal(call) if refusal else None
        except Exception as error:  # noqa: BLE001 - a bad input must not stop the batch
            outcomes[i] = TimedResult(CallResult(None, f"tokenization failed: {error}"), 0.0, -1)
            continue
        if refused is not None:
            # Never in a batch: it costs nothing, nor takes a share of an attempt that fails.
            outcomes[i] = TimedResult(CallResult(None, refused), 0.0, -1)
            continue
        token_counts[i], generated[i] = count, new
    pending = [i for i in range(len(calls)) if outcomes[i] is None]
    plan = plan_batches(
        [token_counts[i] for i in pending],
        [calls[i].prefix for i in pending],
        max_batch_tokens,
        max_batch_size,
        [generated[i] for i in pending],
    )
    runs = itertools.count()
    for batch in plan:
        members = [pending[j] for j in batch]
        for i, timed in zip(
            members, _run_with_backoff(backend, calls, members, token_counts, runs), strict=True
        ):
            outcomes[i] = timed
    return outcomes  # type: ignore[return-value]  # every slot is filled above


def _run_with_backoff(
    backend: Backend,
    calls: list[ModelCall],
    members: list[int],
    token_counts: list[int],
    runs: Iterator[int],
) -> list[TimedResult]:
    """Run a batch; on out-of-memory halve it and retry, on another error isolate the culprit."""
    started = _clock()
    out_of_memory, error_message = False, None
    try:
        results = backend.run_batch([calls[i] for i in members])
    except torch.OutOfMemoryError:
        out_of_memory = True
    except Exception as error:  # noqa: BLE001 - isolate which call failed
        error_message = f"{type(error).__name__}: {error}"
    if not out_of_memory and error_message is None:
        return _shared(_device_elapsed(started), members, results, token_counts, next(runs))
    # Not synchronized: after a device error the wait could raise again.
    elapsed = _clock() - started
    # Retried here, past the except clauses: inside one, the exception's traceback still
    # holds the failed attempt's frames, and with them its tensors on the device, so every
    # retry would run beside the memory that made the first attempt fail.
    if len(members) == 1:
        message = "out of device memory even alone" if out_of_memory else error_message
        retried = [TimedResult(CallResult(None, message), 0.0, next(runs))]
    elif out_of_memory:
        _release_device_memory()
        half = len(members) // 2
        retried = _run_with_backoff(backend, calls, members[:half], token_counts, runs)
        retried += _run_with_backoff(backend, calls, members[half:], token_counts, runs)
    else:
        retried = [
            timed for i in members for timed in _run_with_backoff(backend, calls, [i], token_counts, runs)
        ]
    # The failed attempt ran on the device as well: its time goes to the calls it held.
    failed_share = _by_tokens(elapsed, members, token_counts)
    return [
        dataclasses.replace(timed, device_seconds=timed.device_seconds + share)
        for timed, share in zip(retried, failed_share, strict=True)
    ]


def _shared(
    elapsed: float, members: list[int], results: list[CallResult], token_counts: list[int], batch_index: int
) -> list[TimedResult]:
    """A batch's time shared among the calls that ran: a call the backend refused without
    computing it (over the model's context) costs nothing, where sharing by tokens gave it
    the largest share. A batch where none ran shares its time among all."""
    ran = [i for i, result in zip(members, results, strict=True) if result.answer is not None]
    shares = dict(zip(ran or members, _by_tokens(elapsed, ran or members, token_counts), strict=True))
    return [
        TimedResult(result, shares.get(i, 0.0), batch_index)
        for i, result in zip(members, results, strict=True)
    ]


def _by_tokens(elapsed: float, members: list[int], token_counts: list[int]) -> list[float]:
    tokens = sum(token_counts[i] or 1 for i in members)
    return [elapsed * (token_counts[i] or 1) / tokens for i in members]


def _device_elapsed(started: float) -> float:
    # Kernels run asynchronously on an accelerator: wait for them before reading the clock.
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return _clock() - started


def _release_device_memory() -> None:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
