"""Liveness and readiness.

*Liveness* (``/healthz``): the process serves HTTP.  *Readiness*
(``/readyz``): this broker should get traffic — the database answers within
``readiness_timeout_ms``, the schema is at the version this pgqueue needs,
its broker session is live (not fenced: another process took its broker id),
every long-lived service runs (none dead or waiting out a restart after a
failure), and it is not draining.  Warnings (they do not make it unready):
LISTEN down, a stalled projection, a held xmin horizon, and ``auth``: a
broker listening beyond loopback with no token (:mod:`pgqueue.server.security`).
Not ready answers 503 and names each degraded part;
database error details go to the log, not to the (unauthenticated) prober.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pgqueue._version import __version__
from pgqueue.db.queries import Q
from pgqueue.db.schema import SCHEMA_VERSION, check_schema
from pgqueue.errors import PgQueueError, SchemaError
from pgqueue.server import overview

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["bunqueue_fields", "liveness", "readiness"]

log = logging.getLogger("pgqueue.http")

SCHEMA_NEWER = "schemaNewer"  # a soft check: rolling-upgrade window
HORIZON_WARN_SECONDS = 60.0  # a transaction or snapshot older than this is named


async def _horizon_check(broker: BrokerHost, timeout: float) -> dict[str, Any] | None:
    """What holds the xmin horizon back (it blocks vacuum and event retention):
    a warning naming a prepared transaction, or a session whose transaction is
    older than :data:`HORIZON_WARN_SECONDS` (slots carry no age in time: the
    metric names them).  None when the database does not answer."""
    try:
        rows = await asyncio.wait_for(broker.manager.db.fetch(Q.xmin_holders, limit=5), timeout)
    except (TimeoutError, PgQueueError):
        return None
    held = [
        row
        for row in rows
        if row["kind"] == "prepared_xact" or (row["seconds"] or 0) >= HORIZON_WARN_SECONDS
    ]
    if not held:
        return {"ok": True}
    row = held[0]
    seconds = row["seconds"]
    return {
        "ok": False,
        "kind": row["kind"],
        "holder": row["holder"],
        "application": row["application"],
        "state": row["state"],
        "ageTransactions": int(row["xid_age"] or 0),
        "seconds": None if seconds is None else round(float(seconds), 1),
    }


def liveness(broker: BrokerHost) -> dict[str, Any]:
    return {"ok": True, "status": "live", "draining": broker.draining}


async def _storage_checks(broker: BrokerHost, timeout: float) -> dict[str, dict[str, Any]]:
    """The database and schema checks; ``schemaNewer`` is a warning, not a degradation:
    a later release's revision that declares this broker able to run on it."""
    try:
        schema = await asyncio.wait_for(check_schema(broker.manager.db), timeout)
    except TimeoutError:
        return {"database": {"ok": False, "error": f"no answer within {timeout * 1000:.0f} ms"}}
    except SchemaError as exc:
        return {"database": {"ok": True}, "schema": {"ok": False, "error": exc.message}}
    except PgQueueError as exc:
        log.warning("readiness: the database check failed: %s", exc)
        return {"database": {"ok": False, "error": "unreachable"}}
    checks: dict[str, dict[str, Any]] = {
        "database": {"ok": True},
        "schema": {"ok": True, "version": schema.revision, "broker": SCHEMA_VERSION},
    }
    if schema.warning is not None:
        checks[SCHEMA_NEWER] = {"ok": False, "warning": schema.warning}
    return checks


def _session_check(broker: BrokerHost) -> dict[str, Any]:
    try:
        session = broker.manager.session
    except PgQueueError:
        return {"ok": False, "error": "not started"}
    if session.fenced.is_set():
        return {
            "ok": False,
            "brokerId": session.broker_id,
            "fenced": True,
            "error": "fenced: another process took over this broker id",
        }
    return {
        "ok": True,
        "brokerId": session.broker_id,
        "fenced": False,
        "heartbeatFailing": session.last_error is not None,
    }


