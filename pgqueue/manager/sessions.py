"""Broker sessions: who may claim and renew, fenced on the database clock.

Each manager registers ``(namespace, broker_id, session_id)``.  A live
duplicate of the broker id is refused; a stale one (no heartbeat for
``session_stale_ms``) is taken over.  The heartbeat renews the row every
``session_heartbeat_ms``; when it finds the row gone or owned by another
session the broker is *fenced*: claims, renewals and completions through it
are refused in SQL (each statement checks the session) and here.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.db.queries import Q
from pgqueue.errors import BrokerFenced, BrokerIdInUse, PgQueueError
from pgqueue.ids import uuid7
from pgqueue.service import Service

__all__ = ["BrokerSession", "default_broker_id"]

log = logging.getLogger("pgqueue.sessions")


def default_broker_id() -> str:
    """``hostname:pid:random``, unique enough for an unnamed broker."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid7()[-12:]}"


class BrokerSession(Service):
    """Registers this broker and keeps its session alive."""

    name = "broker-session"

    def __init__(self, db: Database, config: Config) -> None:
        super().__init__()
        self._db = db
        self._config = config
        self.broker_id = config.broker_id or default_broker_id()
        self.session_id = uuid7()
        self.fenced = asyncio.Event()
        self.last_error: PgQueueError | None = None

    @property
    def namespace(self) -> str:
        return self._config.namespace

    async def register(self) -> None:
        """Take the broker id, or raise :class:`BrokerIdInUse`."""
        row = await self._db.fetchrow(
            Q.session_register,
            self.namespace,
            self.broker_id,
            self.session_id,
            self._config.session_stale_ms,
            socket.gethostname(),
            os.getpid(),
        )
        if row is None:
            raise BrokerIdInUse(
                f'broker id "{self.broker_id}" is already active in namespace '
                f'"{self.namespace}"; pick another --broker-id or wait '
                f"{self._config.session_stale_ms} ms for the old session to go stale"
            )

    async def heartbeat(self) -> None:
        """Renew now; on finding the session gone, fence this broker."""
        row = await self._db.fetchrow(
            Q.session_heartbeat, self.namespace, self.broker_id, self.session_id
        )
        if row is None:
            if not self.fenced.is_set():
                log.error(
                    "broker %s: session %s was taken over; fenced", self.broker_id, self.session_id
                )
            self.fenced.set()

    def check(self) -> None:
        """Raise :class:`BrokerFenced` when this session is no longer live."""
        if self.fenced.is_set():
            raise BrokerFenced(f'broker "{self.broker_id}" is fenced: its session was taken over')

    async def run(self) -> None:
        await self.register()
        self.started.set()
        interval = self._config.session_heartbeat_ms / 1000
        while not self.fenced.is_set():
            await asyncio.sleep(interval)
            try:
                await self.heartbeat()
                self.last_error = None
            except PgQueueError as exc:
                self.last_error = exc
                log.warning("broker %s: session heartbeat failed: %s", self.broker_id, exc)

    async def end(self) -> None:
        """Stop the heartbeat and delete the session row (graceful shutdown)."""
        await self.stop()
        if not self.fenced.is_set():
            await self._db.execute(Q.session_end, self.namespace, self.broker_id, self.session_id)
