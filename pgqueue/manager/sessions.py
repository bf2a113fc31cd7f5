"""Broker sessions: who may claim and renew, fenced on the database clock.

Each manager registers ``(namespace, broker_id, session_id)`` with the
process that holds it (:mod:`pgqueue.manager.liveness`).  A live duplicate of
the broker id is refused; a stale one (no heartbeat for ``session_stale_ms``),
or one whose process of this host is provably gone (kill -9), is taken over.
The heartbeat renews the row every ``session_heartbeat_ms``; when it finds
the row gone or owned by another session the broker is *fenced*: claims,
renewals and completions through it are refused in SQL (each statement
checks the session) and here.
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
from pgqueue.manager.liveness import ProcessIdentity, holder_status, this_process
from pgqueue.service import Service

__all__ = ["BrokerSession", "default_broker_id"]

log = logging.getLogger("pgqueue.sessions")

REGISTER_POLL_S = 0.5  # how often a waiting registration looks at the holder again


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
        """Take the broker id, or raise :class:`BrokerIdInUse`.

        Free or stale: taken at once.  Held by a process of this host that is
        provably gone (kill -9): taken over at once.  Held by a live process of
        this host: refused at once.  Held by a process this host cannot check:
        wait while it stays silent (it goes stale after ``session_stale_ms``),
        refused as soon as it renews its heartbeat.
        """
        me = this_process()
        seen: tuple[str, float] | None = None
        while True:
            row = await self._db.fetchrow(
                Q.session_register,
                namespace=self.namespace,
                broker_id=self.broker_id,
                session_id=self.session_id,
                stale_ms=self._config.session_stale_ms,
                hostname=me.hostname,
                pid=me.pid,
                host_key=me.host_key,
                process_start=me.start,
            )
            if row is not None:
                return
            holder = await self._db.fetchrow(
                Q.session_holder_get, namespace=self.namespace, broker_id=self.broker_id
            )
            if holder is None:
                continue  # ended meanwhile: register again
            process = ProcessIdentity(
                holder["hostname"], holder["pid"], holder["host_key"], holder["process_start"]
            )
            status = holder_status(me, process)
            if status == "gone":
                if await self._take_over(holder["session_id"], me):
                    log.warning(
                        'broker id "%s": took over the session of process %s on %s, which is '
                        "gone (last heartbeat %.0f ms ago)",
                        self.broker_id,
                        process.pid,
                        process.hostname,
                        holder["silent_ms"],
                    )
                    return
                continue
            renewed = seen is not None and seen != (holder["session_id"], holder["heartbeat_at"])
            if status == "alive" or renewed:
                raise BrokerIdInUse(
                    f'broker id "{self.broker_id}" is already active in namespace '
                    f'"{self.namespace}" (process {process.pid} on {process.hostname}, '
                    f"heartbeat {holder['silent_ms']:.0f} ms ago); pick another --broker-id "
                    "or stop that broker"
                )
            if seen is None:
                log.warning(
                    'broker id "%s" is held by process %s on %s, which this host cannot '
                    "check (last heartbeat %.0f ms ago); waiting up to %d ms for it to go "
                    "stale (refused if it renews)",
                    self.broker_id,
                    process.pid,
                    process.hostname,
                    holder["silent_ms"],
                    self._config.session_stale_ms,
                )
            seen = (holder["session_id"], holder["heartbeat_at"])
            until_stale = self._config.session_stale_ms - holder["silent_ms"]
            await asyncio.sleep(max(0.01, min(REGISTER_POLL_S, until_stale / 1000 + 0.01)))

    async def _take_over(self, old_session: str, me: ProcessIdentity) -> bool:
        row = await self._db.fetchrow(
            Q.session_take_over,
            namespace=self.namespace,
            broker_id=self.broker_id,
            session_id=self.session_id,
            old_session_id=old_session,
            hostname=me.hostname,
            pid=me.pid,
            host_key=me.host_key,
            process_start=me.start,
        )
        return row is not None

    async def heartbeat(self) -> None:
        """Renew now; on finding the session gone, fence this broker."""
        row = await self._db.fetchrow(
            Q.session_heartbeat,
            namespace=self.namespace,
            broker_id=self.broker_id,
            session_id=self.session_id,
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
            raise self.fenced_error()

    def confirm_live(self, live: bool) -> None:
        """``live``: what a statement just read of this session's row
        (``session_live``); a row gone fences this broker and raises."""
        if not live:
            raise self.fenced_error()

    def fenced_error(self) -> BrokerFenced:
        """Fence this broker (its session was taken over) and return the error to raise."""
        self.fenced.set()
        return BrokerFenced(f'broker "{self.broker_id}" is fenced: its session was taken over')

    async def run(self) -> None:
        if not self.started.is_set():  # a restart keeps the session it registered
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
            await self._db.execute(
                Q.session_end,
                namespace=self.namespace,
                broker_id=self.broker_id,
                session_id=self.session_id,
            )
