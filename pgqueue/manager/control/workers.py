"""The workers registry: who is consuming, shared by every broker.

Registrations are made by a broker for a client connection (bunqueue's
``RegisterWorker``; a client registers again after a reconnect) and removed
when the worker unregisters or its connection closes.  A worker counts as
*active* while it was seen within :data:`WORKER_TIMEOUT_MS` on the database
clock.  Registry writes are not job or queue state changes and write no
outbox event.

The dictionaries returned use bunqueue's wire names (``workerId``,
``registeredAt`` in ms, ``processedJobs`` ...), as ``RegisterWorker`` and
``ListWorkers`` answer them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pgqueue.db.executor import Row
from pgqueue.db.queries import Q
from pgqueue.errors import ValidationError
from pgqueue.ids import uuid7
from pgqueue.manager.arguments import INT4_MAX, check_int, check_text
from pgqueue.manager.context import EngineContext
from pgqueue.manager.rows import ms
from pgqueue.vocabulary.names import validate_job_id, validate_job_name, validate_queue_name

__all__ = [
    "MAX_LISTED_WORKERS",
    "WORKER_TIMEOUT_MS",
    "list_workers",
    "register_worker",
    "unregister_client_workers",
    "unregister_worker",
    "worker_heartbeat",
]

WORKER_TIMEOUT_MS = 30_000
MAX_LISTED_WORKERS = 10_000
MAX_WORKER_QUEUES = 1_000
_COUNTER_LIMIT = 2**62
WORKER_NOT_FOUND = "Worker not found"


def _worker_dict(row: Row, *, active: bool | None = None) -> dict[str, Any]:
    registered = ms(row["registered_at"]) or 0.0
    last_seen = ms(row["last_seen"]) or 0.0
    now = ms(row["now"]) or 0.0
    alive = active if active is not None else True
    return {
        "workerId": row["worker_id"],
        "name": row["name"],
        "queues": list(row["queues"]),
        "concurrency": row["concurrency"],
        "hostname": row["hostname"],
        "pid": row["pid"],
        "status": "active" if alive else "stale",
        "registeredAt": registered,
        "lastSeen": last_seen,
        "activeJobs": row["active_jobs"],
        "processedJobs": int(row["processed"]),
        "failedJobs": int(row["failed"]),
        "currentJob": None,
        "brokerId": row["broker_id"],
        "clientId": row["client_id"],
        "uptime": max(now - registered, 0.0),
        "active": alive,
    }


def _optional_count(value: int | None, field: str, limit: int = _COUNTER_LIMIT) -> int | None:
    return None if value is None else check_int(value, field, 0, limit)


async def register_worker(
    ctx: EngineContext,
    worker_id: str | None,
    name: str,
    queues: Sequence[str],
    concurrency: int = 1,
    hostname: str | None = None,
    pid: int | None = None,
    client_id: str | None = None,
) -> dict[str, Any]:
    """Register (or refresh) a worker for this broker; ``worker_id=None`` makes a new id."""
    wid = uuid7() if worker_id is None else validate_job_id(worker_id, "workerId")
    validate_job_name(name, "name")
    if isinstance(queues, str) or not isinstance(queues, Sequence):
        raise ValidationError("queues must be a list of queue names", field="queues")
    if len(queues) > MAX_WORKER_QUEUES:
        raise ValidationError(f"queues must hold at most {MAX_WORKER_QUEUES} names", field="queues")
    names = [validate_queue_name(queue, "queues") for queue in queues]
    slots = check_int(concurrency, "concurrency", 1, 100_000)
    if hostname is not None:
        check_text(hostname, "hostname", 256)
    process = None if pid is None else check_int(pid, "pid", 0, 2**31 - 1)
    if client_id is not None:
        check_text(client_id, "clientId", 256, allow_empty=False)
    ctx.session.check()
    row = await ctx.scoped.fetchrow(
        Q.worker_register,
        worker_id=wid,
        name=name,
        queues=list(dict.fromkeys(names)),
        slots=slots,
        hostname=hostname,
        process=process,
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
        client_id=client_id,
    )
    assert row is not None
    return _worker_dict(row)


async def worker_heartbeat(
    ctx: EngineContext,
    worker_id: str,
    active_jobs: int | None = None,
    processed: int | None = None,
    failed: int | None = None,
) -> None:
    """A worker is alive, with its own counters when given."""
    validate_job_id(worker_id, "id")
    row = await ctx.scoped.fetchrow(
        Q.worker_heartbeat,
        worker_id=worker_id,
        active_jobs=_optional_count(active_jobs, "activeJobs", INT4_MAX),
        processed=_optional_count(processed, "processed"),
        failed=_optional_count(failed, "failed"),
    )
    if row is None:
        raise ValidationError(WORKER_NOT_FOUND, field="id")


async def unregister_worker(ctx: EngineContext, worker_id: str) -> bool:
    """Remove a worker; False when it was not registered."""
    validate_job_id(worker_id, "workerId")
    return await ctx.scoped.fetchrow(Q.worker_unregister, worker_id=worker_id) is not None


async def unregister_client_workers(ctx: EngineContext, client_id: str) -> int:
    """Remove the workers one client connection of this broker registered."""
    check_text(client_id, "clientId", 256, allow_empty=False)
    return int(
        await ctx.scoped.fetchval(
            Q.worker_unregister_client, broker_id=ctx.broker_id, client_id=client_id
        )
    )


async def list_workers(
    ctx: EngineContext, now: datetime | None = None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Registered workers (oldest first, with ``uptime`` and ``active``) and totals.

    Totals follow bunqueue: ``total``, ``active`` (seen within 30 s of ``now``;
    None: the database clock, tests move time with it),
    ``totalProcessed``, ``totalFailed``, ``activeJobs`` and ``concurrencySlots``
    (of the active workers).
    """
    rows = await ctx.scoped.fetch(
        Q.worker_list, worker_timeout_ms=WORKER_TIMEOUT_MS, limit=MAX_LISTED_WORKERS, now=now
    )
    workers = [_worker_dict(row, active=bool(row["active"])) for row in rows]
    stats = {
        "total": len(workers),
        "active": sum(1 for w in workers if w["active"]),
        "totalProcessed": sum(w["processedJobs"] for w in workers),
        "totalFailed": sum(w["failedJobs"] for w in workers),
        "activeJobs": sum(w["activeJobs"] for w in workers),
        "concurrencySlots": sum(w["concurrency"] for w in workers if w["active"]),
    }
    return workers, stats
