"""The dead-letter queue over the wire: list, stats, redrive, purge, remove; settings.

Shapes follow bunqueue (§1.6 "DLQ"): ``Dlq`` answers ``{jobs, entries, total}``
(the TS client reads ``entries``, the Python SDK ``jobs``; ``total`` counts the
entries the filter selects, paging aside, as bunqueue's HTTP route), ``GetDlqStats``
``D{stats}``, ``RetryDlq`` and ``PurgeDlq`` ``{count}``, ``RemoveDlqJob``
``D{removed}``, the config commands ``{config}`` (the settings now in force,
defaults filled in).

Redrives, purges and removals are audited under the connection's actor (its
auth token's name, ``anonymous`` without auth); an optional ``why`` (a
pgqueue extension) is stored with the audit row.
"""

from __future__ import annotations

from typing import Any

from pgqueue.manager.dlq.policy import MAX_LIST_LIMIT
from pgqueue.protocol import Fields
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.server.wire import job_to_wire
from pgqueue.vocabulary.checks import MAX_EPOCH_MS

group = CommandGroup()
command = group.command

MAX_WHY_LENGTH = 4096
MAX_OFFSET = 1_000_000
NULLABLE_DLQ_SETTINGS = frozenset({"maxAge", "max_age"})


def _filter(f: Fields) -> dict[str, Any]:
    """The selection of a ``filter`` map (engine keyword arguments), checked field by field.

    ``filter.queue`` may repeat the command's queue; any other queue is refused.
    """
    sub = f.opt_nested("filter")
    if sub is None:
        return {}
    queue = f.queue()
    if sub.has("queue") and sub.queue() != queue:
        raise sub.error("queue", "must be the command's queue")
    return {
        "reason": sub.opt_str("reason", max_len=64),
        "older_than_ms": sub.opt_number("olderThan", minimum=0, maximum=MAX_EPOCH_MS),
        "newer_than_ms": sub.opt_number("newerThan", minimum=0, maximum=MAX_EPOCH_MS),
        "retriable": sub.opt_bool("retriable"),
        "expired": sub.opt_bool("expired"),
        "limit": sub.opt_int("limit", minimum=1, maximum=MAX_LIST_LIMIT),
        "offset": sub.opt_int("offset", minimum=0, maximum=MAX_OFFSET),
    }


def _why(f: Fields) -> str | None:
    return f.opt_str("why", max_len=MAX_WHY_LENGTH)


@command("Dlq")
async def dlq(req: Request) -> dict[str, Any]:
    """One page of a queue's DLQ, oldest entry first (``count`` or ``filter.limit``
    entries, at most 10000)."""
    f = req.fields
    queue = f.queue()
    selection = _filter(f)
    count = f.opt_int("count", minimum=0, maximum=MAX_LIST_LIMIT)
    offset = selection.pop("offset", None) or 0
    limit = selection.pop("limit", None) or MAX_LIST_LIMIT
    if count is not None:
        limit = min(limit, count)
    total = await req.manager.count_dlq(queue, **selection)
    if limit == 0:
        return {"jobs": [], "entries": [], "total": total}
    entries = await req.manager.list_dlq(queue, **selection, limit=limit, offset=offset)
    jobs = [job_to_wire(entry.job) for entry in entries]
    return {
        "jobs": jobs,
        "entries": [
            {"job": job, **entry.as_dict()} for job, entry in zip(jobs, entries, strict=True)
        ],
        "total": total,
    }


@command("GetDlqStats")
async def get_dlq_stats(req: Request) -> dict[str, Any]:
    """Statistics of one queue's DLQ (of every queue when ``queue`` is absent)."""
    f = req.fields
    queue = f.queue() if f.has("queue") else None
    stats = await req.manager.dlq_stats(queue)
    return {"data": {"stats": stats.as_dict()}}


@command("RetryDlq")
async def retry_dlq(req: Request) -> dict[str, Any]:
    """Redrive one entry (``jobId``), up to ``count``, or the ``filter``'s selection
    (everything when none is given)."""
    f = req.fields
    queue = f.queue()
    job_id = f.opt_job_id("jobId")
    count = f.opt_int("count", minimum=0, maximum=2**31 - 1)
    selection = _filter(f)
    selection.pop("offset", None)
    limit = selection.pop("limit", None)
    if count is not None:
        if count == 0:
            return {"count": 0}
        limit = count if limit is None else min(limit, count)
    moved = await req.manager.redrive(
        queue, actor=req.client.actor, job_id=job_id, limit=limit, why=_why(f), **selection
    )
    return {"count": moved}


@command("PurgeDlq")
async def purge_dlq(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    reason = f.opt_str("reason", max_len=64)
    count = await req.manager.purge_dlq(queue, actor=req.client.actor, why=_why(f), reason=reason)
    return {"count": count}


@command("RemoveDlqJob")
async def remove_dlq_job(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    job_id = f.job_id("jobId")
    removed = await req.manager.remove_dlq_job(queue, job_id, actor=req.client.actor, why=_why(f))
    return {"data": {"removed": removed}}


def _patch(f: Fields, nullable: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The ``config`` map; a nil value means "not given" except where null is a value."""
    config = f.map_("config")
    return {k: v for k, v in config.items() if v is not None or k in nullable}


@command("SetDlqConfig")
async def set_dlq_config(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    config = await req.manager.set_dlq_config(queue, _patch(f, NULLABLE_DLQ_SETTINGS))
    return {"config": dict(config)}


@command("GetDlqConfig")
async def get_dlq_config(req: Request) -> dict[str, Any]:
    return {"config": dict(await req.manager.get_dlq_config(req.fields.queue()))}


@command("SetStallConfig")
async def set_stall_config(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    return {"config": dict(await req.manager.set_stall_config(queue, _patch(f)))}


@command("GetStallConfig")
async def get_stall_config(req: Request) -> dict[str, Any]:
    return {"config": dict(await req.manager.get_stall_config(req.fields.queue()))}
