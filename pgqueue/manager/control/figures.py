"""The figures an operator alerts on, per queue, and the database's health.

Saturation, retry age and dead letters (issue 17): the age of the oldest
waiting job (like SQS's *age of the oldest message*), the age of the oldest job
in retry since its first attempt, the DLQ's size by reason, active jobs against
the queue's concurrency limit, worker slots busy against slots registered, and
the rate limit's current window.  Every figure is one set-based statement over
an index (``figures.sql``), on the database clock, so every broker answers the
same; the broker exports them on ``/metrics``, the dashboard and ``pgqueue top``
read them through ``AlertFigures``.

The limits are read only when the schema has their columns (the limits
migration); before it they are None, never a made-up zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pgqueue import jsontext
from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext
from pgqueue.manager.control import listings
from pgqueue.vocabulary.names import validate_job_id

__all__ = [
    "TIMELINE_LIMIT",
    "XMIN_HOLDERS_SHOWN",
    "alert_figures",
    "job_inspect",
    "postgres_health",
]

XMIN_HOLDERS_SHOWN = 5


def _throttled(row: Any) -> bool | None:
    """Whether the queue's rate window is full now (None: no rate limit)."""
    limit = row["rate_limit"]
    if limit is None:
        return None
    age, duration = row["rate_window_age_ms"], row["rate_duration_ms"]
    if age is None or duration is None or age >= duration:
        return False
    return int(row["rate_count"] or 0) >= int(limit)


async def alert_figures(
    ctx: EngineContext, queues: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """``[{queue, paused, oldestWaitingMs, oldestWaitingId, oldestRetryMs,
    oldestRetryId, oldestRetryAttempts, active, concurrencyLimit, workers,
    workerSlots, workerSlotsBusy, dlq: {reason: n}, dlqTotal, rateLimit,
    rateWindowClaims, rateLimited, rateThrottled}]`` for ``queues`` (default: every
    queue), by name.  A figure that does not apply is None (no waiting job, no limit).
    ``rateThrottled`` counts the claims a full rate window held back since the live
    brokers started: this one's own count and the others' last reported ones."""
    names = sorted(set(queues)) if queues is not None else await listings.list_queues(ctx)
    if not names:
        return []
    rows = await ctx.scoped.fetch(Q.queue_alert_figures, queues=names)
    dlq: dict[str, dict[str, int]] = {}
    for entry in await ctx.scoped.fetch(Q.dlq_size_by_reason):
        dlq.setdefault(entry["queue"], {})[entry["reason"]] = int(entry["entries"])
    slots = {
        s["queue"]: s
        for s in await ctx.scoped.fetch(Q.worker_slots, worker_stale_ms=ctx.config.worker_stale_ms)
    }
    throttled = dict(ctx.rate_throttled)
    for other in await ctx.scoped.fetch(
        Q.broker_rate_throttled,
        session_id=ctx.session_id,
        session_stale_ms=ctx.config.session_stale_ms,
    ):
        throttled[other["queue"]] = throttled.get(other["queue"], 0) + int(other["throttled"])
    figures = []
    for row in rows:
        queue = row["queue"]
        reasons = dlq.get(queue, {})
        slot = slots.get(queue)
        figures.append(
            {
                "queue": queue,
                "paused": bool(row["paused"]),
                "oldestWaitingMs": _round(row["oldest_waiting_ms"]),
                "oldestWaitingId": row["oldest_waiting_id"],
                "oldestRetryMs": _round(row["oldest_retry_ms"]),
                "oldestRetryId": row["oldest_retry_id"],
                "oldestRetryAttempts": row["oldest_retry_attempts"],
                "active": int(row["active"]),
                "concurrencyLimit": row["concurrency_limit"],
                "workers": int(slot["workers"]) if slot else 0,
                "workerSlots": int(slot["slots"]) if slot else 0,
                "workerSlotsBusy": int(slot["busy"]) if slot else 0,
                "dlq": reasons,
                "dlqTotal": sum(reasons.values()),
                "rateLimit": row["rate_limit"],
                "rateWindowClaims": row["rate_count"] if row["rate_limit"] is not None else None,
                "rateLimited": _throttled(row),
                "rateThrottled": throttled.get(queue, 0),
            }
        )
    return figures


def _round(value: float | None) -> float | None:
    return None if value is None else round(max(0.0, float(value)), 1)


async def postgres_health(ctx: EngineContext) -> dict[str, Any]:
    """``{oldestXminAgeTransactions, xminHolders: [...], tables: [{table, live,
    dead, bytes, lastVacuumAt, autovacuums}]}``: what holds vacuum back, and how
    big and how dead pgqueue's tables are."""
    holders = [
        {
            "kind": row["kind"],
            "holder": row["holder"],
            "application": row["application"],
            "state": row["state"],
            "query": row["query"],
            "ageTransactions": int(row["xid_age"] or 0),
            "seconds": None if row["seconds"] is None else round(float(row["seconds"]), 1),
        }
        for row in await ctx.db.fetch(Q.xmin_holders, limit=XMIN_HOLDERS_SHOWN)
    ]
    sizes = {row["table_name"]: int(row["bytes"]) for row in await ctx.db.fetch(Q.table_sizes)}
    tables = [
        {
            "table": row["table_name"],
            "live": int(row["live"]),
            "dead": int(row["dead"]),
            "bytes": sizes.get(row["table_name"]),
            "lastVacuumAt": row["last_vacuum_at"],
            "autovacuums": int(row["autovacuums"]),
        }
        for row in await ctx.db.fetch(Q.table_health)
    ]
    return {
        "oldestXminAgeTransactions": max((h["ageTransactions"] for h in holders), default=0),
        "xminHolders": holders,
        "tables": tables,
    }


TIMELINE_LIMIT = 500


async def job_inspect(ctx: EngineContext, job_id: str) -> dict[str, Any]:
    """``{lease: {state, broker, session, owner, until, leftMs} | None, timeline:
    [{type, at, payload}]}``: who holds a live job's lease, and the job's state
    changes still kept in the outbox (oldest first; retention trims them)."""
    validate_job_id(job_id)
    row = await ctx.scoped.fetchrow(Q.job_lease_holder, job_id=job_id)
    lease = None
    if row is not None:
        lease = {
            "state": row["state"],
            "broker": row["lease_broker"],
            "session": row["lease_session"],
            "owner": row["lease_owner"],
            "until": row["lease_until"],
            "leftMs": _round(row["lease_left_ms"]) if row["lease_left_ms"] is not None else None,
        }
    timeline = [
        {"type": e["type"], "at": e["at"], "payload": jsontext.loads(e["payload"] or "null")}
        for e in await ctx.scoped.fetch(Q.job_timeline, job_id=job_id, limit=TIMELINE_LIMIT)
    ]
    return {"lease": lease, "timeline": timeline}
