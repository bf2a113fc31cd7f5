"""What an operator reads of the namespace as a whole (pgqueue extensions).

``ListBrokers`` answers ``{brokers: [...]}``: every broker session with its
process, heartbeat, liveness, whether it drains and whether it leads the
maintenance (:func:`pgqueue.manager.control.cluster.list_brokers`).  ``DlqAudit``
answers ``{records: [...]}``: the newest audited DLQ operations (who, when,
what, which jobs, why), of one ``queue`` or of all, newest first, at most
``limit`` (default 100).
"""

from __future__ import annotations

from typing import Any

from pgqueue.manager.dlq.policy import MAX_LIST_LIMIT
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request

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
