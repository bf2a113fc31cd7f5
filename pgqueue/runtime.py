"""The composition root: the engine wired with the maintenance it runs beside.

:class:`~pgqueue.manager.engine.QueueEngine` knows queue semantics and
nothing of maintenance; :mod:`pgqueue.maintenance` knows leader election,
the reaper and the leader's upkeep.  :class:`PostgresQueueManager` puts them
together: its engine starts :class:`~pgqueue.maintenance.services.MaintenanceServices`
when ``Config.run_maintenance`` is on (the default), and it offers the
maintenance passes on demand (:class:`~pgqueue.maintenance.ops.MaintenanceOps`).
The broker and the SDK's embedded transport run this class; dependencies
point one way: runtime → maintenance → engine → storage.

    async with PostgresQueueManager.connect(dsn, namespace="app") as m:
        job_id = await m.push("emails", "welcome", {"to": "a@example.com"})
        [claim] = await m.pull_batch("emails", 1, owner="w1", lock_ttl_ms=30_000)
        await m.ack(claim.id, claim.token, {"sent": True})
"""

from __future__ import annotations

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.maintenance.ops import MaintenanceOps
from pgqueue.maintenance.services import MaintenanceServices
from pgqueue.manager.engine import QueueEngine
from pgqueue.manager.parts import EngineParts

__all__ = ["PostgresQueueManager", "engine_parts"]


def engine_parts(config: Config) -> EngineParts:
    """The parts of a broker's engine: maintenance when ``config`` asks for it."""
    return EngineParts(maintenance=MaintenanceServices if config.run_maintenance else None)


class PostgresQueueManager(MaintenanceOps, QueueEngine):
    """The queue engine on PostgreSQL with its maintenance (see the module docstring).

    ``parts`` replaces how the engine builds its session, notifier and
    maintenance (:class:`~pgqueue.manager.parts.EngineParts`); by default
    they follow ``config`` (:func:`engine_parts`).
    """

    def __init__(
        self, config: Config, db: Database | None = None, *, parts: EngineParts | None = None
    ) -> None:
        super().__init__(config, db, parts=parts or engine_parts(config))
