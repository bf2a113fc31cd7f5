"""The outbox reader: every state change, to every subscriber, once, without gaps.

``pgqueue_events`` rows are written in the transaction of the change they
describe, with that transaction's id (``xid``).  A position in the outbox is
not a row but a *snapshot*: a reader that read with snapshot S has seen every
event of every transaction S counts as finished.  What is new since then
belongs to a transaction S counted as running (its running-xid list: a few
index lookups) or to one that began after it (a range of the ``(xid, id)``
index from S's xmax on).  So:

* there is one read, on a NOTIFY hint (latency) or every poll interval (the
  truth when LISTEN is broken): the events committed since the last snapshot;
* a long transaction anywhere in the cluster (an idle session, a forgotten
  prepared transaction) never holds delivery back: it merely stays in the
  running list, and its events come when it commits;
* memory is bounded: the state is a snapshot (its running list is bounded by
  the server's connections and prepared transactions) plus, while a large
  commit is read in batches, the snapshot of that read and the position
  reached in it.  Nothing is held in RAM that the table can give again.

A subscription's *resume token* is that state as text, taken after each
event: resuming from it (on any broker) delivers exactly what was not seen.
A subscriber whose queue is full is not handed the event: its position stays
before it, and it catches up from the database from there, then rejoins live
delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass, field, fields
from typing import Any

from pgqueue import jsontext
from pgqueue.config import Config
from pgqueue.db.executor import Database, Executor, Row
from pgqueue.db.queries import Q
from pgqueue.errors import PgQueueError, ValidationError
from pgqueue.manager.notifier import Notifier
from pgqueue.service import Service
from pgqueue.vocabulary.names import validate_queue_name

__all__ = [
    "TALLY_TYPE",
    "Cursor",
    "Event",
    "OutboxReader",
    "ResumeToken",
    "Snapshot",
    "Subscription",
    "subscription_start",
]

log = logging.getLogger("pgqueue.outbox")

# A claim statement's count of the jobs it claimed, written instead of their
# ``active`` events (payload {"count": n}; migration 0029): for tally readers only.
TALLY_TYPE = "claimed"
MAX_RUNNING_IN_TOKEN = 10_000  # running xids a snapshot in a token may name
MAX_XID = 2**63 - 1


@dataclass(frozen=True, slots=True, order=True)
class Cursor:
    """A position in ``(xid, id)`` order (within one read)."""

    xid: int
    id: int

    def __str__(self) -> str:
        return f"{self.xid}.{self.id}"


START = Cursor(0, 0)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Which transactions had finished: those below ``xmax`` not in ``running``."""

    xmin: int
    xmax: int
    running: frozenset[int] = frozenset()

    def finished(self, xid: int) -> bool:
        return xid < self.xmin or (xid < self.xmax and xid not in self.running)

    def covers(self, other: Snapshot) -> bool:
        """Every transaction finished in ``other`` is finished in this one."""
        return other.xmax <= self.xmax and all(
            x in other.running or x >= other.xmax for x in self.running if x < other.xmax
        )

    def union(self, other: Snapshot) -> Snapshot:
        """Finished in either."""
        if self.covers(other):
            return self
        if other.covers(self):
            return other
        xmax = max(self.xmax, other.xmax)
        running = frozenset(
            x
            for x in self.running | other.running
            if not self.finished(x) and not other.finished(x)
        )
        return Snapshot(min(running, default=xmax), xmax, running)

    def through(self, xid: int) -> Snapshot:
        """This one, with every transaction up to ``xid`` counted as finished."""
        if xid < self.xmin:
            return self
        running = frozenset(x for x in self.running if x > xid)
        xmax = max(self.xmax, xid + 1)
        return Snapshot(min(running, default=xmax), xmax, running)

    def __str__(self) -> str:
        return f"{self.xmin}:{self.xmax}:" + ",".join(str(x) for x in sorted(self.running))

    @classmethod
    def parse(cls, text: str) -> Snapshot:
        """``xmin:xmax:x,y,...`` (PostgreSQL's ``pg_snapshot`` text); ValueError otherwise."""
        xmin_text, xmax_text, running_text = text.split(":")
        xmin, xmax = int(xmin_text), int(xmax_text)
        items = running_text.split(",") if running_text else []
        if len(items) > MAX_RUNNING_IN_TOKEN:
            raise ValueError("too many running transactions")
        running = frozenset(int(x) for x in items)
        if not 0 < xmin <= xmax < MAX_XID or any(not xmin <= x < xmax for x in running):
            raise ValueError("not a snapshot")
        return cls(xmin, xmax, running)


