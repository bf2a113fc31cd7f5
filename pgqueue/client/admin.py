"""``Admin``: the operator's view of a namespace, on either transport.

    admin = Admin("pgqueue://127.0.0.1:6789")          # or postgresql://...
    for name in await admin.get_queues():
        print(name, await admin.get_queue_overview(name))
    print(await admin.get_brokers())

What belongs to no single queue: the queues themselves, a job looked up by id
alone, the registered workers, the broker sessions (leader, draining), the
DLQ statistics and audit of every queue.  Per-queue operations stay on
:class:`~pgqueue.client.Queue` (``admin.queue(name)`` builds one sharing this
transport).  The ``pgqueue`` command line is built on it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pgqueue.client._shared import TransportOwner
from pgqueue.client.job import Job
from pgqueue.client.queue import Queue
from pgqueue.client.schedulers import JobScheduler
from pgqueue.client.transport import Transport
from pgqueue.manager.cron.spec import check_scheduler_name
from pgqueue.vocabulary.names import validate_job_id, validate_queue_name

__all__ = ["Admin", "QueueOverview"]

QueueOverview = dict[str, Any]
"""``{name, paused, counts: {waiting, prioritized, delayed, active, completed, failed,
waiting-children}, dlq}``."""

OVERVIEW_CONCURRENCY = 8


class Admin(TransportOwner):
    """Namespace-wide reads and the lookups the command line needs."""

    def __init__(self, connection: str | Transport, **transport_options: Any) -> None:
        super().__init__(connection, transport_options)
        self._queues: list[Queue] = []

    async def close(self) -> None:
        queues, self._queues = self._queues, []
        for queue in queues:
            await queue.close()
        await self.close_transport()

    async def queue(self, name: str) -> Queue:
        """A :class:`Queue` on this admin's transport (closed with it)."""
        queue = Queue(validate_queue_name(name), await self.transport())
        self._queues.append(queue)
        return queue

    async def get_queues(self) -> list[str]:
        """Every queue of the namespace that has jobs, settings or DLQ entries."""
        return sorted(await (await self.transport()).list_queues())

    async def get_queue_overview(self, name: str) -> QueueOverview:
        """One queue's counts per state, whether it is paused, its DLQ size."""
        transport = await self.transport()
        validate_queue_name(name)
        counts, stats = await asyncio.gather(
            transport.get_counts(name), transport.get_dlq_stats(name)
        )
        paused = bool(counts.pop("paused", 0))
        return {"name": name, "paused": paused, "counts": counts, "dlq": int(stats["total"])}

    async def get_overview(self) -> list[QueueOverview]:
        """:meth:`get_queue_overview` of every queue, by name."""
        names = await self.get_queues()
        gate = asyncio.Semaphore(OVERVIEW_CONCURRENCY)

        async def one(name: str) -> QueueOverview:
            async with gate:
                return await self.get_queue_overview(name)

        return list(await asyncio.gather(*(one(name) for name in names)))

    async def get_job(self, job_id: str) -> Job | None:
        """The job with this id, whatever its queue (None when no job has it)."""
        transport = await self.transport()
        raw = await transport.get_job(validate_job_id(job_id, "job_id"))
        return None if raw is None else Job.from_wire(transport, raw)

    async def get_job_logs(self, job_id: str) -> list[dict[str, Any]]:
        """Every log line of the job (``{message, level, timestamp}``), oldest first."""
        transport = await self.transport()
        return await transport.get_logs(validate_job_id(job_id, "job_id"), 0, -1)

    async def retry_job(self, job_id: str) -> None:
        """Send a failed (dead-lettered) job back to waiting."""
        await (await self.transport()).retry_job(validate_job_id(job_id, "job_id"))

    async def get_workers(self) -> list[dict[str, Any]]:
        """Registered workers of the namespace (any queue)."""
        return await (await self.transport()).list_workers()

    async def get_webhooks(self) -> list[dict[str, Any]]:
        """Registered webhooks of the namespace (any queue), oldest first."""
        return await (await self.transport()).list_webhooks()

    async def get_brokers(self) -> list[dict[str, Any]]:
        """Broker sessions: process, heartbeat, live, draining, leader."""
        return await (await self.transport()).list_brokers()

    async def get_dlq_stats(self) -> dict[str, Any]:
        """DLQ statistics of every queue together (``byQueue`` splits them)."""
        return await (await self.transport()).get_dlq_stats(None)

    async def get_alert_figures(self, queue: str | None = None) -> list[dict[str, Any]]:
        """The figures an operator alerts on, per queue (one, or every queue): the age
        of the oldest waiting job and of the oldest in retry, the DLQ by reason, active
        jobs against the concurrency limit, worker slots busy against registered."""
        return await (await self.transport()).alert_figures(queue)

    async def get_dlq_audit(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest audited DLQ operations of every queue, newest first."""
        return await (await self.transport()).get_dlq_audit(None, limit)

    async def get_schedulers(self, queue: str | None = None) -> list[JobScheduler]:
        """Cron schedulers of the namespace (of ``queue``), by name."""
        if queue is not None:
            validate_queue_name(queue)
        crons = await (await self.transport()).list_schedulers(queue)
        return [JobScheduler.from_wire(c) for c in crons]

    async def get_scheduler(self, name: str) -> JobScheduler | None:
        """The scheduler ``name`` (any queue), or None."""
        cron = await (await self.transport()).get_scheduler(check_scheduler_name(name))
        return None if cron is None else JobScheduler.from_wire(cron)

    async def remove_scheduler(self, name: str) -> bool:
        """Remove scheduler ``name``; False when unknown."""
        return await (await self.transport()).remove_scheduler(check_scheduler_name(name))
