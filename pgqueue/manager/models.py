"""What the engine hands back: jobs, claims, counts and per-item outcomes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pgqueue.db.records import record_as_wire
from pgqueue.errors import PgQueueError
from pgqueue.manager.rows import ClaimedJob
from pgqueue.vocabulary.completions import AckItem
from pgqueue.vocabulary.job_record import Job
from pgqueue.vocabulary.states import JOB_STATES

__all__ = [
    "JOB_STATES",
    "AckItem",
    "ClaimedJob",
    "ItemOutcome",
    "Job",
    "JobCounts",
    "OutcomeReason",
]


@dataclass(frozen=True, slots=True)
class JobCounts:
    """Jobs per reported state in one queue (``paused`` is 1 when the queue is paused)."""

    waiting: int = 0
    prioritized: int = 0
    delayed: int = 0
    active: int = 0
    waiting_children: int = 0
    completed: int = 0
    failed: int = 0
    paused: bool = False

    def as_dict(self) -> dict[str, int]:
        """The counts by bunqueue's state names (``waiting-children``), ``paused`` apart."""
        return record_as_wire(self, omit=("paused",), names=_BUNQUEUE_STATE)


_BUNQUEUE_STATE = {"waiting_children": "waiting-children"}


OutcomeReason = Literal["already-finalized", "lease-lost", "not-found", "cancelled"]
"""Why an item of a batch was not applied (:attr:`ItemOutcome.reason`)."""


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """What happened to one item of a batch.

    ``applied`` is true when the transition happened.  Otherwise ``reason`` says
    why: ``already-finalized`` (the job is completed or failed),
    ``lease-lost`` (stale token, fence or lease), ``not-found``; a lease
    renewal also says ``cancelled`` (the job was cancelled while active).

    ``error`` is set when this item was not decided although others of its
    batch were (G1): the error that stopped it, an
    :class:`~pgqueue.errors.IndeterminateCommit` when it may have applied.
    """

    job_id: str
    applied: bool
    reason: OutcomeReason | None = None
    error: PgQueueError | None = None
