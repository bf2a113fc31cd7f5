"""What every engine flow needs: the database, the settings and who we are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pgqueue.config import Config
from pgqueue.db.executor import Database, Executor, Row
from pgqueue.db.queries import Query

if TYPE_CHECKING:
    from pgqueue.manager.notifier import Notifier
    from pgqueue.manager.sessions import BrokerSession

__all__ = ["EngineContext", "InNamespace"]


class InNamespace:
    """An executor bound to one namespace: it passes ``namespace=`` to every
    statement, so a call names only what differs.

        rows = await ctx.scoped.fetch(Q.dlq_list, queue=queue, offset=offset)
        row = await ctx.scope(tx).fetchrow(Q.scheduler_lock, name=name)
    """

    __slots__ = ("_executor", "namespace")

    def __init__(self, executor: Executor, namespace: str) -> None:
        self._executor = executor
        self.namespace = namespace

    async def fetch(self, query: Query, /, **params: Any) -> list[Row]:
        return await self._executor.fetch(query, namespace=self.namespace, **params)

    async def fetchrow(self, query: Query, /, **params: Any) -> Row | None:
        return await self._executor.fetchrow(query, namespace=self.namespace, **params)

    async def fetchval(self, query: Query, /, **params: Any) -> Any:
        return await self._executor.fetchval(query, namespace=self.namespace, **params)

    async def execute(self, query: Query, /, **params: Any) -> None:
        await self._executor.execute(query, namespace=self.namespace, **params)


@dataclass(slots=True)
class EngineContext:
    """Shared by the flows of one manager (admission, claim, completion, ...)."""

    db: Database
    config: Config
    session: BrokerSession
    notifier: Notifier
    # Queues whose last claim needed the planned path (a limit or groups): a hint
    # that saves the plain claim's round trip, never a rule (the SQL decides).
    planned_queues: set[str] = field(default_factory=set)
    # Claims a full rate window held back, by queue, since this manager started: the
    # throttle figure (this broker's own; others' come from their status reports).
    rate_throttled: dict[str, int] = field(default_factory=dict)
    # Queues whose registry row a committed push of this manager wrote: a single push
    # to one skips writing it again (pgqueue.manager.registry).
    registered_queues: set[str] = field(default_factory=set)

    @property
    def namespace(self) -> str:
        return self.config.namespace

    @property
    def scoped(self) -> InNamespace:
        """The pool, in this namespace (autocommit statements)."""
        return InNamespace(self.db, self.config.namespace)

    def scope(self, tx: Executor) -> InNamespace:
        """``tx`` (a transaction's executor), in this namespace."""
        return InNamespace(tx, self.config.namespace)

    @property
    def broker_id(self) -> str:
        return self.session.broker_id

    @property
    def session_id(self) -> str:
        return self.session.session_id
