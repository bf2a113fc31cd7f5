"""What a broker knows only of itself, reported on its session row for the others.

LISTEN or poll-only, LISTEN reconnects, projection staleness, leader, draining:
in this broker's memory, not in the database.  :class:`StatusReporter` writes
:func:`broker_self_status` on the broker's row (``pgqueue_brokers.status``) every
session heartbeat, so ``ClusterOverview`` on any broker (and the dashboard) shows
every broker's, with the age of the report.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from pgqueue.errors import PgQueueError
from pgqueue.service import Service

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["StatusReporter", "broker_self_status"]

log = logging.getLogger("pgqueue.broker")


def broker_self_status(broker: BrokerHost) -> dict[str, Any]:
    """What the broker knows only of itself."""
    manager = broker.manager
    projection = broker.projection
    staleness = projection.staleness_ms() if projection is not None else None
    elector = manager.elector
    return {
        "brokerId": manager.broker_id,
        "pollOnly": manager.config.poll_only,
        "listening": (not manager.config.poll_only) and manager.notifier.connected.is_set(),
        "listenReconnects": manager.notifier.reconnects,
        "projection": projection is not None,
        "projectionStalenessMs": None if staleness is None else round(staleness),
        "leader": elector is not None and elector.is_leader.is_set(),
        "draining": broker.draining,
    }


class StatusReporter(Service):
    """Writes the broker's own status every session heartbeat (a failed write waits
    for the next one: the status is a hint, the session row stays the truth)."""

    name = "status-report"

    def __init__(self, broker: BrokerHost) -> None:
        super().__init__()
        self.broker = broker

    async def run(self) -> None:
        manager = self.broker.manager
        interval = manager.config.session_heartbeat_ms / 1000
        while True:
            try:
                await manager.report_status(broker_self_status(self.broker))
            except PgQueueError as exc:
                log.debug("status report failed (next one in %.1fs): %s", interval, exc)
            self.started.set()
            await asyncio.sleep(interval)
