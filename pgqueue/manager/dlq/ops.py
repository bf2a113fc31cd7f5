"""Dead-letter queue management: list, stats, audited redrive and purge, settings.

Every redrive, purge and removal names its ``actor`` (the auth token's name,
or a service name) and may give a reason (``why``); each operation writes ONE
audit row (``pgqueue_dlq_audit``) and a ``dlq_audit`` outbox event in the
same statement as its effect, plus a ``redriven`` / ``removed`` event per
job.  Manual operations are audited even when they select nothing.

An entry whose job live jobs still wait on (a flow parent, a ``dependsOn``
job) is never deleted, as :func:`pgqueue.manager.control.jobs.remove` keeps
such a job: purge and the upkeep's ``maxAge`` / ``maxEntries`` skip it, and
removing it alone is refused with :class:`~pgqueue.errors.InvalidState`.
Redrive it (its dependents then run as planned) or remove the dependents.

    moved = await m.redrive("emails", reason="timeout", actor="ops-token", why="SMTP is back")
    page = await m.list_dlq("emails", retriable=True, limit=50)
    await m.set_dlq_config("emails", {"autoRetry": True, "maxAutoRetries": 5})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pgqueue.manager.base import ManagerBase
from pgqueue.manager.dlq import actions
from pgqueue.manager.dlq.models import DlqAuditRecord, DlqEntry, DlqStats
from pgqueue.manager.dlq.policy import DlqConfig, StallConfig

__all__ = ["DlqOps"]


class DlqOps(ManagerBase):
    """Operations on dead-lettered jobs and per-queue DLQ and stall settings."""

    async def list_dlq(
        self,
        queue: str,
        *,
        reason: str | None = None,
        older_than_ms: float | None = None,
        newer_than_ms: float | None = None,
        retriable: bool | None = None,
        expired: bool | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[DlqEntry]:
        """One page of ``queue``'s dead-letter entries, oldest first.

        ``older_than_ms`` / ``newer_than_ms`` are instants (ms since the
        epoch, like the wire's ``olderThan`` / ``newerThan``); ``retriable``
        selects entries due for an auto-retry now, ``expired`` those past
        ``maxAge``.
        """
        return await actions.list_dlq(
            self.ctx,
            queue,
            reason=reason,
            older_than_ms=older_than_ms,
            newer_than_ms=newer_than_ms,
            retriable=retriable,
            expired=expired,
            limit=limit,
            offset=offset,
        )

    async def dlq_stats(self, queue: str | None = None) -> DlqStats:
        """Entry counts by reason (every reason, zeros too), pending auto-retries,
        expired entries, oldest and newest entry; of one queue or (None) all."""
        return await actions.dlq_stats(self.ctx, queue)

    async def redrive(
        self,
        queue: str,
        *,
        actor: str,
        job_id: str | None = None,
        job_ids: Sequence[str] | None = None,
        reason: str | None = None,
        older_than_ms: float | None = None,
        newer_than_ms: float | None = None,
        retriable: bool | None = None,
        expired: bool | None = None,
        limit: int | None = None,
        why: str | None = None,
    ) -> int:
        """Send dead-lettered jobs of ``queue`` back to waiting; return how many moved.

        No selection at all redrives every entry of the queue.  One statement
        (set-based), one audit row, one ``redriven`` event per job.
        """
        return await actions.redrive(
            self.ctx,
            queue,
            actor=actor,
            job_id=job_id,
            job_ids=job_ids,
            reason=reason,
            older_than_ms=older_than_ms,
            newer_than_ms=newer_than_ms,
            retriable=retriable,
            expired=expired,
            limit=limit,
            why=why,
        )

    async def retry_job(self, job_id: str, *, actor: str, why: str | None = None) -> bool:
        """Redrive one dead-lettered job by id (whatever its queue); False if not in the DLQ.

        Raises :class:`DuplicateJob` when a live job holds the id (the entry stays).
        """
        return await actions.retry_job(self.ctx, job_id, actor=actor, why=why)

    async def purge_dlq(
        self, queue: str, *, actor: str, why: str | None = None, reason: str | None = None
    ) -> int:
        """Delete ``queue``'s dead-letter entries (of one ``reason``, if given) and their
        failed jobs, except those live jobs wait on; return how many."""
        return await actions.purge_dlq(self.ctx, queue, actor=actor, why=why, reason=reason)

    async def remove_dlq_job(
        self, queue: str, job_id: str, *, actor: str, why: str | None = None
    ) -> bool:
        """Delete one dead-letter entry and its failed job; False when there was none.

        Refused (:class:`~pgqueue.errors.InvalidState`, nothing written) while
        live jobs wait on the job."""
        return await actions.remove_dlq_job(self.ctx, queue, job_id, actor=actor, why=why)

    async def dlq_audit(self, queue: str | None = None, limit: int = 100) -> list[DlqAuditRecord]:
        """The newest audited DLQ operations (of one queue, or all), newest first."""
        return await actions.dlq_audit(self.ctx, queue, limit)

    async def get_dlq_config(self, queue: str) -> DlqConfig:
        """``queue``'s DLQ settings, defaults filled in (wire names)."""
        return await actions.get_dlq_config(self.ctx, queue)

    async def set_dlq_config(self, queue: str, config: Mapping[str, Any]) -> DlqConfig:
        """Change some of ``queue``'s DLQ settings (``autoRetry``, ``autoRetryInterval``,
        ``maxAutoRetries``, ``maxAge`` (ms or None), ``maxEntries``); others keep their
        value.  Returns the settings now in force."""
        return await actions.set_dlq_config(self.ctx, queue, config)

    async def get_stall_config(self, queue: str) -> StallConfig:
        """``queue``'s stall-detection settings, defaults filled in (wire names)."""
        return await actions.get_stall_config(self.ctx, queue)

    async def set_stall_config(self, queue: str, config: Mapping[str, Any]) -> StallConfig:
        """Change some of ``queue``'s stall settings (``enabled``, ``stallInterval``,
        ``maxStalls``, ``gracePeriod``); others keep their value."""
        return await actions.set_stall_config(self.ctx, queue, config)
