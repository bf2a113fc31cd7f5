"""The parts ``PostgresQueueManager.start()`` builds, as factories a caller may replace.

The engine builds its broker session and its LISTEN connection (the notifier)
from these factories, and the upkeep that runs beside it from
``maintenance``, which the engine knows only as a :class:`Maintenance`: it
starts it after the session and stops it before the session ends.  What the
upkeep is (leader election, reaper, retention, ...) is decided by the
composition root, :mod:`pgqueue.runtime`; the engine imports none of it.

    parts = EngineParts(notifier=PollingNotifier)   # a test's own notifier
    manager = PostgresQueueManager(config, parts=parts)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.manager.context import EngineContext
from pgqueue.manager.notifier import Notifier
from pgqueue.manager.sessions import BrokerSession
from pgqueue.service import Service

__all__ = [
    "EngineParts",
    "Maintenance",
    "MaintenanceFactory",
    "NotifierFactory",
    "SessionFactory",
]


class Maintenance(Protocol):
    """The long-lived upkeep started with the engine (see :mod:`pgqueue.maintenance`)."""

    def services(self) -> list[Service]:
        """Its supervised services, for health and metrics."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None:
        """Stop every service and give up what it holds (a leader seat)."""
        ...


SessionFactory = Callable[[Database, Config], BrokerSession]
NotifierFactory = Callable[[Database, Config], Notifier]
MaintenanceFactory = Callable[[EngineContext], Maintenance]


@dataclass(frozen=True, slots=True)
class EngineParts:
    """How the engine builds its session, its notifier and its maintenance (none)."""

    session: SessionFactory = BrokerSession
    notifier: NotifierFactory = Notifier
    maintenance: MaintenanceFactory | None = None
