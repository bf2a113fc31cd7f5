"""Leadership with a lease row: ``INSERT ... ON CONFLICT ... WHERE expired``.

Never session advisory locks: they break behind PgBouncer and outlive a
frozen process.  The leader renews its row every interval; a leader that
fails to renew steps down at once, and another broker takes the seat when
the row expires (``leader_ttl_ms``) on the database clock.
"""

from __future__ import annotations

import asyncio
import logging

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.db.queries import Q
from pgqueue.errors import PgQueueError
from pgqueue.manager.sessions import BrokerSession
from pgqueue.service import Service

__all__ = ["LeaderElector"]

log = logging.getLogger("pgqueue.leader")


class LeaderElector(Service):
    """Tries to hold the ``maintenance`` seat of a namespace."""

    name = "leader-elector"

    def __init__(
        self, db: Database, config: Config, session: BrokerSession, seat: str = "maintenance"
    ) -> None:
        super().__init__()
        self._db = db
        self._config = config
        self._session = session
        self.seat = seat
        self.is_leader = asyncio.Event()
        self.changed = asyncio.Event()

    async def attempt(self) -> bool:
        """One election round; True when this session holds the seat."""
        if self._session.fenced.is_set():
            self._set(False)
            return False
        try:
            row = await self._db.fetchrow(
                Q.leader_attempt_elect,
                namespace=self._config.namespace,
                seat=self.seat,
                session_id=self._session.session_id,
                broker_id=self._session.broker_id,
                leader_ttl_ms=self._config.leader_ttl_ms,
            )
        except PgQueueError as exc:
            log.warning("leader election failed: %s", exc)
            row = None
        self._set(row is not None)
        return row is not None

    def _set(self, leading: bool) -> None:
        if leading != self.is_leader.is_set():
            log.info(
                "broker %s %s leader of %s",
                self._session.broker_id,
                "became" if leading else "is no longer",
                self.seat,
            )
            if leading:
                self.is_leader.set()
            else:
                self.is_leader.clear()
            self.changed.set()

    async def run(self) -> None:
        interval = self._config.leader_ttl_ms / 3 / 1000
        await self.attempt()
        self.started.set()
        while True:
            await asyncio.sleep(interval)
            await self.attempt()

    async def resign(self) -> None:
        await self.stop()
        if self.is_leader.is_set():
            try:
                await self._db.execute(
                    Q.leader_resign,
                    namespace=self._config.namespace,
                    seat=self.seat,
                    session_id=self._session.session_id,
                )
            finally:
                self._set(False)
