"""What an operator reads of the namespace as a whole (pgqueue extensions).

``ListBrokers`` answers ``{brokers: [...]}``: every broker session with its
process, heartbeat, liveness, whether it drains and whether it leads the
maintenance (:func:`pgqueue.manager.control.cluster.list_brokers`).  ``DlqAudit``
answers ``{records: [...]}``: the newest audited DLQ operations (who, when,
what, which jobs, why), of one ``queue`` or of all, newest first, at most
``limit`` (default 100).

``AlertFigures`` answers ``{queues: [...]}``: per queue (one ``queue``, or every
queue) the figures an operator alerts on
(:func:`pgqueue.manager.control.figures.alert_figures`).  ``ClusterOverview``
answers ``{brokers, workers, workerStats, postgres, self}``: the brokers, the
registered workers, PostgreSQL's health (xmin horizon and who holds it, dead
tuples, table sizes) and what only the answering broker knows of itself (LISTEN
or poll-only, projection staleness).  The dashboard's Overview reads both.
``JobInspect`` answers ``{lease, timeline}``: who holds a live job's lease
(broker, worker, until when) and its state changes still in the outbox.
"""

from __future__ import annotations

from typing import Any

from pgqueue.manager.dlq.policy import MAX_LIST_LIMIT
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.server.status_report import broker_self_status

group = CommandGroup()
command = group.command


@command("ListBrokers")
async def list_brokers(req: Request) -> dict[str, Any]:
    return {"brokers": await req.manager.list_brokers()}


@command("DlqAudit")
async def dlq_audit(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue() if f.has("queue") else None
    limit = f.opt_int("limit", minimum=1, maximum=MAX_LIST_LIMIT, default=100)
    records = await req.manager.dlq_audit(queue, limit)
    return {"records": [record.as_dict() for record in records]}


@command("AlertFigures")
async def alert_figures(req: Request) -> dict[str, Any]:
    f = req.fields
    queues = [f.queue()] if f.has("queue") else None
    return {"queues": await req.manager.alert_figures(queues)}


@command("ClusterOverview")
async def cluster_overview(req: Request) -> dict[str, Any]:
    manager = req.manager
    workers, stats = await manager.list_workers()
    return {
        "brokers": await manager.list_brokers(),
        "workers": workers,
        "workerStats": stats,
        "postgres": await manager.postgres_health(),
        "self": broker_self_status(req.broker),
    }


@command("JobInspect")
async def job_inspect(req: Request) -> dict[str, Any]:
    return await req.manager.job_inspect(req.fields.job_id("id"))
