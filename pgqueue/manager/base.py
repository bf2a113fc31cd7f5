"""The part of the manager every group of operations builds on.

Operations live in mixins, one module per concern (control, DLQ, ...), each a
subclass of :class:`ManagerBase`; :class:`~pgqueue.manager.engine.QueueEngine`
combines them (and :class:`pgqueue.runtime.PostgresQueueManager` adds the
maintenance operations).  A mixin method only forwards to the flow functions
of its module, which take an :class:`~pgqueue.manager.context.EngineContext`
and validate their arguments.
"""

from __future__ import annotations

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.errors import PgQueueError
from pgqueue.manager.context import EngineContext
from pgqueue.manager.notifier import Notifier
from pgqueue.manager.parts import Maintenance
from pgqueue.manager.sessions import BrokerSession

__all__ = ["ManagerBase"]


class ManagerBase:
    """Holds the settings and, once started, the engine context and its maintenance."""

    def __init__(self, config: Config) -> None:
        self.config = config.validate()
        self._ctx: EngineContext | None = None
        self.maintenance: Maintenance | None = None

    @property
    def ctx(self) -> EngineContext:
        if self._ctx is None:
            raise PgQueueError("the manager is not started: call start() or use connect()")
        return self._ctx

    @property
    def db(self) -> Database:
        return self.ctx.db

    @property
    def broker_id(self) -> str:
        return self.ctx.broker_id

    @property
    def session(self) -> BrokerSession:
        return self.ctx.session

    @property
    def notifier(self) -> Notifier:
        return self.ctx.notifier

    @property
    def namespace(self) -> str:
        return self.config.namespace
