"""The outbox reader: every state change, to every subscriber, once, without gaps.

``pgqueue_events`` rows are written in the transaction of the change they
describe.  One reader per manager delivers them to subscriptions in two ways:

* the **cursor path** (the truth): poll rows after the cursor ``(xid, id)``
  whose transaction is older than the snapshot's xmin, so no still-running
  transaction can later add a row behind the cursor.  No global commit lock
  (bunqueue serialises commits to order its journal; we do not).  A long
  transaction anywhere holds xmin back and so delays this path;
* the **fast path** (latency): a NOTIFY hint names the event id range a
  transaction wrote; the reader fetches those rows at once and delivers them
  "ahead" of the cursor.  The cursor path later skips them by id.

Each subscription has a *resume token*: the cursor up to which it has seen
everything, plus the ids it got ahead of it.  Resuming from a token (after a
reconnect or a broker restart) delivers exactly what was not seen.  A
subscription that falls behind (its queue is full) drops out of live delivery
and catches up from the database on its own, then rejoins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from pgqueue.config import Config
from pgqueue.db.executor import Database, Row
from pgqueue.db.queries import Q
from pgqueue.errors import PgQueueError, ValidationError
from pgqueue.manager.notifier import Notifier
from pgqueue.service import Service

__all__ = ["Cursor", "Event", "OutboxReader", "ResumeToken", "Subscription"]

log = logging.getLogger("pgqueue.outbox")

MAX_AHEAD_IN_TOKEN = 1000
MAX_AHEAD = 256  # events a subscription takes ahead of its commit-safe cursor
MAX_READER_AHEAD = 20_000
MAX_EARLIER = 100_000  # committed events a new subscription skips that the reader has not read
UNKNOWN_XID = 2**63 - 1


@dataclass(frozen=True, slots=True, order=True)
class Cursor:
    """A position in commit-safe order."""

    xid: int
    id: int

    def __str__(self) -> str:
        return f"{self.xid}:{self.id}"


@dataclass(frozen=True, slots=True)
class ResumeToken:
    """Everything up to ``cursor`` was seen, plus the events ``ahead`` of it."""

    cursor: Cursor
    ahead: frozenset[int] = frozenset()

    def __str__(self) -> str:
        text = str(self.cursor)
        if self.ahead:
            text += "+" + ",".join(str(i) for i in sorted(self.ahead))
        return text

    @classmethod
    def parse(cls, text: str) -> ResumeToken:
        """Parse ``"<xid>:<id>[+id,id,...]"``; raise :class:`ValidationError` otherwise."""
        try:
            head, _, tail = text.partition("+")
            xid, _, event_id = head.partition(":")
            ahead = frozenset(int(i) for i in tail.split(",")) if tail else frozenset()
            if len(ahead) > MAX_AHEAD_IN_TOKEN:
                raise ValueError("too many ids")
            return cls(Cursor(int(xid), int(event_id)), ahead)
        except ValueError as exc:
            raise ValidationError(f"invalid event cursor: {text[:80]!r}", field="after") from exc


@dataclass(frozen=True, slots=True)
class Event:
    """One outbox row."""

    id: int
    xid: int
    queue: str
    job_id: str | None
    type: str
    payload: dict[str, Any]
    timestamp: float
    resume: str = ""

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.xid, self.id)

    @classmethod
    def from_row(cls, row: Row) -> Event:
        payload = row["payload"]
        return cls(
            id=row["id"],
            xid=row["xid"],
            queue=row["queue"],
            job_id=row["job_id"],
            type=row["type"],
            payload=orjson.loads(payload) if payload else {},
            timestamp=row["ts"],
        )


@dataclass(eq=False)
class Subscription:
    """Events of one queue (or all) for one consumer; iterate or :meth:`get`."""

    reader: OutboxReader
    queue: str | None
    safe: Cursor
    ahead: dict[int, int] = field(default_factory=dict)  # event id -> xid, seen beyond safe
    maxsize: int = 10_000
    live: bool = False
    closed: bool = False
    tokens: bool = True
    # The lowest fast-path event this subscription let pass (it was full of
    # events ahead of its cursor): no later fast-path event is taken until the
    # cursor path has delivered it, so that each job's events stay in order.
    skipped_from: Cursor | None = None
    # Events committed before this subscription existed that the reader has
    # not passed yet (event id -> position): not for it.
    earlier: dict[int, Cursor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._queue: asyncio.Queue[Event] = asyncio.Queue(self.maxsize)

    def matches(self, event: Event) -> bool:
        return self.queue is None or event.queue == self.queue

    @property
    def token(self) -> ResumeToken:
        return ResumeToken(self.safe, frozenset(self.ahead))

    def _stamp(self, event: Event) -> Event:
        if not self.tokens:
            return event
        return Event(
            event.id,
            event.xid,
            event.queue,
            event.job_id,
            event.type,
            event.payload,
            event.timestamp,
            str(self.token),
        )

    def offer_in_order(self, event: Event) -> None:
        """An event on the cursor path (commit-safe order)."""
        if not self.live or event.cursor <= self.safe:
            return  # catch_up reads it from the database
        before = self.safe
        self.safe = event.cursor  # before stamping: its token covers it
        if self.earlier and self.earlier.pop(event.id, None) is not None:
            return
        delivered = self.ahead.pop(event.id, None) is not None or not self.matches(event)
        if not delivered and not self._put(event):
            self.safe = before  # not delivered: catch-up starts at it

    def offer_ahead(self, event: Event) -> None:
        """An event on the fast path, beyond the commit-safe cursor.

        At most :data:`MAX_AHEAD` events are taken ahead of the cursor (they are
        named in every resume token); beyond that the cursor path delivers them.
        """
        if not self.live or event.id in self.ahead or event.cursor <= self.safe:
            return
        if event.id in self.earlier:
            return  # committed before this subscription; the cursor path drops it
        if self.skipped_from is not None or len(self.ahead) >= MAX_AHEAD:
            if self.skipped_from is None or event.cursor < self.skipped_from:
                self.skipped_from = event.cursor
            return
        if self.matches(event):
            self.ahead[event.id] = event.xid  # before stamping: its token names it
            if not self._put(event):
                del self.ahead[event.id]

    def advance(self, cursor: Cursor) -> None:
        """The reader passed ``cursor``: everything up to it was offered."""
        if self.earlier:
            self.earlier = {i: c for i, c in self.earlier.items() if c > cursor}
        if not self.live or cursor <= self.safe:
            return
        self.safe = cursor
        self.forget_ahead_before(cursor)
        if self.skipped_from is not None and self.skipped_from <= cursor:
            self.skipped_from = None

    def deliver_caught_up(self, event: Event) -> bool:
        """Deliver one event read during catch-up; False when the queue is full."""
        known = self.ahead.pop(event.id, None) is not None
        if known or self.earlier.pop(event.id, None) is not None:
            self.safe = max(self.safe, event.cursor)
            return True
        if self._queue.full():
            return False
        self.safe = max(self.safe, event.cursor)
        self._queue.put_nowait(self._stamp(event))
        return True

    def forget_ahead_before(self, cursor: Cursor) -> None:
        for event_id, xid in list(self.ahead.items()):
            if xid < cursor.xid:
                del self.ahead[event_id]

    def pending(self) -> int:
        return self._queue.qsize()

    def _put(self, event: Event) -> bool:
        try:
            self._queue.put_nowait(self._stamp(event))
            return True
        except asyncio.QueueFull:
            log.info(
                "subscriber fell behind (%d queued); catching up from the database", self.maxsize
            )
            self.live = False
            return False

    async def get(self) -> Event:
        """The next event (waits); catches up from the database when behind."""
        while True:
            if self.closed:
                raise PgQueueError("the subscription is closed")
            if not self._queue.empty() or self.live:
                return await self._queue.get()
            await self.reader.catch_up(self)

    def get_nowait(self) -> Event | None:
        try:
            return self._queue.get_nowait()
        except asyncio.QueueEmpty:
            return None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        try:
            return await self.get()
        except PgQueueError:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self.closed = True
        self.reader.unsubscribe(self)


class OutboxReader(Service):
    """Reads the outbox of one namespace and fans events out to subscriptions."""

    name = "outbox-reader"

    def __init__(self, db: Database, config: Config, notifier: Notifier) -> None:
        super().__init__()
        self._db = db
        self._config = config
        self._notifier = notifier
        self._subs: set[Subscription] = set()
        self._ahead: dict[int, Event] = {}
        self._hinted = False
        self._wake = asyncio.Event()
        self.cursor = Cursor(0, 0)
        self.delivered = 0
        self.last_event_at: float | None = None
        self.polled = asyncio.Event()
        self._catch_up_lock = asyncio.Lock()

    # -- subscriptions -------------------------------------------------------

    def subscribe(
        self,
        queue: str | None = None,
        *,
        after: ResumeToken | None = None,
        maxsize: int = 10_000,
        tokens: bool = True,
        committed: Mapping[int, Cursor] | None = None,
    ) -> Subscription:
        """Events from now on, or everything after ``after`` (a resume token).

        "Now" is this reader's position, plus ``committed`` (from
        :meth:`committed_ahead`): events already committed that the reader
        has not passed yet, left out too.  ``tokens=False`` skips computing each
        event's resume token (for consumers that never resume, such as the
        projection).
        """
        if after is None:
            sub = Subscription(self, queue, self.cursor, maxsize=maxsize, live=True, tokens=tokens)
            # Delivered or committed before this subscription existed: not for it.
            sub.earlier = {i: e.cursor for i, e in self._ahead.items()}
            if committed:
                sub.earlier.update((i, c) for i, c in committed.items() if c > self.cursor)
        else:
            sub = Subscription(
                self,
                queue,
                after.cursor,
                maxsize=maxsize,
                live=False,
                # Their positions are unknown: keep them until the read meets them.
                ahead={event_id: UNKNOWN_XID for event_id in after.ahead},
                tokens=tokens,
            )
        self._subs.add(sub)
        return sub

    async def committed_ahead(self) -> dict[int, Cursor]:
        """Positions of the events committed beyond this reader's cursor (it reads
        them within a poll interval), at most :data:`MAX_EARLIER` of them."""
        batch = self._config.event_batch
        cursor = self.cursor
        found: dict[int, Cursor] = {}
        while len(found) < MAX_EARLIER:
            rows = await self._db.fetch(
                Q.event_positions_after, self._config.namespace, cursor.xid, cursor.id, batch
            )
            for row in rows:
                cursor = Cursor(int(row["xid"]), int(row["id"]))
                found[cursor.id] = cursor
            if len(rows) < batch:
                break
        return found

    def unsubscribe(self, sub: Subscription) -> None:
        self._subs.discard(sub)

    async def catch_up(self, sub: Subscription) -> None:
        """Read what ``sub`` missed from the database, up to the reader's cursor,
        then let it rejoin live delivery.  Returns early when its queue fills up
        (the consumer drains it and calls again)."""
        batch = self._config.event_batch
        async with self._catch_up_lock:
            while not sub.closed:
                upto = self.cursor
                while sub.safe < upto:
                    rows = await self._db.fetch(
                        Q.event_read_range,
                        self._config.namespace,
                        sub.safe.xid,
                        sub.safe.id,
                        upto.xid,
                        upto.id,
                        sub.queue,
                        batch,
                    )
                    for row in rows:
                        if not sub.deliver_caught_up(Event.from_row(row)):
                            return
                    if len(rows) < batch:
                        sub.safe = upto
                        sub.forget_ahead_before(upto)
                    elif sub.pending():
                        return
                if self.cursor == upto:
                    self._join(sub)
                    return

    def _join(self, sub: Subscription) -> None:
        sub.live = True
        sub.advance(self.cursor)
        for event in sorted(self._ahead.values(), key=lambda e: e.cursor):
            sub.offer_ahead(event)

    # -- the reading loop -------------------------------------------------------

    def _hint(self, first: int, last: int) -> None:
        self._hinted = True
        self._wake.set()

    def _resync(self) -> None:
        self._wake.set()

    async def start_cursor(self) -> Cursor:
        xid = await self._db.fetchval(Q.event_safe_horizon)
        return Cursor(int(xid), 2**63 - 1)

    async def run(self) -> None:
        self.cursor = await self.start_cursor()
        self._notifier.on_events(self._hint)
        self._notifier.on_resync(self._resync)
        self.started.set()
        interval = self._config.poll_interval_ms / 1000
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self._fast_path()
                await self.poll()
            except PgQueueError as exc:
                log.warning("outbox read failed: %s", exc)

    async def _fast_path(self) -> None:
        """Deliver committed events beyond the cursor at once (see the module doc).

        First an index-only read of the positions after the cursor, then the rows
        of those not delivered yet: a hint never re-reads what was delivered.
        """
        if not self._hinted or len(self._ahead) >= MAX_READER_AHEAD:
            return
        self._hinted = False
        namespace = self._config.namespace
        positions = await self._db.fetch(
            Q.event_positions_after,
            namespace,
            self.cursor.xid,
            self.cursor.id,
            self._config.event_batch,
        )
        new_ids = [row["id"] for row in positions if row["id"] not in self._ahead]
        if not new_ids:
            return
        rows = await self._db.fetch(Q.event_read_by_ids, namespace, new_ids)
        for row in rows:
            event = Event.from_row(row)
            if event.id in self._ahead or event.cursor <= self.cursor:
                continue
            self._ahead[event.id] = event
            self.last_event_at = event.timestamp
            for sub in list(self._subs):
                sub.offer_ahead(event)

    async def poll(self) -> int:
        """One pass of the cursor path; returns how many events it passed."""
        batch = self._config.event_batch
        passed = 0
        while True:
            rows = await self._db.fetch(
                Q.event_read_after,
                self._config.namespace,
                self.cursor.xid,
                self.cursor.id,
                batch,
            )
            for row in rows:
                event = Event.from_row(row)
                self.cursor = event.cursor
                if self._ahead.pop(event.id, None) is None:
                    self.last_event_at = event.timestamp
                    self.delivered += 1
                for sub in list(self._subs):
                    sub.offer_in_order(event)
            passed += len(rows)
            if rows:
                for sub in list(self._subs):
                    sub.advance(self.cursor)
                self._prune_ahead()
            if len(rows) < batch:
                break
        self.polled.set()
        return passed

    def _prune_ahead(self) -> None:
        for event_id in [i for i, e in self._ahead.items() if e.xid < self.cursor.xid]:
            del self._ahead[event_id]
