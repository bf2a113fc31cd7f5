"""bunqueue's WebSocket API: ``/ws`` (every queue) and ``/ws/queues/{queue}``.

A text message is one JSON command, answered on the socket with the TCP
answer as JSON (same handlers, same ``reqId``): ``{"cmd": "PUSH", "queue":
"emails", "data": {...}, "reqId": "1"}``.  Two commands are the socket's own:

* ``{"cmd": "Subscribe", "events": ["job:*", "stats:snapshot", "queue:*"]}``
  adds patterns (``*`` everything, ``<prefix>:*`` a family, or one of
  bunqueue's event names) and answers ``{ok, subscribed, reqId}``; an unknown
  name is refused (``Invalid: <names>``).
* ``{"cmd": "Unsubscribe", "events": [...]}`` removes them (none: all).

A subscribed socket gets ``{"event": "job:completed", "ts": <ms>, "data":
{queue, jobId, ...}}`` for the feed's frames that match
(:mod:`pgqueue.server.http.feed`: job, queue and DLQ events, ``queue:counts``,
``stats:snapshot``, ``health:status``).  A socket that never subscribed gets
every job event of its queues in the TCP event shape (``{eventType, queue,
jobId, timestamp, ...}``), as bunqueue's legacy clients do.

Auth: with tokens set, the upgrade needs ``Authorization: Bearer <token>``
(refused with 401 otherwise, as bunqueue).  When the socket closes, the jobs
pulled on it go back to waiting and its worker registrations end, as for a
TCP connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from pgqueue import jsontext
from pgqueue.errors import AuthError, PgQueueError
from pgqueue.server.dispatch import dispatch
from pgqueue.server.http.auth import authenticate
from pgqueue.server.http.feed import Feed, Frame
from pgqueue.server.http.jsonio import dumps
from pgqueue.server.request import ClientState
from pgqueue.vocabulary.names import validate_queue_name

if TYPE_CHECKING:
    from pgqueue.server.http.app import HttpState

__all__ = ["EVENT_NAMES", "WS_PATHS", "matches", "serve_socket"]

log = logging.getLogger("pgqueue.http")

WS_PATHS = ("/ws", "/ws/queues/{queue}")
MAX_BACKLOG = 10_000
MAX_COMMANDS_IN_FLIGHT = 64

_FAMILIES: dict[str, tuple[str, ...]] = {
    "job": (
        "pushed", "active", "completed", "failed", "removed", "promoted", "progress",
        "delayed", "stalled", "retried", "discarded", "priority-changed", "data-updated",
        "delay-changed", "timeout", "lock-expired", "deduplicated", "waiting-children",
        "dependencies-resolved", "moved-to-delayed", "expired",
    ),
    "queue": (
        "created", "removed", "paused", "resumed", "drained", "cleaned", "obliterated",
        "counts", "idle", "threshold",
    ),
    "dlq": ("added", "retried", "retry-all", "purged", "auto-retried", "expired"),
    "flow": ("completed", "failed"),
    "cron": ("created", "updated", "deleted", "fired", "missed", "skipped"),
    "worker": (
        "connected", "disconnected", "heartbeat", "idle", "removed-stale", "overloaded",
        "error",
    ),
    "ratelimit": ("set", "cleared", "hit", "rejected"),
    "concurrency": ("set", "cleared", "rejected"),
    "webhook": ("added", "removed", "fired", "failed", "enabled", "disabled"),
    "batch": ("pushed", "pulled"),
    "client": ("connected", "disconnected"),
    "auth": ("failed",),
    "cleanup": ("orphans-removed", "stale-deps-removed"),
    "health": ("status",),
    "stats": ("snapshot",),
    "storage": ("status", "backup-started", "backup-completed", "backup-failed",
                "size-warning"),
    "server": ("started", "shutdown", "recovered", "memory-warning"),
    "memory": ("compacted",),
    "config": ("stall-changed", "dlq-changed"),
}  # fmt: skip
EVENT_NAMES = frozenset(
    {"*"}
    | {f"{family}:*" for family in _FAMILIES}
    | {f"{family}:{name}" for family, names in _FAMILIES.items() for name in names}
)
"""The patterns a ``Subscribe`` may name: bunqueue's event names and wildcards
(pgqueue emits the job, queue, DLQ, counts, stats and health events)."""


def matches(name: str, patterns: set[str]) -> bool:
    """Whether an event ``name`` is among ``patterns`` (``*``, ``family:*``, exact)."""
    if "*" in patterns or name in patterns:
        return True
    return f"{name.split(':', 1)[0]}:*" in patterns


class _Socket:
    """One WebSocket client: its commands, its subscriptions, its feed."""

    def __init__(self, state: HttpState, websocket: WebSocket, client: ClientState) -> None:
        self.state = state
        self.websocket = websocket
        self.client = client
        self.client.send = self._event_frame
        self.patterns: set[str] | None = None
        self.outgoing: asyncio.Queue[bytes] = asyncio.Queue()
        self.slots = asyncio.Semaphore(MAX_COMMANDS_IN_FLIGHT)
        self.commands: set[asyncio.Task[None]] = set()

    def post(self, message: Any, *, droppable: bool = False) -> None:
        if droppable and self.outgoing.qsize() >= MAX_BACKLOG:
            return  # a slow reader misses events, never answers (bunqueue drops too)
        self.outgoing.put_nowait(dumps(message))

    def _event_frame(self, frame: dict[str, Any]) -> None:
        """A ``SubscribeEvents`` frame (the TCP command, also served here)."""
        self.post(frame, droppable=True)

    def deliver(self, frame: Frame) -> None:
        if frame.name == "heartbeat":
            return
        if self.patterns is None:
            if frame.legacy is not None and frame.name.startswith("job:"):
                self.post(frame.legacy, droppable=True)
            return
        if matches(frame.name, self.patterns):
            ts = frame.timestamp if frame.timestamp is not None else _now_ms()
            self.post({"event": frame.name, "ts": ts, "data": frame.data}, droppable=True)

    def subscription_command(self, msg: dict[str, Any]) -> None:
        req_id = msg.get("reqId")
        events = msg.get("events")
        subscribe = msg.get("cmd") == "Subscribe"
        if subscribe and (not isinstance(events, list) or not events):
            self.post({"ok": False, "error": "events must be a non-empty array", "reqId": req_id})
            return
        given: list[Any] = events if isinstance(events, list) else []
        names = [e for e in given if isinstance(e, str)]
        if subscribe:
            invalid = [str(e) for e in given if not isinstance(e, str) or e not in EVENT_NAMES]
            if invalid:
                self.post({"ok": False, "error": f"Invalid: {', '.join(invalid)}", "reqId": req_id})
                return
            self.patterns = (self.patterns or set()) | set(names)
        elif self.patterns is not None:
            if names:
                self.patterns -= set(names)
            else:
                self.patterns.clear()
        self.post({"ok": True, "subscribed": sorted(self.patterns or ()), "reqId": req_id})

    async def command(self, msg: dict[str, Any]) -> None:
        async with self.slots:
            answer = await dispatch(self.state.broker, self.client, msg)
        self.post(answer)

    def received(self, text: str) -> None:
        try:
            msg = jsontext.loads(text)
        except ValueError:
            self.post({"ok": False, "error": "Invalid JSON"})
            return
        if not isinstance(msg, dict):
            self.post({"ok": False, "error": "Invalid command"})
            return
        if msg.get("cmd") in ("Subscribe", "Unsubscribe"):
            self.subscription_command(msg)
            return
        task = asyncio.create_task(self.command(msg), name="pgqueue:ws-command")
        self.commands.add(task)
        task.add_done_callback(self.commands.discard)

    async def read(self) -> None:
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None and message.get("bytes") is not None:
                text = message["bytes"].decode("utf-8", "replace")
            if text is not None:
                self.received(text)

    async def write(self) -> None:
        while True:
            await self.websocket.send_text((await self.outgoing.get()).decode())

    async def pump(self, feed: Feed) -> None:
        while True:
            self.deliver(await feed.next())


def _now_ms() -> float:
    return time.time() * 1000.0


async def _refuse(websocket: WebSocket, status: int, message: str) -> None:
    response = Response(
        dumps({"ok": False, "error": message}), status, media_type="application/json"
    )
    try:
        await websocket.send_denial_response(response)
    except RuntimeError:  # the server cannot answer a handshake with HTTP
        await websocket.close(code=1008)


async def serve_socket(state: HttpState, websocket: WebSocket) -> None:
    """Serve one WebSocket connection until either side closes it."""
    broker = state.broker
    if state.draining:
        await _refuse(websocket, 503, "Broker is draining, retry on another broker")
        return
    try:
        client = authenticate(broker, websocket.headers, "ws")
    except AuthError as exc:
        await _refuse(websocket, 401, exc.message)
        return
    host = broker.for_namespace(client.namespace)
    queue = websocket.path_params.get("queue")
    try:
        if queue is not None:
            validate_queue_name(queue)
        subscription = await host.manager.subscribe_events(queue)
    except PgQueueError as exc:
        await _refuse(websocket, 400, exc.message)
        return
    await websocket.accept()
    socket = _Socket(state, websocket, client)
    feed = Feed(
        host,
        subscription,
        keepalive=broker.settings.sse_keepalive_ms / 1000,
        connections=lambda: {"ws": state.connections["websocket"]},
    )
    state.opened("websocket")
    closing = state.stream_closing(client)
    tasks = [
        asyncio.create_task(socket.read(), name="pgqueue:ws-read"),
        asyncio.create_task(socket.write(), name="pgqueue:ws-write"),
        asyncio.create_task(socket.pump(feed), name="pgqueue:ws-feed"),
        asyncio.create_task(closing.wait(), name="pgqueue:ws-closing"),
    ]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            failure = None if task.cancelled() else task.exception()
            if failure is not None and not isinstance(
                failure, WebSocketDisconnect | PgQueueError | OSError
            ):
                log.error("WebSocket connection failed", exc_info=failure)
    finally:
        for task in [*tasks, *socket.commands]:
            task.cancel()
        await asyncio.gather(*tasks, *socket.commands, return_exceptions=True)
        await feed.close()
        socket.client.closed = True
        await broker.client_closed(socket.client)
        state.stream_ended(closing)
        state.closed("websocket")
        with contextlib.suppress(Exception):
            await websocket.close()
