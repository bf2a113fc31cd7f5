"""The names of job states and of failure reasons, declared once.

The engine reports them, the DLQ keeps them (the CHECK of ``pgqueue_dlq``),
the SDK counts them and the CLI offers them as choices: all read them here.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = ["FAILURE_REASONS", "JOB_STATES", "FailureReason"]

JOB_STATES: Final = (
    "waiting",
    "prioritized",
    "delayed",
    "active",
    "waiting-children",
    "completed",
    "failed",
)
"""Every state a job is reported in, in bunqueue's count order."""

FailureReason = Literal[
    "explicit_fail",
    "max_attempts_exceeded",
    "timeout",
    "stalled",
    "ttl_expired",
    "worker_lost",
    "unknown",
    "dependency_failed",
]
"""Why a job failed or was dead-lettered (``failed_reason``; the CHECK of ``pgqueue_dlq``)."""

FAILURE_REASONS: Final[tuple[FailureReason, ...]] = get_args(FailureReason)
"""Every :data:`FailureReason`, wire order first: the reasons a DLQ entry can carry."""