def _services_check(broker: BrokerHost) -> dict[str, Any]:
    """Every long-lived service runs (none dead, none waiting out a restart backoff).

    ``ended`` is not a failure: a service whose work is over on purpose (the
    session heartbeat of a fenced broker, reported by the session check)."""
    services: dict[str, dict[str, Any]] = {}
    for service in broker.services():
        entry: dict[str, Any] = {"state": service.state, "restarts": service.restarts}
        if service.failure is not None:
            entry["lastError"] = type(service.failure).__name__
        services[service.name] = entry
    failing = sorted(
        name for name, entry in services.items() if entry["state"] not in ("running", "ended")
    )
    return {"ok": not failing, "failing": failing, "services": services}


async def readiness(broker: BrokerHost, timeout: float) -> tuple[bool, dict[str, Any]]:
    """(ready, body) of the readiness probe."""
    checks: dict[str, dict[str, Any]] = {"draining": {"ok": not broker.draining}}
    checks["session"] = _session_check(broker)
    checks["services"] = _services_check(broker)
    storage = await _storage_checks(broker, timeout)
    newer = storage.pop(SCHEMA_NEWER, None)
    checks.update(storage)
    degraded = sorted(name for name, check in checks.items() if not check["ok"])
    ready = not degraded
    soft = _soft_checks(broker)
    if newer is not None:
        soft[SCHEMA_NEWER] = newer
    horizon = await _horizon_check(broker, timeout)
    if horizon is not None:
        soft["xminHorizon"] = horizon
    body: dict[str, Any] = {
        "ok": ready,
        "ready": ready,
        "status": "ready" if ready else "degraded",
        "degraded": degraded,
        "warnings": sorted(name for name, check in soft.items() if not check["ok"]),
        "checks": {**checks, **soft},
    }
    return ready, body


def _soft_checks(broker: BrokerHost) -> dict[str, dict[str, Any]]:
    """Parts whose failure slows the broker down but does not stop it serving
    correctly (reported as warnings; they do not make the broker unready)."""
    manager = broker.manager
    notifier = manager.notifier
    listen_ok = manager.config.poll_only or notifier.connected.is_set()
    checks: dict[str, dict[str, Any]] = {
        "listen": {
            "ok": listen_ok,
            "pollOnly": manager.config.poll_only,
            "reconnects": notifier.reconnects,
        }
    }
    projection = broker.projection
    if projection is not None:
        staleness = projection.staleness_ms()
        checks["projection"] = {
            "ok": projection.running,
            "entries": projection.stats.entries,
            "stalenessMs": None if staleness is None else round(staleness),
        }
    elector = manager.elector
    if elector is not None:
        checks["maintenance"] = {"ok": True, "leader": elector.is_leader.is_set()}
    warning = broker.warnings.get("auth")
    checks["auth"] = {
        "ok": warning is None,
        "required": broker.auth_required,
        "tls": broker.settings.tls_cert is not None,
        **({} if warning is None else {"warning": warning}),
    }
    return checks


async def bunqueue_fields(
    broker: BrokerHost, timeout: float, connections: dict[str, int]
) -> dict[str, Any]:
    """What bunqueue's ``GET /health`` adds: ``uptime`` (s), ``version``, the
    namespace's ``queues`` counts (null when the database does not answer in
    time), ``connections`` of this broker and its ``memory`` (MB)."""
    queues: dict[str, int] | None
    try:
        figures = await asyncio.wait_for(overview.queue_figures(broker), timeout)
    except (TimeoutError, PgQueueError):
        queues = None
    else:
        totals = overview.namespace_totals(figures)
        queues = {k: totals[k] for k in ("waiting", "active", "delayed", "completed", "dlq")}
    return {
        "uptime": int(overview.uptime_ms(broker) // 1000),
        "version": __version__,
        "queues": queues,
        "connections": {
            "tcp": len(broker.tcp.connections),
            "ws": connections.get("websocket", 0),
            "sse": connections.get("sse", 0),
        },
        "memory": overview.memory_mb(),
    }
