"""What the DLQ operations hand back: entries, statistics, audit records.

Times are milliseconds since the epoch on the database clock.  ``as_dict``
gives the wire's camelCase shape (``DlqEntry`` without its ``job``, which the
caller encodes as it encodes any job).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pgqueue.db.records import record_as_wire
from pgqueue.manager.models import Job

__all__ = ["DlqAuditRecord", "DlqEntry", "DlqStats", "RedriveResult"]


@dataclass(frozen=True, slots=True)
class DlqEntry:
    """One dead-lettered job and its DLQ metadata.

    ``attempts`` is the job's attempt history (``attempt, startedAt,
    failedAt, reason, error, duration`` each).  ``retry_count`` counts the
    auto-retries of the current chain; ``next_retry_at`` is the next one
    under the queue's current config (``None``: none scheduled);
    ``expires_at`` is ``entered_at + maxAge`` (``None``: never).
    """

    job: Job
    entered_at: float
    reason: str
    error: str | None
    attempts: list[dict[str, Any]]
    retry_count: int
    last_retry_at: float | None
    next_retry_at: float | None
    expires_at: float | None

    def as_dict(self) -> dict[str, Any]:
        return record_as_wire(self, omit=("job",))


@dataclass(frozen=True, slots=True)
class DlqStats:
    """Counts of DLQ entries; ``by_reason`` names every reason, zeros included."""

    total: int
    by_reason: dict[str, int]
    by_queue: dict[str, int]
    pending_retry: int
    expired: int
    oldest_entry: float | None
    newest_entry: float | None

    def as_dict(self) -> dict[str, Any]:
        return record_as_wire(self, by_reason=dict(self.by_reason), by_queue=dict(self.by_queue))


@dataclass(frozen=True, slots=True)
class DlqAuditRecord:
    """One audited DLQ operation: who, when, what, which jobs, why.

    ``action`` is ``redrive``, ``purge``, ``remove``, ``auto_retry`` or
    ``expire``; ``filter`` is the selection as asked (wire names); ``reason``
    the operator's text.
    """

    id: int
    at: float
    actor: str
    action: str
    queue: str | None
    job_ids: list[str]
    filter: dict[str, Any] | None
    reason: str | None
    count: int

    def as_dict(self) -> dict[str, Any]:
        return record_as_wire(self, job_ids=list(self.job_ids))


@dataclass(frozen=True, slots=True)
class RedriveResult:
    """The jobs one operation moved or deleted, and its audit row id (if any).

    ``skipped``: entries a redrive left in the DLQ because a live job holds
    their id (their neighbours moved; the ``dlq_audit`` event lists them too).
    """

    job_ids: list[str]
    audit_id: int | None
    skipped: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.job_ids)
