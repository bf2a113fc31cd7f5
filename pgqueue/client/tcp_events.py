"""Queue events over TCP: a dedicated connection per stream, resumed after a drop.

Each stream opens its own connection (never one of the pool's: a
subscription belongs to its connection, bunqueue §1.3) and sends
``SubscribeEvents {queue, after}``.  Every event frame carries ``eventId``, a
resume cursor (a pgqueue extension); when the connection drops, the stream
reconnects to the next reachable broker (same rotation and backoff as the
pool) and subscribes again ``after`` the last cursor it delivered, so the
broker replays exactly what was missed.  Cursors already delivered are
dropped if they come again.  A stream that has not delivered any event yet
resumes from the broker's position when it reconnects (unless the broker
told it where it started: a ``cursor`` in the SubscribeEvents answer is used
when present).  A keep-alive ``Ping`` every ``ping_interval`` seconds drops a
connection whose broker stopped answering.

Like the embedded transport's, a stream first yields a ``subscribed`` marker
(no job; its cursor is the start position when the broker tells it) once
its subscription exists; reconnects after that are not announced.

Frames are mapped back to the engine's event names and payload keys (the
inverse of :func:`pgqueue.server.wire.event_to_wire`): ``pulled`` is
``active``; a completed event's ``data`` is ``returnvalue``, a failed event's
``error`` is ``failedReason``; a queue-level event's ``__queue__:<q>`` job id
is ``""``.  Payload keys that the wire does not carry are absent.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

from pgqueue.client.connection import Connection
from pgqueue.client.pool import ConnectionPool
from pgqueue.client.remote_errors import remote_error
from pgqueue.client.transport import TransportEvent
from pgqueue.errors import CommandTimeout, ConnectionLost, PgQueueError

__all__ = ["EventFeeds", "event_from_wire"]

log = logging.getLogger("pgqueue.client")

SEEN_CURSORS = 10_000
SUBSCRIBED = "subscribed"
"""The marker a stream yields once its first subscription exists (as the embedded
transport does): every event from then on is delivered."""
_ENVELOPE = frozenset({"eventType", "queue", "jobId", "timestamp", "eventId"})
_ENGINE_TYPES = {"pulled": "active"}
_RENAMED = {("completed", "data"): "returnvalue", ("failed", "error"): "failedReason"}


def event_from_wire(frame: dict[str, Any]) -> TransportEvent | None:
    """The event of a ``{type: "event", event}`` frame; None for anything else."""
    event = frame.get("event")
    if frame.get("type") != "event" or not isinstance(event, dict):
        return None
    wire_type, queue, job_id = event.get("eventType"), event.get("queue"), event.get("jobId")
    timestamp, cursor = event.get("timestamp"), event.get("eventId")
    if not (
        isinstance(wire_type, str)
        and isinstance(queue, str)
        and isinstance(job_id, str)
        and isinstance(cursor, str)
        and isinstance(timestamp, int | float)
        and math.isfinite(timestamp)
    ):
        log.warning("ignoring a malformed event frame: %r", frame)
        return None
    if job_id.startswith("__queue__:"):
        job_id = ""
    body: dict[str, Any] = {
        _RENAMED.get((wire_type, str(key)), str(key)): value
        for key, value in event.items()
        if key not in _ENVELOPE
    }
    return TransportEvent(
        event_type=_ENGINE_TYPES.get(wire_type, wire_type),
        queue=queue,
        job_id=job_id,
        timestamp=float(timestamp),
        body=body,
        cursor=cursor,
    )


class EventFeeds:
    """The event streams of one transport (closed with it)."""

    def __init__(self, pool: ConnectionPool, *, ping_interval: float = 30.0) -> None:
        self.pool = pool
        self.ping_interval = ping_interval
        self.subscriptions = 0
        self._active: set[Connection] = set()
        self._closed = False

    async def close(self) -> None:
        self._closed = True
        for conn in list(self._active):
            await conn.close()

    async def _subscribe(
        self, queue: str, cursor: str | None
    ) -> tuple[Connection, str | None] | None:
        """A connection subscribed to ``queue`` after ``cursor`` and the position the
        broker says it started from (if it says); None once the feeds are closed."""
        failures = 0
        while not self._closed:
            try:
                conn = await self.pool.connect_any()
            except ConnectionLost:
                failures += 1
                await asyncio.sleep(self.pool.backoff.delay(failures))
                continue
            self._active.add(conn)  # closed with the feeds from now on
            message: dict[str, Any] = {"cmd": "SubscribeEvents", "queue": queue}
            if cursor is not None:
                message["after"] = cursor
            try:
                answer = await conn.request(message, timeout=self.pool.request_timeout)
            except (ConnectionLost, CommandTimeout):
                answer = None
            except BaseException:
                await self._drop(conn)
                raise
            if self._closed:
                await self._drop(conn)
                return None
            if answer is None:
                await self._drop(conn)
                failures += 1
                await asyncio.sleep(self.pool.backoff.delay(failures))
                continue
            if not answer.get("ok"):
                await self._drop(conn)
                raise remote_error(str(answer.get("error") or "SubscribeEvents failed"))
            self.subscriptions += 1
            start = answer.get("cursor")
            return conn, start if isinstance(start, str) else None
        return None

    async def _drop(self, conn: Connection) -> None:
        self._active.discard(conn)
        await conn.close()

    async def _keepalive(self, conn: Connection) -> None:
        while not conn.closed.is_set():
            await asyncio.sleep(self.ping_interval)
            try:
                await conn.request({"cmd": "Ping"}, timeout=self.pool.connect_timeout)
            except CommandTimeout:
                log.warning("broker %s does not answer; dropping the event stream", conn.address)
                conn.abort()
            except PgQueueError:
                return

    async def stream(self, queue: str, after: str | None) -> AsyncIterator[TransportEvent]:
        """Events of ``queue`` after ``after`` (or from now), across reconnects."""
        cursor = after
        announced = False
        seen: OrderedDict[str, None] = OrderedDict()
        while True:
            subscribed = await self._subscribe(queue, cursor)
            if subscribed is None:
                return
            conn, start = subscribed
            cursor = cursor or start
            pinger = asyncio.create_task(self._keepalive(conn), name="pgqueue:events:ping")
            try:
                if not announced:
                    announced = True
                    yield TransportEvent(SUBSCRIBED, queue, "", 0.0, {}, cursor or "")
                while (frame := await conn.next_event()) is not None:
                    event = event_from_wire(frame)
                    if event is None or event.cursor in seen:
                        continue
                    seen[event.cursor] = None
                    if len(seen) > SEEN_CURSORS:
                        seen.popitem(last=False)
                    cursor = event.cursor
                    yield event
            finally:
                pinger.cancel()
                await asyncio.wait([pinger])
                await self._drop(conn)
            if self._closed:
                return
            log.info("event stream of queue %s lost broker %s; resuming", queue, conn.address)