@dataclass(frozen=True, slots=True)
class ResumeToken:
    """Seen: every event of a transaction finished in ``seen``; and, of those
    finished in ``delta`` (a read in batches not done yet), each one up to ``upto``."""

    seen: Snapshot
    delta: Snapshot | None = None
    upto: Cursor = START

    def covers(self, xid: int, event_id: int) -> bool:
        if self.seen.finished(xid):
            return True
        return (
            self.delta is not None
            and self.delta.finished(xid)
            and (xid, event_id)
            <= (
                self.upto.xid,
                self.upto.id,
            )
        )

    def with_seen(self, extra: Snapshot | None) -> ResumeToken:
        """This token plus every event of the transactions finished in ``extra``."""
        if extra is None:
            return self
        delta = None if self.delta is None else self.delta.union(extra)
        return ResumeToken(self.seen.union(extra), delta, self.upto)

    def through(self, xid: int) -> ResumeToken:
        """This token plus every event of the transactions up to ``xid`` (after a gap)."""
        delta = None if self.delta is None else self.delta.through(xid)
        return ResumeToken(self.seen.through(xid), delta, self.upto)

    def __str__(self) -> str:
        if self.delta is None:
            return str(self.seen)
        return f"{self.seen}~{self.delta}~{self.upto}"

    @classmethod
    def parse(cls, text: str) -> ResumeToken:
        """Parse a token; raise :class:`ValidationError` naming ``after`` otherwise."""
        try:
            parts = text.split("~")
            if len(parts) == 1:
                return cls(Snapshot.parse(parts[0]))
            if len(parts) != 3:
                raise ValueError("not a token")
            seen, delta = Snapshot.parse(parts[0]), Snapshot.parse(parts[1])
            xid, _, event_id = parts[2].partition(".")
            if not delta.covers(seen):
                raise ValueError("not a token")
            return cls(seen, delta, Cursor(int(xid), int(event_id)))
        except ValueError as exc:
            raise ValidationError(f"invalid event cursor: {text[:80]!r}", field="after") from exc


@dataclass(frozen=True, slots=True)
class Event:
    """One outbox row (or a ``gap``: events lost to retention, ``job_id`` None)."""

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
        """The event of a row of its columns by name (a read builds its events with
        ``_events``, by position)."""
        event: Event = _new(cls)
        _SET_ID(event, row["id"])
        _SET_XID(event, row["xid"])
        _SET_QUEUE(event, row["queue"])
        _SET_JOB_ID(event, row["job_id"])
        _SET_TYPE(event, row["type"])
        payload = row["payload"]
        _SET_PAYLOAD(event, jsontext.loads(payload) if payload else {})
        _SET_TIMESTAMP(event, row["ts"])
        _SET_RESUME(event, "")
        return event

    def stamped(self, token: ResumeToken | None) -> Event:
        if token is None:
            return self
        return Event(
            self.id,
            self.xid,
            self.queue,
            self.job_id,
            self.type,
            self.payload,
            self.timestamp,
            str(token),
        )


