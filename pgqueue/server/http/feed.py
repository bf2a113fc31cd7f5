"""bunqueue's dashboard feed: job events by dashboard name, counts, snapshots.

What bunqueue's ``/events`` stream and ``/ws`` socket carry, built from one
outbox subscription (so every broker's changes arrive, in commit order):

* a job event as ``job:<type>`` (``pulled`` is ``job:active``) with flat data
  ``{queue, jobId, timestamp, error?, progress?, prev?, delay?}``; queue-level
  events as ``queue:paused`` / ``queue:resumed`` / ``queue:drained`` /
  ``queue:cleaned`` / ``queue:obliterated`` ``{queue, timestamp, ...}``; a
  job entering the DLQ as ``dlq:added {queue, jobId, reason, timestamp}``;
* ``queue:counts {queue, waiting, prioritized, active, completed, failed,
  delayed}`` shortly after events of a queue (coalesced: one read per queue
  per :data:`COUNTS_DELAY`);
* ``stats:snapshot`` every :data:`STATS_INTERVAL` and ``health:status`` every
  :data:`HEALTH_INTERVAL` (both also at once when the feed opens);
* a heartbeat every ``keepalive`` seconds (the SSE stream writes a comment).

A frame of a job event keeps the event's resume token (the SSE ``id:``) and
its TCP event map (``legacy``: what a WebSocket client that never subscribed
gets, as bunqueue sends its raw events).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgqueue.errors import PgQueueError
from pgqueue.manager.outbox import Event, Subscription
from pgqueue.server import overview
from pgqueue.server.wire import event_to_wire

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost

__all__ = ["COUNTS_DELAY", "HEALTH_INTERVAL", "STATS_INTERVAL", "Feed", "Frame", "dashboard_event"]

log = logging.getLogger("pgqueue.http")

STATS_INTERVAL = 5.0
HEALTH_INTERVAL = 10.0
COUNTS_DELAY = 0.1
QUEUE_EVENTS = {
    "paused": "queue:paused",
    "resumed": "queue:resumed",
    "drained": "queue:drained",
    "cleaned": "queue:cleaned",
    "obliterated": "queue:obliterated",
}
JOB_EVENTS = {"pulled": "job:active"}
FLAT_KEYS = ("error", "progress", "prev", "delay")
COUNT_KEYS = ("waiting", "prioritized", "active", "completed", "failed", "delayed")


@dataclass(frozen=True, slots=True)
class Frame:
    """One message of the feed; ``name`` ``heartbeat`` carries nothing."""

    name: str
    data: dict[str, Any]
    resume: str | None = None
    legacy: dict[str, Any] | None = None
    timestamp: float | None = None


def dashboard_event(event: Event) -> Frame | None:
    """The dashboard frame of one outbox event (None: the dashboard has no name for it)."""
    if event.type == "dlq":
        data = {"queue": event.queue, "jobId": event.job_id or "", "timestamp": event.timestamp}
        reason = event.payload.get("reason")
        if isinstance(reason, str):
            data["reason"] = reason
        return Frame("dlq:added", data, event.resume, None, event.timestamp)
    wire = event_to_wire(event)
    if wire is None:
        return None
    body: dict[str, Any] = wire["event"]
    kind = body["eventType"]
    if kind == "gap" or not math.isfinite(event.timestamp):
        return None
    data = {"queue": body["queue"], "jobId": body["jobId"], "timestamp": body["timestamp"]}
    name = QUEUE_EVENTS.get(kind)
    if name is not None:
        del data["jobId"]
        for key in ("count", "reason"):
            if key in body:
                data[key] = body[key]
    else:
        name = JOB_EVENTS.get(kind, f"job:{kind}")
    for key in FLAT_KEYS:
        if key in body:
            data[key] = body[key]
    return Frame(name, data, event.resume, body, event.timestamp)


class Feed:
    """The frames of one subscriber, in order (see the module docstring).

    :meth:`next` may be awaited in a task that outlives one ``asyncio.wait``:
    an event being read stays in its own task between calls.
    """

    def __init__(
        self,
        broker: BrokerHost,
        subscription: Subscription,
        *,
        keepalive: float,
        connections: Callable[[], dict[str, int]],
    ) -> None:
        self.broker = broker
        self.subscription = subscription
        self.keepalive = keepalive
        self.connections = connections
        now = time.monotonic()
        self._stats_at = now
        self._health_at = now
        self._beat_at = now + keepalive
        self._counts_at = math.inf
        self._pending: set[str] = set()
        self._ready: collections.deque[Frame] = collections.deque()
        self._upcoming: asyncio.Task[Event] | None = None

    async def next(self) -> Frame:
        while True:
            if self._ready:
                return self._ready.popleft()
            now = time.monotonic()
            deadline = min(self._stats_at, self._health_at, self._beat_at, self._counts_at)
            if now >= deadline:
                await self._due(now)
                continue
            if self._upcoming is None:
                self._upcoming = asyncio.create_task(
                    self.subscription.get(), name="pgqueue:feed-next"
                )
            done, _ = await asyncio.wait({self._upcoming}, timeout=deadline - now)
            if not done:
                continue
            event = self._upcoming.result()
            self._upcoming = None
            frame = dashboard_event(event)
            if frame is None:
                continue
            if event.queue and event.type not in ("obliterated",):
                self._pending.add(event.queue)
                self._counts_at = min(self._counts_at, time.monotonic() + COUNTS_DELAY)
            return frame

    async def _due(self, now: float) -> None:
        if now >= self._counts_at:
            self._counts_at = math.inf
            queues, self._pending = sorted(self._pending), set()
            for queue in queues:
                with contextlib.suppress(PgQueueError):
                    counts = (await self.broker.manager.get_counts(queue)).as_dict()
                    self._ready.append(
                        Frame(
                            "queue:counts", {"queue": queue, **{k: counts[k] for k in COUNT_KEYS}}
                        )
                    )
        if now >= self._stats_at:
            self._stats_at = now + STATS_INTERVAL
            try:
                self._ready.append(
                    Frame("stats:snapshot", await overview.stats_snapshot(self.broker))
                )
            except PgQueueError as exc:  # no stale figures: the next tick tries again
                log.debug("stats snapshot not read: %s", exc)
        if now >= self._health_at:
            self._health_at = now + HEALTH_INTERVAL
            self._ready.append(
                Frame("health:status", overview.health_snapshot(self.broker, self.connections()))
            )
        if now >= self._beat_at:
            self._beat_at = now + self.keepalive
            self._ready.append(Frame("heartbeat", {}))

    async def close(self) -> None:
        self.subscription.close()
        if self._upcoming is not None:
            self._upcoming.cancel()
            await asyncio.gather(self._upcoming, return_exceptions=True)
            self._upcoming = None
