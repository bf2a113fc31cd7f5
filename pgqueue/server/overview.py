"""bunqueue's aggregate views of a broker: stats, queue summaries, memory, health.

One home for the figures that bunqueue's dashboard reads in several places:
the ``Dashboard*`` commands, ``GET /stats``, ``GET /health``, the
``stats:snapshot`` / ``health:status`` / ``queue:counts`` frames of the
bunqueue event stream and WebSocket, and the ``bunqueue_*`` metric names.

Job counts come from PostgreSQL (the projection's cached per-queue counts,
refreshed by the outbox events, at most ``counts_refresh_ms`` old; exact
per-queue reads where one queue is asked for), so every broker of the
namespace answers with the same figures.  Memory is this process's: a Python
broker has no JavaScript heap, so ``rss`` is the resident set size, and
``heapUsed`` / ``heapTotal`` are what :mod:`tracemalloc` traces (current and
peak) while it is on, the resident set size otherwise (see ``POST /gc``).
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
import tracemalloc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgqueue.db.queries import Q
from pgqueue.manager.models import JobCounts

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost
    from pgqueue.server.metrics import BrokerMetrics

__all__ = [
    "QueueFigures",
    "collections",
    "command_histogram",
    "cron_count",
    "health_snapshot",
    "latency",
    "memory_bytes",
    "memory_mb",
    "namespace_totals",
    "queue_figures",
    "stats_snapshot",
    "throughput",
    "workers_view",
]

COUNT_STATES = ("waiting", "prioritized", "delayed", "active", "waiting-children")
LATENCY_COMMANDS = {"push": ("PUSH", "PUSHB"), "pull": ("PULL", "PULLB"), "ack": ("ACK", "ACKB")}
MB = 1024 * 1024


# -- memory -------------------------------------------------------------------------


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # not Linux: the peak is what is known
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def memory_bytes() -> dict[str, int]:
    """``{heapUsed, heapTotal, rss}`` of this process in bytes (see the module docstring)."""
    rss = _rss_bytes()
    if tracemalloc.is_tracing():
        current, peak = tracemalloc.get_traced_memory()
        return {"heapUsed": current, "heapTotal": max(peak, current), "rss": rss}
    return {"heapUsed": rss, "heapTotal": rss, "rss": rss}


def memory_mb() -> dict[str, int]:
    """:func:`memory_bytes` in whole megabytes, as bunqueue reports them."""
    return {key: round(value / MB) for key, value in memory_bytes().items()}


def collections(broker: BrokerHost) -> dict[str, int]:
    """The sizes of what this broker keeps in memory (bunqueue's ``collections``)."""
    projection = broker.projection
    return {
        "projectionEntries": projection.stats.entries if projection is not None else 0,
        "projectionBytes": projection.stats.bytes if projection is not None else 0,
        "claimBook": len(broker.claims),
        "claimBookClean": broker.claims.clean_records,
        "tcpConnections": len(broker.tcp.connections),
    }


# -- job counts ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """One queue's counts as the dashboard lists them."""

    name: str
    counts: dict[str, int]
    paused: bool
    dlq: int

    def row(self) -> dict[str, Any]:
        """``DashboardQueues``' entry (bunqueue's keys, and completed / failed for
        ``GET /queues/summary``)."""
        c = self.counts
        return {
            "name": self.name,
            "waiting": c.get("waiting", 0),
            "prioritized": c.get("prioritized", 0),
            "delayed": c.get("delayed", 0),
            "active": c.get("active", 0),
            "dlq": self.dlq,
            "paused": self.paused,
            "completed": c.get("completed", 0),
            "failed": c.get("failed", 0),
        }


async def _counts_by_queue(broker: BrokerHost) -> dict[str, dict[str, int]]:
    if broker.projection is not None:
        return await broker.projection.all_counts()
    manager = broker.manager
    queues = await manager.list_queues()
    slots = asyncio.Semaphore(4)

    async def one(queue: str) -> tuple[str, JobCounts]:
        async with slots:
            return queue, await manager.get_counts(queue)

    found = await asyncio.gather(*(one(queue) for queue in queues))
    return {q: {**c.as_dict(), "paused": int(c.paused)} for q, c in found}


async def queue_figures(broker: BrokerHost) -> list[QueueFigures]:
    """Every queue of the namespace (by name) with its counts, paused state and DLQ size."""
    manager = broker.manager
    names, counts, dlq = await asyncio.gather(
        manager.list_queues(), _counts_by_queue(broker), manager.dlq_stats(None)
    )
    every = sorted(set(names) | set(counts))
    return [
        QueueFigures(
            name,
            {k: v for k, v in counts.get(name, {}).items() if k != "paused"},
            bool(counts.get(name, {}).get("paused")),
            int(dlq.by_queue.get(name, 0)),
        )
        for name in every
    ]


def namespace_totals(figures: list[QueueFigures]) -> dict[str, int]:
    """Counts per state of the whole namespace (sums over the queues)."""
    totals = dict.fromkeys(
        ("waiting", "prioritized", "delayed", "active", "waiting-children", "completed", "failed"),
        0,
    )
    for queue in figures:
        for state in totals:
            totals[state] += queue.counts.get(state, 0)
    totals["dlq"] = sum(queue.dlq for queue in figures)
    return totals


def lifetime_totals(totals: dict[str, int]) -> dict[str, int]:
    """bunqueue's ``totalPushed`` ... ``totalFailed``: counted from the jobs PostgreSQL
    holds now (live and finished, within retention), not a lifetime tally."""
    pending = sum(totals[s] for s in ("waiting", "prioritized", "delayed", "waiting-children"))
    finished = totals["completed"] + totals["failed"]
    return {
        "totalPushed": pending + totals["active"] + finished,
        "totalPulled": totals["active"] + finished,
        "totalCompleted": totals["completed"],
        "totalFailed": totals["failed"],
    }


async def cron_count(broker: BrokerHost) -> int:
    """Cron schedules of the namespace (0 while this installation has no cron table)."""
    db = broker.manager.db
    if not await db.fetchval(Q.cron_table_exists):
        return 0
    return int(await db.fetchval(Q.cron_count, namespace=broker.manager.namespace) or 0)


# -- rates, latency, workers --------------------------------------------------------------


def throughput(broker: BrokerHost) -> dict[str, float]:
    """Jobs per second of the namespace over the last 10 s (from the outbox events)."""
    m = broker.metrics
    return {
        "pushPerSec": m.push_rate.rate(),
        "pullPerSec": m.pull_rate.rate(),
        "completePerSec": m.complete_rate.rate(),
        "failPerSec": m.fail_rate.rate(),
    }


def command_histogram(
    metrics: BrokerMetrics, commands: tuple[str, ...]
) -> tuple[float, float, list[Any]]:
    """(sum, count, [(upper bound, cumulative count)]) of a broker's service times."""
    total = count = 0.0
    buckets: dict[float, float] = {}
    for family in metrics.command_seconds.collect():
        for sample in family.samples:
            if sample.labels.get("command") not in commands:
                continue
            if sample.name.endswith("_sum"):
                total += sample.value
            elif sample.name.endswith("_count"):
                count += sample.value
            elif sample.name.endswith("_bucket"):
                bound = float(sample.labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + sample.value
    return total, count, sorted(buckets.items())


def _percentile(buckets: list[Any], count: float, q: float) -> float:
    if count <= 0:
        return 0.0
    wanted = q * count
    lower = 0.0
    for bound, cumulative in buckets:
        if cumulative >= wanted:
            return round((bound if bound != float("inf") else lower) * 1000, 3)
        lower = bound
    return round(lower * 1000, 3)


def latency(broker: BrokerHost) -> dict[str, Any]:
    """This broker's push / pull / ack service times: means and p50/p95/p99 (ms,
    upper bounds of the histogram's buckets)."""
    averages: dict[str, float] = {}
    percentiles: dict[str, dict[str, float]] = {}
    for name, commands in LATENCY_COMMANDS.items():
        total, count, buckets = command_histogram(broker.metrics, commands)
        averages[f"{name}Ms"] = round(total / count * 1000, 3) if count else 0.0
        percentiles[name] = {
            f"p{int(q * 100)}": _percentile(buckets, count, q) for q in (0.5, 0.95, 0.99)
        }
    return {"averages": averages, "percentiles": percentiles}


async def workers_view(broker: BrokerHost, limit: int = 100) -> dict[str, Any]:
    """``{total, active, list, truncated}`` of the registered workers."""
    workers, stats = await broker.manager.list_workers()
    return {
        "total": stats["total"],
        "active": stats["active"],
        "list": [
            {
                "id": w["workerId"],
                "name": w["name"],
                "queues": w["queues"],
                "lastSeen": w["lastSeen"],
                "activeJobs": w["activeJobs"],
                "processedJobs": w["processedJobs"],
                "failedJobs": w["failedJobs"],
            }
            for w in workers[:limit]
        ],
        "truncated": len(workers) > limit,
    }


# -- snapshots of the event streams --------------------------------------------------------


def uptime_ms(broker: BrokerHost) -> float:
    return (time.time() - broker.started_at) * 1000.0


async def stats_snapshot(broker: BrokerHost) -> dict[str, Any]:
    """The ``stats:snapshot`` frame: namespace counts, rates, queues, workers, crons."""
    figures, workers, crons = await asyncio.gather(
        queue_figures(broker), broker.manager.list_workers(), cron_count(broker)
    )
    totals = namespace_totals(figures)
    lifetime = lifetime_totals(totals)
    rates = throughput(broker)
    return {
        "waiting": totals["waiting"],
        "active": totals["active"],
        "delayed": totals["delayed"],
        "completed": totals["completed"],
        "dlq": totals["dlq"],
        "totalPushed": lifetime["totalPushed"],
        "totalCompleted": lifetime["totalCompleted"],
        "totalFailed": lifetime["totalFailed"],
        "pushPerSec": rates["pushPerSec"],
        "pullPerSec": rates["pullPerSec"],
        "uptime": uptime_ms(broker),
        "queues": {
            q.name: {
                "waiting": q.counts.get("waiting", 0),
                "active": q.counts.get("active", 0),
                "delayed": q.counts.get("delayed", 0),
                "dlq": q.dlq,
                "paused": q.paused,
            }
            for q in figures
        },
        "workers": {"total": workers[1]["total"], "active": workers[1]["active"]},
        "cronJobs": crons,
    }


def health_snapshot(broker: BrokerHost, connections: dict[str, int]) -> dict[str, Any]:
    """The ``health:status`` frame (no database read: it says the process serves)."""
    memory = memory_mb()
    return {
        "ok": not broker.draining,
        "uptime": int(uptime_ms(broker) // 1000),
        "memory": {"rss": memory["rss"], "heapUsed": memory["heapUsed"]},
        "connections": connections,
    }
