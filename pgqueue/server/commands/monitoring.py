"""Monitoring: Stats, Metrics (legacy and per-queue forms), Prometheus.

* ``Stats`` → ``{stats: {waiting, active, delayed, dlq, completed, failed, uptime,
  pushPerSec, pullPerSec}}``: job counts of the whole namespace, read from
  PostgreSQL (``waiting`` excludes prioritized jobs, as in bunqueue's
  PostgreSQL mode); ``dlq`` counts DLQ entries; ``uptime`` is this broker's,
  in ms.  bunqueue's PostgreSQL-mode keys are added: ``prioritized``,
  ``waiting-children`` (also as pgqueue's older ``waitingChildren``),
  ``totalPushed`` ... ``totalFailed`` (as ``Metrics`` counts them), ``cronJobs``
  (the cron table's schedules, 0 without one), ``completePerSec`` and
  ``failPerSec``.  The rates are the namespace's admissions / claims /
  completions / failed attempts per second over the last 10 s, counted from
  the outbox events this broker follows (so every broker reports the same
  cluster-wide rate).
* ``Metrics`` without ``queue`` → ``{metrics: {totalPushed, totalPulled,
  totalCompleted, totalFailed, avgLatencyMs, avgProcessingMs, memoryUsageMb,
  sqliteSizeMb, activeConnections}}``.  The totals count the jobs PostgreSQL
  holds now (live and finished, within retention), not a lifetime tally:
  pushed = every job, pulled = active + finished.  Latencies are this
  broker's mean PUSH/PULL and ACK service times (0 until metrics are on).
* ``Metrics {queue, type, start?, end?}`` → ``D{meta: {count, prevTS,
  prevCount}, data, count}``, BullMQ's ``getMetrics`` shape: ``data`` is the
  queue's completed (or failed) jobs per minute, newest minute first, over the
  last week (``start``..``end`` inclusive, ``end`` -1 = to the oldest);
  ``count`` is the length of the whole series; ``meta.count`` the finished
  jobs retention keeps; ``prevTS`` the start of the current minute.
* ``Prometheus`` → ``D{metrics: <text exposition>}``: this broker's
  registry, as ``GET /metrics`` serves it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pgqueue.errors import ValidationError
from pgqueue.manager.models import JobCounts
from pgqueue.server import overview
from pgqueue.server.metrics import BrokerMetrics
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request

if TYPE_CHECKING:
    from pgqueue.runtime import PostgresQueueManager
    from pgqueue.server.host import BrokerHost

group = CommandGroup()
command = group.command

COUNT_CONCURRENCY = 4
LATENCY_COMMANDS = ("PUSH", "PUSHB", "PULL", "PULLB")
PROCESSING_COMMANDS = ("ACK", "ACKB")
MAX_SERIES_POSITION = 1_000_000_000


async def _namespace_counts(manager: PostgresQueueManager) -> JobCounts:
    """Job counts of every queue of the namespace, summed."""
    queues = await manager.list_queues()
    slots = asyncio.Semaphore(COUNT_CONCURRENCY)

    async def one(queue: str) -> JobCounts:
        async with slots:
            return await manager.get_counts(queue)

    per_queue = await asyncio.gather(*(one(queue) for queue in queues))
    return JobCounts(
        waiting=sum(c.waiting for c in per_queue),
        prioritized=sum(c.prioritized for c in per_queue),
        delayed=sum(c.delayed for c in per_queue),
        active=sum(c.active for c in per_queue),
        waiting_children=sum(c.waiting_children for c in per_queue),
        completed=sum(c.completed for c in per_queue),
        failed=sum(c.failed for c in per_queue),
    )


@command("Stats")
async def stats(req: Request) -> dict[str, Any]:
    counts, dlq, crons = await asyncio.gather(
        _namespace_counts(req.manager), req.manager.dlq_stats(None), overview.cron_count(req.broker)
    )
    totals = {**counts.as_dict(), "dlq": dlq.total}
    return {
        "stats": {
            "waiting": counts.waiting,
            "prioritized": counts.prioritized,
            "waitingChildren": counts.waiting_children,
            "waiting-children": counts.waiting_children,
            "active": counts.active,
            "delayed": counts.delayed,
            "dlq": dlq.total,
            "completed": counts.completed,
            "failed": counts.failed,
            **overview.lifetime_totals(totals),
            "uptime": overview.uptime_ms(req.broker),
            "cronJobs": crons,
            **overview.throughput(req.broker),
        }
    }


def _mean_ms(metrics: BrokerMetrics | None, commands: tuple[str, ...]) -> float:
    """Mean service time of ``commands`` on this broker, in ms (0 without samples)."""
    if metrics is None:
        return 0.0
    total, count, _ = overview.command_histogram(metrics, commands)
    return round(total / count * 1000.0, 2) if count else 0.0


def _legacy_metrics(broker: BrokerHost, counts: JobCounts) -> dict[str, Any]:
    pending = counts.waiting + counts.prioritized + counts.delayed + counts.waiting_children
    finished = counts.completed + counts.failed
    return {
        "totalPushed": pending + counts.active + finished,
        "totalPulled": counts.active + finished,
        "totalCompleted": counts.completed,
        "totalFailed": counts.failed,
        "avgLatencyMs": _mean_ms(broker.metrics, LATENCY_COMMANDS),
        "avgProcessingMs": _mean_ms(broker.metrics, PROCESSING_COMMANDS),
        "memoryUsageMb": overview.memory_bytes()["rss"] / overview.MB,
        "sqliteSizeMb": 0,
        "activeConnections": len(broker.tcp.connections),
    }


@command("Metrics")
async def metrics(req: Request) -> dict[str, Any]:
    f = req.fields
    if not f.has("queue"):
        counts = await _namespace_counts(req.manager)
        return {"metrics": _legacy_metrics(req.broker, counts)}
    queue = f.queue()
    kind = f.get("type")
    if kind not in ("completed", "failed"):
        raise ValidationError("Metrics type must be 'completed' or 'failed'", field="type")
    start = f.opt_int("start", minimum=0, maximum=MAX_SERIES_POSITION) or 0
    end = f.opt_int("end", minimum=-1, maximum=MAX_SERIES_POSITION)
    counts = await req.manager.get_counts(queue)
    total = counts.completed if kind == "completed" else counts.failed
    minute_ms, series = await req.manager.finished_per_minute(queue, kind)
    points = series[start:] if end is None or end == -1 else series[start : end + 1]
    return {
        "data": {
            "meta": {"count": total, "prevTS": minute_ms, "prevCount": total},
            "data": points,
            "count": len(series),
        }
    }


@command("Prometheus")
async def prometheus(req: Request) -> dict[str, Any]:
    metrics = req.broker.metrics
    await metrics.refresh()
    return {"data": {"metrics": metrics.render().decode()}}


@command("TrimEvents")
async def trim_events(req: Request) -> dict[str, Any]:
    """Keep only the newest ``maxLength`` events of a queue (the outbox)."""
    queue = req.fields.queue()
    keep = req.fields.int_("maxLength", minimum=0, maximum=100_000_000)
    return {"data": {"removed": await req.manager.trim_events(queue, keep)}}
