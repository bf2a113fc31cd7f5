"""Failure policy: backoff delays and retry-or-dead-letter decisions.

Pure functions, no I/O.  The delays are relative; the engine adds them to the
database clock (G5: ``run_at = db_now + base * 2^(attempts-1)``, capped).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pgqueue.vocabulary.states import FAILURE_REASONS, FailureReason

__all__ = [
    "FAILURE_REASONS",
    "FailureDecision",
    "FailureReason",
    "StallAction",
    "StallDecision",
    "backoff_delay_ms",
    "decide_failure",
    "decide_stall",
]


StallAction = Literal["requeue", "retry", "dead_letter"]
"""What the reaper does with a job whose lease ended."""


def backoff_delay_ms(kind: str, base_ms: int, max_ms: int, attempt: int) -> int:
    """Delay before retry number ``attempt`` (1 = the first retry).

    ``exponential``: ``base * 2^(attempt-1)``; ``fixed``: ``base``; both capped
    at ``max_ms``.
    """
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    if kind == "fixed":
        return min(base_ms, max_ms)
    if kind != "exponential":
        raise ValueError(f"unknown backoff type {kind!r}")
    if base_ms <= 0:
        return 0
    return min(base_ms << min(attempt - 1, 64), max_ms)


@dataclass(frozen=True, slots=True)
class FailureDecision:
    """Retry after ``delay_ms``, or dead-letter with ``reason``."""

    dead_letter: bool
    reason: FailureReason | None = None
    delay_ms: int = 0


def decide_failure(
    *,
    attempts_before: int,
    max_attempts: int,
    backoff_type: str,
    backoff_ms: int,
    backoff_max_ms: int,
    unrecoverable: bool = False,
    reason: FailureReason = "explicit_fail",
) -> FailureDecision:
    """A failed attempt: retry with backoff, or dead-letter when attempts are spent.

    ``attempts_before`` is the count of failures before this one; this failure
    makes it ``attempts_before + 1``.  ``unrecoverable`` dead-letters at once.
    """
    attempts_after = attempts_before + 1
    if unrecoverable:
        return FailureDecision(True, "explicit_fail")
    if attempts_after >= max_attempts:
        final: FailureReason = "max_attempts_exceeded" if reason == "explicit_fail" else reason
        return FailureDecision(True, final)
    return FailureDecision(
        False, None, backoff_delay_ms(backoff_type, backoff_ms, backoff_max_ms, attempts_after)
    )


@dataclass(frozen=True, slots=True)
class StallDecision:
    """An expired lease: requeue (a stall), fail as a timeout, or dead-letter."""

    action: StallAction
    reason: FailureReason
    delay_ms: int = 0
    counts_attempt: bool = False
    counts_stall: bool = False


def decide_stall(
    *,
    timed_out: bool,
    stall_count: int,
    max_stalls: int,
    stall_detection: bool,
    attempts_before: int,
    max_attempts: int,
    backoff_type: str,
    backoff_ms: int,
    backoff_max_ms: int,
) -> StallDecision:
    """The reaper's rule for one job whose lease ended.

    A job past its processing ``timeout`` failed (an attempt is consumed,
    reason ``timeout``).  Otherwise the owner vanished: that is a stall; after
    ``max_stalls`` requeues, the next stall dead-letters the job (``stalled``).
    """
    if timed_out:
        failure = decide_failure(
            attempts_before=attempts_before,
            max_attempts=max_attempts,
            backoff_type=backoff_type,
            backoff_ms=backoff_ms,
            backoff_max_ms=backoff_max_ms,
            reason="timeout",
        )
        if failure.dead_letter:
            return StallDecision("dead_letter", "timeout", counts_attempt=True)
        return StallDecision("retry", "timeout", failure.delay_ms, counts_attempt=True)
    if not stall_detection:
        return StallDecision("requeue", "worker_lost")
    if stall_count + 1 > max_stalls:
        return StallDecision("dead_letter", "stalled", counts_stall=True)
    return StallDecision("requeue", "stalled", counts_stall=True)
