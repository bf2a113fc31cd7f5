"""Failure policy: backoff delays, retry or dead-letter, and the reaper's stall rule (G5, G6)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pgqueue.manager.policy import (
    FailureDecision,
    StallDecision,
    backoff_delay_ms,
    decide_failure,
    decide_stall,
)

HOUR = 3_600_000


def test_exponential_backoff_doubles_from_the_base() -> None:
    delays = [backoff_delay_ms("exponential", 1000, HOUR, attempt) for attempt in range(1, 6)]
    assert delays == [1000, 2000, 4000, 8000, 16000]


def test_exponential_backoff_stops_at_the_cap() -> None:
    assert backoff_delay_ms("exponential", 1000, 5000, 3) == 4000
    assert backoff_delay_ms("exponential", 1000, 5000, 4) == 5000
    assert backoff_delay_ms("exponential", 1000, 5000, 30) == 5000


@pytest.mark.parametrize("attempt", [64, 65, 1000, 10**9, 2**63])
def test_a_huge_attempt_number_gives_the_cap_not_an_overflow(attempt: int) -> None:
    assert backoff_delay_ms("exponential", 1, HOUR, attempt) == HOUR
    assert backoff_delay_ms("exponential", 86_400_000, 86_400_000, attempt) == 86_400_000


def test_fixed_backoff_is_the_base_every_time_and_capped() -> None:
    assert [backoff_delay_ms("fixed", 700, HOUR, a) for a in (1, 2, 50)] == [700, 700, 700]
    assert backoff_delay_ms("fixed", 7000, 5000, 1) == 5000


def test_a_zero_base_means_retry_at_once() -> None:
    assert backoff_delay_ms("exponential", 0, HOUR, 10) == 0
    assert backoff_delay_ms("fixed", 0, HOUR, 10) == 0


def test_backoff_refuses_an_attempt_below_one_and_an_unknown_type() -> None:
    with pytest.raises(ValueError, match="attempt counts from 1"):
        backoff_delay_ms("exponential", 1000, HOUR, 0)
    with pytest.raises(ValueError, match="unknown backoff type 'linear'"):
        backoff_delay_ms("linear", 1000, HOUR, 1)


@given(
    base=st.integers(0, 86_400_000),
    cap=st.integers(0, 86_400_000),
    attempt=st.integers(1, 10_000),
)
def test_exponential_backoff_is_monotonic_and_never_exceeds_the_cap(
    base: int, cap: int, attempt: int
) -> None:
    delay = backoff_delay_ms("exponential", base, cap, attempt)
    assert 0 <= delay <= cap
    assert delay <= backoff_delay_ms("exponential", base, cap, attempt + 1)
    assert delay == min(base * 2 ** min(attempt - 1, 64), cap)


FAILURE: dict[str, Any] = {
    "backoff_type": "exponential",
    "backoff_ms": 1000,
    "backoff_max_ms": HOUR,
}


def test_a_failure_with_attempts_left_retries_after_the_backoff_of_that_attempt() -> None:
    assert decide_failure(attempts_before=0, max_attempts=3, **FAILURE) == FailureDecision(
        False, None, 1000
    )
    assert decide_failure(attempts_before=1, max_attempts=3, **FAILURE) == FailureDecision(
        False, None, 2000
    )


def test_the_last_allowed_failure_dead_letters_with_max_attempts_exceeded() -> None:
    assert decide_failure(attempts_before=2, max_attempts=3, **FAILURE) == FailureDecision(
        True, "max_attempts_exceeded"
    )
    assert decide_failure(attempts_before=0, max_attempts=1, **FAILURE).dead_letter


def test_the_final_failure_keeps_a_specific_reason() -> None:
    decision = decide_failure(attempts_before=2, max_attempts=3, reason="timeout", **FAILURE)
    assert decision == FailureDecision(True, "timeout")


def test_an_unrecoverable_failure_dead_letters_at_once() -> None:
    decision = decide_failure(attempts_before=0, max_attempts=100, unrecoverable=True, **FAILURE)
    assert decision == FailureDecision(True, "explicit_fail")


def test_fixed_backoff_reaches_the_failure_decision() -> None:
    decision = decide_failure(
        attempts_before=5,
        max_attempts=10,
        backoff_type="fixed",
        backoff_ms=250,
        backoff_max_ms=HOUR,
    )
    assert decision == FailureDecision(False, None, 250)


def stall(**overrides: Any) -> StallDecision:
    args: dict[str, Any] = {
        "timed_out": False,
        "stall_count": 0,
        "max_stalls": 3,
        "stall_detection": True,
        "attempts_before": 0,
        "max_attempts": 3,
        **FAILURE,
    }
    args.update(overrides)
    return decide_stall(**args)


def test_a_lost_owner_is_a_stall_and_requeues_without_using_an_attempt() -> None:
    assert stall() == StallDecision("requeue", "stalled", counts_stall=True)


def test_max_stalls_requeues_are_allowed_and_the_next_stall_dead_letters() -> None:
    assert [stall(stall_count=n).action for n in range(4)] == [
        "requeue",
        "requeue",
        "requeue",
        "dead_letter",
    ]
    assert stall(stall_count=3) == StallDecision("dead_letter", "stalled", counts_stall=True)
    assert stall(stall_count=0, max_stalls=1).action == "requeue"
    assert stall(stall_count=1, max_stalls=1).action == "dead_letter"


def test_a_timed_out_job_failed_an_attempt_and_retries_with_backoff() -> None:
    decision = stall(timed_out=True, attempts_before=1, stall_count=99)
    assert decision == StallDecision("retry", "timeout", 2000, counts_attempt=True)


def test_a_timed_out_job_on_its_last_attempt_dead_letters_as_timeout() -> None:
    decision = stall(timed_out=True, attempts_before=2)
    assert decision == StallDecision("dead_letter", "timeout", counts_attempt=True)


def test_a_timeout_is_detected_even_with_stall_detection_off() -> None:
    assert stall(timed_out=True, stall_detection=False).reason == "timeout"


def test_with_stall_detection_off_a_lost_owner_requeues_without_counting() -> None:
    decision = stall(stall_detection=False, stall_count=1000)
    assert decision == StallDecision("requeue", "worker_lost")
    assert not decision.counts_stall and not decision.counts_attempt
