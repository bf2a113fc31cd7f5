"""The upkeep one engine runs beside it: a leader elector and the services it drives.

The reaper runs on every broker (G6 is "lease + reaper interval"; only its
purge of stale session rows waits for the leadership), and so does the cron
ticker (G8: a tick's admission is unique in the database, so no leader is
needed and a dead one stops no schedule); DLQ upkeep,
retention, the jobs table's vacuum and webhook delivery run on the leader.  Built by the composition
root (:mod:`pgqueue.runtime`) for an engine that runs maintenance; the engine
sees it as a :class:`~pgqueue.manager.parts.Maintenance`.
"""

from __future__ import annotations

import logging

from pgqueue.errors import PgQueueError
from pgqueue.maintenance.cron_ticker import CronTicker
from pgqueue.maintenance.dlq_upkeep import DlqUpkeep
from pgqueue.maintenance.jobs_vacuum import JobsVacuum
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.reaper import Reaper
from pgqueue.maintenance.retention import Retention
from pgqueue.maintenance.webhook_delivery import WebhookDelivery
from pgqueue.manager.context import EngineContext
from pgqueue.service import Service, stop_together

__all__ = ["MaintenanceServices"]

log = logging.getLogger("pgqueue")


class MaintenanceServices:
    """The elector, the reaper, the cron ticker, DLQ upkeep, retention, the jobs
    vacuum and webhook delivery of one engine."""

    def __init__(self, ctx: EngineContext) -> None:
        self.elector = LeaderElector(ctx.db, ctx.config, ctx.session)
        self.reaper = Reaper(ctx, self.elector)
        self.cron = CronTicker(ctx, self.elector)
        self.dlq_upkeep = DlqUpkeep(ctx, self.elector)
        self.retention = Retention(ctx, self.elector)
        self.jobs_vacuum = JobsVacuum(ctx, self.elector)
        self.webhook_delivery = WebhookDelivery(ctx, self.elector)

    def services(self) -> list[Service]:
        return [
            self.elector,
            self.reaper,
            self.cron,
            self.dlq_upkeep,
            self.retention,
            self.jobs_vacuum,
            self.webhook_delivery,
        ]

    async def start(self) -> None:
        for service in self.services():
            await service.start()

    async def stop(self) -> None:
        """Stop the services together (each lets a pass in progress finish, for a
        while: :data:`~pgqueue.maintenance.periodic.STOP_GRACE_S`), then give up the
        leader seat."""
        await stop_together(self.services()[1:])
        try:
            await self.elector.resign()
        except PgQueueError as exc:
            log.warning("could not resign leadership: %s", exc)
