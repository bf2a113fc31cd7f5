"""The manager's maintenance operations: one pass of an upkeep, run now.

The services run these passes on their own every interval (see
:mod:`pgqueue.maintenance.services`); these methods run one at once, for
tests, the CLI and bunqueue's commands.  The services themselves are read
here too (``elector``, ``reaper``, ...): ``None`` when the manager runs no
maintenance.
"""

from __future__ import annotations

from datetime import datetime

from pgqueue.maintenance.cron_ticker import CronTicker, TickReport, tick_once
from pgqueue.maintenance.dlq_upkeep import DlqUpkeep, DlqUpkeepReport, dlq_upkeep_once
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.reaper import Reaper, ReapReport, reap_once
from pgqueue.maintenance.retention import (
    Retention,
    RetentionReport,
    retain_once,
    trim_events,
)
from pgqueue.maintenance.services import MaintenanceServices
from pgqueue.maintenance.webhook_delivery import WebhookDelivery
from pgqueue.manager.base import ManagerBase

__all__ = ["MaintenanceOps"]


class MaintenanceOps(ManagerBase):
    """One maintenance pass on demand, and the maintenance services once started."""

    @property
    def upkeep(self) -> MaintenanceServices | None:
        """The maintenance services this manager started (``None`` without maintenance)."""
        upkeep = self.maintenance
        return upkeep if isinstance(upkeep, MaintenanceServices) else None

    @property
    def elector(self) -> LeaderElector | None:
        return None if self.upkeep is None else self.upkeep.elector

    @property
    def reaper(self) -> Reaper | None:
        return None if self.upkeep is None else self.upkeep.reaper

    @property
    def cron_ticker(self) -> CronTicker | None:
        return None if self.upkeep is None else self.upkeep.cron

    @property
    def dlq_upkeep(self) -> DlqUpkeep | None:
        return None if self.upkeep is None else self.upkeep.dlq_upkeep

    @property
    def retention(self) -> Retention | None:
        return None if self.upkeep is None else self.upkeep.retention

    @property
    def webhook_delivery(self) -> WebhookDelivery | None:
        return None if self.upkeep is None else self.upkeep.webhook_delivery

    async def reap(self, *, now: datetime | None = None) -> ReapReport:
        """Run one reaper sweep now (every broker does this on its own every interval).

        ``now``: the instant leases and TTLs are judged against (a test moves
        time with it; ``None``, the default, is the database clock)."""
        return await reap_once(self.ctx, now)

    async def cron_tick(self, *, now: datetime | None = None) -> TickReport:
        """Admit every due scheduler tick now (every broker does this on its own
        every ``cron_interval_ms``).

        ``now``: the instant schedules are judged against (a test moves time
        with it; ``None``, the default, is the database clock)."""
        return await tick_once(self.ctx, now)

    async def retention_pass(self, *, now: datetime | None = None) -> RetentionReport:
        """Run one retention pass now (finished jobs, events, dead workers).

        ``now``: the instant the ages of finished jobs, events and workers are
        measured against (a test moves time with it; ``None``, the default, is
        the database clock)."""
        return await retain_once(self.ctx, now=now)

    async def trim_events(self, queue: str, max_length: int) -> int:
        """Keep only the newest ``max_length`` events of ``queue``."""
        return await trim_events(self.ctx, queue, max_length)

    async def dlq_upkeep_pass(self, *, now: datetime | None = None) -> DlqUpkeepReport:
        """Run one DLQ upkeep pass now (auto-retry, max age, max entries).

        ``now``: the instant entries' ages and auto-retry schedules are judged
        at (a test moves time with it; ``None``, the default, is the database
        clock)."""
        return await dlq_upkeep_once(self.ctx, now=now)
