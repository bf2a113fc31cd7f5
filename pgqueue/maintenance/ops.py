"""The manager's maintenance operations: one pass of an upkeep, run now.

The services run these passes on their own every interval (see
:mod:`pgqueue.maintenance.services`); these methods run one at once, for
tests, the CLI and bunqueue's commands.  The services themselves are read
here too (``elector``, ``reaper``, ...): ``None`` when the manager runs no
maintenance.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Generic, TypeVar, overload

from pgqueue.maintenance.cron_ticker import CronTicker, TickReport, tick_once
from pgqueue.maintenance.dlq_upkeep import DlqUpkeep, DlqUpkeepReport, dlq_upkeep_once
from pgqueue.maintenance.jobs_vacuum import JobsVacuum
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

S = TypeVar("S")


class _Service(Generic[S]):
    """One of the maintenance services, read off the manager like a property:
    ``None`` when the manager runs no (standard) maintenance."""

    def __init__(self, part: Callable[[MaintenanceServices], S]) -> None:
        self._part = part

    @overload
    def __get__(self, manager: None, owner: type) -> _Service[S]: ...
    @overload
    def __get__(self, manager: MaintenanceOps, owner: type | None = None) -> S | None: ...
    def __get__(
        self, manager: MaintenanceOps | None, owner: type | None = None
    ) -> _Service[S] | S | None:
        if manager is None:
            return self  # read off the class, as a property is
        upkeep = manager.upkeep
        return None if upkeep is None else self._part(upkeep)


class MaintenanceOps(ManagerBase):
    """One maintenance pass on demand, and the maintenance services once started."""

    @property
    def upkeep(self) -> MaintenanceServices | None:
        """The maintenance services this manager started (``None`` without maintenance)."""
        upkeep = self.maintenance
        return upkeep if isinstance(upkeep, MaintenanceServices) else None

    elector: _Service[LeaderElector] = _Service(lambda upkeep: upkeep.elector)
    reaper: _Service[Reaper] = _Service(lambda upkeep: upkeep.reaper)
    cron_ticker: _Service[CronTicker] = _Service(lambda upkeep: upkeep.cron)
    dlq_upkeep: _Service[DlqUpkeep] = _Service(lambda upkeep: upkeep.dlq_upkeep)
    retention: _Service[Retention] = _Service(lambda upkeep: upkeep.retention)
    jobs_vacuum: _Service[JobsVacuum] = _Service(lambda upkeep: upkeep.jobs_vacuum)
    webhook_delivery: _Service[WebhookDelivery] = _Service(lambda upkeep: upkeep.webhook_delivery)

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
