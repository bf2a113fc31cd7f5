"""The brokers of a namespace as an operator sees them: sessions, leader, draining.

Read on the database clock from the session rows (:mod:`pgqueue.manager.sessions`)
and the maintenance seat (:mod:`pgqueue.maintenance.leader`), so every broker
(and every embedded client) answers the same.  An embedded SDK client holds a
session too: it is listed like a broker.
"""

from __future__ import annotations

from typing import Any

from pgqueue import jsontext
from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext

__all__ = ["MAINTENANCE_SEAT", "list_brokers", "mark_draining", "rate_throttled", "report_status"]

MAINTENANCE_SEAT = "maintenance"


async def list_brokers(ctx: EngineContext) -> list[dict[str, Any]]:
    """``[{brokerId, sessionId, hostname, pid, startedAt, heartbeatAt, silentMs, live,
    draining, drainingSince, leader, self, status}]`` ordered by broker id (times in
    ms); ``status`` is what the broker last reported of itself (``report_status``)."""
    rows = await ctx.scoped.fetch(
        Q.broker_overview,
        session_stale_ms=ctx.config.session_stale_ms,
        maintenance_seat=MAINTENANCE_SEAT,
    )
    return [
        {
            "brokerId": row["broker_id"],
            "sessionId": row["session_id"],
            "hostname": row["hostname"],
            "pid": row["pid"],
            "startedAt": row["started_at"],
            "heartbeatAt": row["heartbeat_at"],
            "silentMs": row["silent_ms"],
            "live": bool(row["live"]),
            "draining": row["draining_since"] is not None,
            "drainingSince": row["draining_since"],
            "leader": bool(row["leader"]),
            "self": row["session_id"] == ctx.session_id,
            "status": jsontext.loads(row["status"]) if row["status"] is not None else None,
        }
        for row in rows
    ]


async def report_status(ctx: EngineContext, status: dict[str, Any]) -> None:
    """Write this session's own status (a JSON object) on its broker row, with the
    claims a full rate window held back here (``rateThrottled``, by queue), which
    the other brokers add to their throttle figure."""
    document = {**status, "rateThrottled": dict(ctx.rate_throttled)}
    await ctx.scoped.execute(
        Q.broker_status_report, session_id=ctx.session_id, status=jsontext.dumps(document)
    )


async def rate_throttled(ctx: EngineContext) -> dict[str, int]:
    """This broker's count of claims held back by a full rate window, by queue."""
    return dict(ctx.rate_throttled)


async def mark_draining(ctx: EngineContext) -> None:
    """Record that this session began to drain."""
    await ctx.scoped.execute(
        Q.session_mark_draining, broker_id=ctx.broker_id, session_id=ctx.session_id
    )