_new = object.__new__
(
    _SET_ID,
    _SET_XID,
    _SET_QUEUE,
    _SET_JOB_ID,
    _SET_TYPE,
    _SET_PAYLOAD,
    _SET_TIMESTAMP,
    _SET_RESUME,
) = (vars(Event)[f.name].__set__ for f in fields(Event))


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _events(rows: list[Row]) -> list[Event]:
    """The events of ``event_read_delta`` rows (the head row, with no event, left out).

    Every event a broker reads passes here, one loop for the whole read: the columns
    unpacked by position (one pass over the row, not a lookup per name), each event
    built through the slots' own setters, not the frozen ``__init__``
    (``object.__setattr__`` per field, ~2.5x slower).  A payload text met before in
    the same read is decoded once: the events of a batch push, the claims of one
    broker share theirs.  Each event still gets its own dict (a copy, made here,
    before any consumer sees one), and only when its values are scalars; any other
    payload is decoded for each event.
    """
    out: list[Event] = []
    append = out.append
    loads = jsontext.loads
    new, cls = _new, Event
    seen: dict[str, dict[str, Any] | None] = {}  # payload text: its flat value, or None
    for row in rows:
        _, _, _, event_id, xid, queue, job_id, kind, payload, ts = row.values()
        if event_id is None:
            continue
        event = new(cls)
        _SET_ID(event, event_id)
        _SET_XID(event, xid)
        _SET_QUEUE(event, queue)
        _SET_JOB_ID(event, job_id)
        _SET_TYPE(event, kind)
        if not payload:
            _SET_PAYLOAD(event, {})
        elif (value := seen.get(payload)) is not None:
            _SET_PAYLOAD(event, value.copy())
        else:
            decoded = loads(payload)
            if payload not in seen:
                flat = type(decoded) is dict and all(type(v) in _SCALARS for v in decoded.values())
                seen[payload] = decoded if flat else None
            _SET_PAYLOAD(event, decoded)
        _SET_TIMESTAMP(event, ts)
        _SET_RESUME(event, "")
        append(event)
    return out


@dataclass(slots=True)
class Batch:
    """One read: its events, where it leaves the reader, and the snapshot it used."""

    events: list[Event]
    start: ResumeToken
    delta: Snapshot
    done: bool
    gap_to: ResumeToken | None = None  # the events are one gap event, up to here

    def after(self, index: int) -> ResumeToken:
        """The position once ``events[index]`` was seen (-1: none of them)."""
        if index < 0:
            return self.start
        if self.gap_to is not None:
            return self.gap_to
        if self.done and index == len(self.events) - 1:
            return ResumeToken(self.delta)
        return ResumeToken(self.start.seen, self.delta, self.events[index].cursor)

    @property
    def end(self) -> ResumeToken:
        if self.gap_to is not None:
            return self.gap_to
        if self.done:
            return ResumeToken(self.delta)
        return self.after(len(self.events) - 1)


async def read_batch(
    db: Executor, config: Config, position: ResumeToken, queue: str | None
) -> Batch:
    """The next events after ``position`` (of ``queue``, or all), at most ``event_batch``."""
    delta = position.delta
    rows = await db.fetch(
        Q.event_read_delta,
        namespace=config.namespace,
        running_xids=sorted(position.seen.running),
        xmax=position.seen.xmax,
        batch_xmax=None if delta is None else delta.xmax,
        batch_running_xids=[] if delta is None else sorted(delta.running),
        after_xid=position.upto.xid,
        after_id=position.upto.id,
        queue=queue,
        limit=config.event_batch,
    )
    head = rows[0]
    if delta is None:
        delta = Snapshot.parse(head["snapshot"]).union(position.seen)
    pruned = head["pruned"]
    if pruned is not None and int(pruned) >= position.seen.xmin:
        return _gap(position, int(pruned), queue, float(head["now_ms"]), delta)
    events = _events(rows)
    return Batch(events, position, delta, done=len(events) < config.event_batch)


def _gap(
    position: ResumeToken, pruned: int, queue: str | None, now_ms: float, delta: Snapshot
) -> Batch:
    """Retention deleted events of transactions up to ``pruned`` that ``position``
    had not seen: one ``gap`` event ("lost from X to Y"), then go on after it."""
    lost_to = position.through(pruned)
    log.warning("events lost to retention between %s and %s", position, lost_to)
    gap = Event(
        0,
        pruned,
        queue or "",
        None,
        "gap",
        {"from": str(position), "to": str(lost_to)},
        now_ms,
    )
    return Batch([gap], position, delta, done=False, gap_to=lost_to)


