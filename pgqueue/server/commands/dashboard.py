"""The dashboard's aggregates: DashboardOverview, DashboardQueues, DashboardQueue.

Shapes follow bunqueue (§1.6 "Monitoring, webhooks, events, dashboard"), each
``D{...}``; the HTTP routes ``/dashboard``, ``/dashboard/queues`` and
``/dashboard/queues/{queue}`` serve the same maps unwrapped, as bunqueue does.

* ``DashboardOverview`` → ``D{stats, throughput, latency, memory, collections,
  workers: {total, active, list, truncated}, crons, storage, timestamp}``.
  ``stats`` are the namespace's counts (:mod:`pgqueue.server.overview`),
  ``throughput`` and ``latency`` this broker's view, ``crons`` the
  ``CronList`` answer's schedules (none while cron is not served).
* ``DashboardQueues {limit?, offset?}`` → ``D{queues: [{name, waiting,
  prioritized, delayed, active, dlq, paused, completed, failed}], total, limit, offset,
  timestamp}``: queues by name, one page (``limit`` 1..500, default every
  queue over TCP; bunqueue's TCP command takes no paging).
* ``DashboardQueue {queue, includeJobs?, jobsLimit?}`` → ``D{name, counts,
  paused, priorityCounts, dlqPreview, timestamp, jobs?}``: exact counts (a
  paused queue reports its ready jobs under ``paused``, as ``GetJobCounts``),
  the first 10 DLQ entries, and with ``includeJobs`` up to ``jobsLimit``
  (default 10, at most 50) jobs of each of waiting, active, delayed, paused.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pgqueue.manager.models import Job
from pgqueue.protocol import Fields
from pgqueue.server import overview
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import ClientState, Request
from pgqueue.server.wire import job_to_wire

group = CommandGroup()
command = group.command

MAX_PAGE = 500
DLQ_PREVIEW = 10
DEFAULT_JOBS = 10
MAX_JOBS = 50
CRON_FIELDS = ("name", "queue", "schedule", "repeatEvery", "nextRun", "executions")


def now_ms() -> float:
    return time.time() * 1000.0


async def cron_list(req: Request) -> list[dict[str, Any]]:
    """The schedules ``CronList`` answers on this broker (none until cron is served)."""
    from pgqueue.server.commands import COMMANDS

    handler = COMMANDS.get("CronList")
    if handler is None:
        return []
    client = ClientState(transport="internal", authenticated=True, actor=req.client.actor)
    inner = Request(req.broker, client, "CronList", Fields({"cmd": "CronList"}))
    answer = await handler(inner) or {}
    crons = answer.get("crons")
    if crons is None and isinstance(answer.get("data"), dict):
        crons = answer["data"].get("crons")
    return [
        {key: cron.get(key) for key in CRON_FIELDS}
        for cron in crons or []
        if isinstance(cron, dict)
    ]


@command("DashboardOverview")
async def dashboard_overview(req: Request) -> dict[str, Any]:
    broker = req.broker
    figures, workers, crons = await asyncio.gather(
        overview.queue_figures(broker), overview.workers_view(broker), cron_list(req)
    )
    totals = overview.namespace_totals(figures)
    return {
        "data": {
            "stats": {
                "waiting": totals["waiting"],
                "active": totals["active"],
                "delayed": totals["delayed"],
                "completed": totals["completed"],
                "dlq": totals["dlq"],
                **overview.lifetime_totals(totals),
                "uptime": overview.uptime_ms(broker),
            },
            "throughput": overview.throughput(broker),
            "latency": overview.latency(broker),
            "memory": overview.memory_mb(),
            "collections": overview.collections(broker),
            "workers": workers,
            "crons": crons,
            "storage": {"diskFull": False, "error": None, "since": None},
            "timestamp": now_ms(),
        }
    }


@command("DashboardQueues")
async def dashboard_queues(req: Request) -> dict[str, Any]:
    f = req.fields
    limit = f.opt_int("limit", minimum=1)
    offset = f.opt_int("offset", minimum=0, default=0)
    figures = await overview.queue_figures(req.broker)
    size = len(figures) if limit is None else min(limit, MAX_PAGE)
    page = figures[offset : offset + size]
    return {
        "data": {
            "queues": [q.row() for q in page],
            "total": len(figures),
            "limit": size,
            "offset": offset,
            "timestamp": now_ms(),
        }
    }


def _summary(job: Job) -> dict[str, Any]:
    wire = job_to_wire(job)
    return {
        key: wire.get(key)
        for key in ("id", "priority", "createdAt", "runAt", "attempts", "progress")
    }


@command("DashboardQueue")
async def dashboard_queue(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    include_jobs = f.opt_bool("includeJobs", default=False)
    jobs_limit = f.opt_int("jobsLimit", minimum=1, default=DEFAULT_JOBS)
    manager = req.manager
    counts, priorities, dlq = await asyncio.gather(
        manager.get_counts(queue),
        manager.get_counts_per_priority(queue),
        manager.list_dlq(queue, limit=DLQ_PREVIEW),
    )
    body: dict[str, Any] = {**counts.as_dict(), "paused": 0}
    if counts.paused:
        body["paused"] = body["waiting"] + body["prioritized"]
        body["waiting"] = body["prioritized"] = 0
    result: dict[str, Any] = {
        "name": queue,
        "counts": body,
        "paused": counts.paused,
        "priorityCounts": {str(p): n for p, n in priorities.items()},
        "dlqPreview": [
            {
                "id": entry.job.id,
                "data": entry.job.data,
                "attempts": entry.job.attempts,
                "createdAt": entry.job.created_at,
            }
            for entry in dlq
        ],
        "timestamp": now_ms(),
    }
    if include_jobs:
        size = min(jobs_limit, MAX_JOBS)

        async def listed(states: list[str]) -> list[dict[str, Any]]:
            return [_summary(job) for job in await manager.get_jobs(queue, states, 0, size)]

        ready, active, delayed = await asyncio.gather(
            listed(["waiting", "prioritized"]), listed(["active"]), listed(["delayed"])
        )
        jobs: dict[str, list[dict[str, Any]]] = {
            "waiting": [],
            "active": active,
            "delayed": delayed,
            "paused": [],
        }
        jobs["paused" if counts.paused else "waiting"] = ready
        result["jobs"] = jobs
    return {"data": result}