class _Fifo:
    """A subscription's queued events: what ``asyncio.Queue`` gave it (bounded by
    ``maxsize``, 0 = unbounded; ``get`` waits), plus runs put and taken in one call,
    so a read's events cost its consumer no queue operation each."""

    __slots__ = ("_items", "_waiters", "maxsize")

    def __init__(self, maxsize: int) -> None:
        self._items: deque[Event] = deque()
        self._waiters: list[asyncio.Future[None]] = []
        self.maxsize = maxsize

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._items)

    def put_nowait(self, event: Event) -> None:
        self._items.append(event)
        if self._waiters:
            self._wake()

    def put_all(self, events: list[Event]) -> None:
        """Every one of ``events``, in order (the caller checked there is room)."""
        self._items.extend(events)
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        # Every waiter looks again (a cancelled one passes nothing on to lose).
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def get(self) -> Event:
        while not self._items:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        return self._items.popleft()

    def get_nowait(self) -> Event | None:
        return self._items.popleft() if self._items else None

    def take(self, limit: int) -> list[Event]:
        """Up to ``limit`` queued events, oldest first, without waiting."""
        items = self._items
        if len(items) <= limit:
            run = list(items)
            items.clear()
            return run
        popleft = items.popleft
        return [popleft() for _ in range(limit)]


@dataclass(eq=False)
class Subscription:
    """Events of one queue (or all) for one consumer; iterate or :meth:`get`.

    *Live*, it takes the events the reader fans out (leaving out those of the
    transactions finished in ``skip``: they were committed before it existed);
    otherwise it reads from ``base`` on its own, then rejoins.  A ``prompt``
    subscription has the reader read on every NOTIFY hint; the others (a cache
    such as the projection) take the events of the reads at the poll interval
    (or of a hint that a prompt subscription asked for).  The claims' ``claimed``
    tally rows go to ``tallies`` subscriptions only (a broker's metrics).
    """

    reader: OutboxReader
    queue: str | None
    base: ResumeToken
    maxsize: int = 10_000
    live: bool = False
    closed: bool = False
    tokens: bool = True
    skip: Snapshot | None = None
    prompt: bool = True
    tallies: bool = False
    _queue: _Fifo = field(init=False)

    def __post_init__(self) -> None:
        self._queue = _Fifo(self.maxsize)

    def matches(self, event: Event) -> bool:
        if event.type == TALLY_TYPE and not self.tallies:
            return False
        return self.queue is None or event.queue == self.queue or event.type == "gap"

    @property
    def token(self) -> ResumeToken:
        """Where this subscription stands (the token of the last event it queued)."""
        if self.live:
            return self.reader.position.with_seen(self.skip)
        return self.base

    def offer(self, event: Event, batch: Batch, index: int) -> None:
        """An event the reader read: ``batch.events[index]`` (its positions before
        and after it are computed only when needed)."""
        if not self.live or not self.matches(event):
            return
        if self.skip is not None and self.skip.finished(event.xid) and event.type != "gap":
            return
        if self._queue.full():
            log.info(
                "subscriber fell behind (%d queued); catching up from the database", self.maxsize
            )
            self.live = False
            self.base = batch.after(index - 1).with_seen(self.skip)  # it starts at this event
            return
        if self.tokens:
            event = event.stamped(batch.after(index).with_seen(self.skip))
        self._queue.put_nowait(event)

    def offer_all(self, batch: Batch) -> None:
        """:meth:`offer` of every event of ``batch``, in order.  A subscription of all
        queues without tokens or a skip (the projection) with room for them all takes
        them in one call: what each :meth:`offer` would do, without its checks."""
        if not self.live:
            return
        events = batch.events
        queue = self._queue
        if (
            self.tokens
            or not self.tallies
            or self.skip is not None
            or self.queue is not None
            or (self.maxsize > 0 and self.maxsize - queue.qsize() < len(events))
        ):
            for index, event in enumerate(events):
                self.offer(event, batch, index)
            return
        queue.put_all(events)

    def put_caught_up(self, event: Event, after: ResumeToken) -> bool:
        """An event read during catch-up; False when the queue is full."""
        if self._queue.full():
            return False
        self._queue.put_nowait(event.stamped(after if self.tokens else None))
        return True

    def pending(self) -> int:
        return self._queue.qsize()

    async def get(self) -> Event:
        """The next event (waits); catches up from the database when behind."""
        while True:
            if self.closed:
                raise PgQueueError("the subscription is closed")
            if not self._queue.empty() or self.live:
                return await self._queue.get()
            await self.reader.catch_up(self)

    def get_nowait(self) -> Event | None:
        return self._queue.get_nowait()

    def take(self, limit: int) -> list[Event]:
        """Up to ``limit`` of the queued events, oldest first (none: an empty list)."""
        return self._queue.take(limit)

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
        self._prompt = 0  # of those, the prompt ones
        self._wake = asyncio.Event()
        self.position = ResumeToken(Snapshot(1, 1))
        self.delivered = 0
        self.last_event_at: float | None = None
        self.polled = asyncio.Event()

    # -- subscriptions -------------------------------------------------------

    async def now(self) -> Snapshot:
        """The database's current snapshot ("now" for a new subscription)."""
        return Snapshot.parse(await self._db.fetchval(Q.event_snapshot))

    def subscribe(
        self,
        queue: str | None = None,
        *,
        after: ResumeToken | None = None,
        maxsize: int = 10_000,
        tokens: bool = True,
        skip: Snapshot | None = None,
        prompt: bool = True,
        tallies: bool = False,
    ) -> Subscription:
        """Everything after ``after`` (a resume token), or live from the reader's
        position, leaving out the transactions finished in ``skip`` (from
        :meth:`now`: what committed before the subscription).  ``tokens=False``
        skips computing each event's resume token (for consumers that never
        resume, such as the projection); ``prompt=False`` lets the events wait
        for the next poll instead of a read per hint (a cache that may lag by
        the poll interval)."""
        position = self.position if after is None else after
        sub = Subscription(
            self,
            queue,
            position,
            maxsize,
            live=after is None,
            tokens=tokens,
            prompt=prompt,
            tallies=tallies,
        )
        if after is None and skip is not None and not self.position.seen.covers(skip):
            sub.skip = skip
        self._subs.add(sub)
        if prompt:
            self._prompt += 1
            self._notifier.want("outbox", True)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.discard(sub)
            if sub.prompt:
                self._prompt -= 1
                self._notifier.want("outbox", self._prompt > 0)

    @property
    def read_due(self) -> bool:
        """Whether a read was asked for before the next poll (a hint or a resync)."""
        return self._wake.is_set()

    async def catch_up(self, sub: Subscription) -> None:
        """Read what ``sub`` missed from the database, then let it rejoin live
        delivery.  Returns early when its queue fills up (the consumer drains
        it and calls again)."""
        while not sub.closed and not sub.live:
            batch = await read_batch(self._db, self._config, sub.base, sub.queue)
            for index, event in enumerate(batch.events):
                if event.type == TALLY_TYPE and not sub.tallies:
                    continue
                if not sub.put_caught_up(event, batch.after(index)):
                    sub.base = batch.after(index - 1)
                    return
            sub.base = batch.end
            if batch.done and self._covered_by(batch.delta):
                sub.live = True
                sub.skip = None if self.position.seen.covers(batch.delta) else batch.delta
                return
            if sub.pending():
                return

    def _covered_by(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot`` counts as finished everything the reader read."""
        position = self.position
        return snapshot.covers(position.delta or position.seen)

    # -- the reading loop -------------------------------------------------------

    def _hint(self, first: int, last: int) -> None:
        # Only a prompt subscription is worth a read per hint: the events of the
        # others (the projection) come with the next poll, many per read.
        if self._prompt:
            self._wake.set()

    def _resync(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        if not self.started.is_set():  # a supervised restart keeps the position
            self.position = ResumeToken(await self.now())
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
                await self.poll()
            except PgQueueError as exc:
                log.warning("outbox read failed: %s", exc)

    async def poll(self) -> int:
        """Read and fan out everything committed since the last read; returns how
        many events it read."""
        passed = 0
        while True:
            batch = await read_batch(self._db, self._config, self.position, None)
            events = batch.events
            for sub in list(self._subs):  # nothing runs between: each gets them in order
                sub.offer_all(batch)
            if events:
                self.last_event_at = events[-1].timestamp
                self.delivered += len(events)
            self.position = batch.end
            passed += len(events)
            if batch.done:
                break
        seen = self.position.seen
        for sub in self._subs:
            if sub.skip is not None and seen.covers(sub.skip):
                sub.skip = None
        self.polled.set()
        return passed


def subscription_start(queue: str | None, after: str | None) -> ResumeToken | None:
    """Check what a subscription asks for (its queue, if any, and its resume
    token) before anything starts; the token to resume after, or None."""
    if queue is not None:
        validate_queue_name(queue)
    return ResumeToken.parse(after) if after else None
