"""The bounded local projection: a read cache of one broker, repaired from the outbox.

Two parts, both bounded whatever the backlog:

* **job summaries** — an LRU of ``(state, attempts, progress, timestamps)`` per
  job, capped by entries and by bytes, applied from outbox events as they
  arrive with the outbox reader's polls (every ``poll_interval_ms``, many
  events per read; or sooner, with a read a prompt subscriber's hint asked
  for: the projection itself costs no read per hint); a failed read is retried
  from the projection's own position, never from "now".  Evicted
  jobs are simply absent: a miss is answered from PostgreSQL by the caller.
* **queue counts** — per-queue counts per state, read from PostgreSQL with one
  grouped statement and cached; an event of a queue marks its counts stale,
  and stale counts are re-read at most every ``counts_refresh_ms``.  Their
  staleness is bounded by that interval plus the outbox poll interval, even
  with LISTEN broken.

Nothing here loads the backlog into memory: a queue of a million waiting jobs
costs a handful of integers.  Reads that need read-your-writes go to
PostgreSQL, not here.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from sys import intern
from typing import Any

from pgqueue.db.queries import Q
from pgqueue.errors import PgQueueError
from pgqueue.manager.outbox import Event, Subscription
from pgqueue.service import Service

__all__ = ["JobSummary", "Projection", "ProjectionStats"]

log = logging.getLogger("pgqueue.projection")

# Nothing the broker serves reads the summaries (protocol reads go to PostgreSQL,
# docs/architecture.md "The bounded projection"): the cap is sized for a dashboard's
# recent jobs, and reached at a small backlog, so memory is flat from there on.
ENTRIES_DEFAULT = 10_000
BYTES_DEFAULT = 16 * 1024 * 1024
COUNTS_REFRESH_MS_DEFAULT = 1_000
FEED_RETRY_MIN_S = 0.1
FEED_RETRY_MAX_S = 5.0
APPLY_RUN_MAX = 1_000  # events applied before the projection yields to the loop
FEED_SIZE_DEFAULT = 50_000  # events queued for the projection before it reads on its own
# One entry, measured with tracemalloc (scripts/bench_backlog.py's section): the
# slots object (104), its place in the LRU map (~95), the event id (32) and the
# timestamp (24, shared by created_at and updated_at when one event set both);
# plus the id string (counted by length).  Queue, state and name strings are
# interned: one object for every entry that has them.
_BASE_BYTES = 300

_STATE_AFTER = {
    "active": "active",
    "completed": "completed",
    "dlq": "failed",
    "retried": "waiting",
    "stalled": "waiting",
    "delayed": "delayed",
    "waiting": "waiting",
    "redriven": "waiting",
    "waiting-children": "waiting-children",
}
_QUEUE_RESETS = frozenset({"drained", "obliterated", "cleaned"})


@dataclass(slots=True)
class JobSummary:
    """What the projection keeps of one job."""

    id: str
    queue: str
    state: str
    attempts: int = 0
    progress: Any = None
    created_at: float = 0.0
    updated_at: float = 0.0
    name: str | None = None
    event_id: int = 0  # the last applied event: a job's events are ordered by id

    def size(self) -> int:
        extra = 0 if self.progress is None else sys.getsizeof(self.progress)
        return _BASE_BYTES + len(self.id) + extra


@dataclass(slots=True)
class ProjectionStats:
    """Exported figures (Prometheus and /readyz)."""

    entries: int = 0
    bytes: int = 0
    hits: int = 0
    misses: int = 0
    evictions: int = 0
    events_applied: int = 0
    last_event_at: float | None = None
    counts_refreshes: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


@dataclass(slots=True)
class _QueueCounts:
    counts: dict[str, int] = field(default_factory=dict)
    read_at: float = 0.0
    stale: bool = True


class Projection(Service):
    """Job summaries and queue counts of one namespace, fed by an outbox subscription."""

    name = "projection"

    def __init__(
        self,
        manager: Any,
        *,
        max_entries: int = ENTRIES_DEFAULT,
        max_bytes: int = BYTES_DEFAULT,
        counts_refresh_ms: int = COUNTS_REFRESH_MS_DEFAULT,
        feed_size: int = FEED_SIZE_DEFAULT,
    ) -> None:
        super().__init__()
        self._manager = manager
        self.feed_size = feed_size
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.counts_refresh_ms = counts_refresh_ms
        self._jobs: OrderedDict[str, JobSummary] = OrderedDict()
        self._counts: dict[str, _QueueCounts] = {}
        self._counts_lock = asyncio.Lock()
        self.stats = ProjectionStats()
        self._subscription: Subscription | None = None
        self.applied = asyncio.Event()
        self.listeners: list[Callable[[Event], None]] = []
        # Called once per run of events applied together (the metrics: one count each).
        self.batch_listeners: list[Callable[[list[Event]], None]] = []

    # -- reads ------------------------------------------------------------------

    def get(self, job_id: str) -> JobSummary | None:
        """The cached summary of a job, or None (then ask PostgreSQL)."""
        summary = self._jobs.get(job_id)
        if summary is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        self._jobs.move_to_end(job_id)
        return summary

    def recent(self, queue: str, limit: int = 50) -> list[JobSummary]:
        """The most recently touched jobs of a queue (dashboard lists)."""
        out: list[JobSummary] = []
        for summary in reversed(self._jobs.values()):
            if summary.queue == queue:
                out.append(summary)
                if len(out) >= limit:
                    break
        return out

    async def counts(self, queue: str) -> dict[str, int]:
        """Per-state counts of ``queue``, at most ``counts_refresh_ms`` old once stale."""
        entry = self._counts.get(queue)
        now = time.monotonic()
        if entry is None or (entry.stale and now - entry.read_at >= self.counts_refresh_ms / 1000):
            await self._refresh_counts()
            entry = self._counts.get(queue)
        return dict(entry.counts) if entry else {}

    async def all_counts(self) -> dict[str, dict[str, int]]:
        """Counts of every queue of the namespace (one grouped statement when stale)."""
        now = time.monotonic()
        if not self._counts or any(
            e.stale and now - e.read_at >= self.counts_refresh_ms / 1000
            for e in self._counts.values()
        ):
            await self._refresh_counts()
        return {queue: dict(entry.counts) for queue, entry in self._counts.items()}

    async def _refresh_counts(self) -> None:
        async with self._counts_lock:
            rows = await self._manager.db.fetch(
                Q.queue_counts_all, namespace=self._manager.namespace
            )
            fresh: dict[str, dict[str, int]] = {}
            for row in rows:
                fresh.setdefault(row["queue"], {})[row["state"]] = int(row["n"])
            now = time.monotonic()
            for queue in set(fresh) | set(self._counts):
                self._counts[queue] = _QueueCounts(fresh.get(queue, {}), now, False)
            self.stats.counts_refreshes += 1

    # -- applying events ------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Apply one outbox event to the summaries and mark its queue's counts stale."""
        self.apply_many((event,))

    def apply_many(self, events: Sequence[Event]) -> None:
        """Apply a run of outbox events in order (as :meth:`apply` of each, in one loop:
        a queue's counts are marked stale once, an entry's size is counted again only
        when what it holds changes)."""
        if not events:
            return
        stats = self.stats
        stats.events_applied += len(events)
        stats.last_event_at = events[-1].timestamp
        jobs = self._jobs
        max_entries, max_bytes = self.max_entries, self.max_bytes
        touched: dict[str, None] = {}  # the queues whose counts to mark stale, in order
        for event in events:
            kind = event.type
            if kind == "gap":  # events lost: nothing cached can be trusted
                self._mark_stale(touched)
                touched = {}
                for entry in self._counts.values():
                    entry.stale = True
                for cached in list(jobs):
                    self._drop(cached)
                continue
            touched[event.queue] = None
            job_id = event.job_id
            if job_id is None:
                if kind in _QUEUE_RESETS:
                    queue = event.queue
                    for dropped in [j for j, s in jobs.items() if s.queue == queue]:
                        self._drop(dropped)
                continue
            if kind == "removed":
                self._drop(job_id)
                continue
            summary = jobs.get(job_id)
            if summary is not None and event.id < summary.event_id:
                continue  # an older event read late: the summary already has what followed
            payload = event.payload
            if summary is None:
                summary = JobSummary(
                    job_id, intern(event.queue), "waiting", created_at=event.timestamp
                )
                fresh = True
                old_size = 0
            else:
                fresh = False
                old_size = summary.size() if kind == "progress" else -1
            if kind == "pushed":
                summary.state = intern(str(payload.get("state") or "waiting"))
                name = payload.get("name")
                summary.name = intern(name) if isinstance(name, str) else name
                summary.created_at = event.timestamp
            elif kind == "active":
                summary.state = "active"
                summary.attempts = max(summary.attempts, int(payload.get("attempt", 1)) - 1)
            elif kind == "failed":
                summary.attempts = int(payload.get("attemptsMade") or summary.attempts + 1)
                if payload.get("terminal"):
                    summary.state = "failed"
                else:
                    summary.state = "delayed" if payload.get("delay") else "waiting"
            elif kind == "progress":
                summary.progress = payload.get("progress")
            elif kind in _STATE_AFTER:
                summary.state = _STATE_AFTER[kind]
            summary.updated_at = event.timestamp
            summary.event_id = event.id
            if fresh:
                jobs[job_id] = summary  # a new key goes last
                stats.bytes += summary.size()
            else:
                jobs.move_to_end(job_id)
                if old_size >= 0:
                    stats.bytes += summary.size() - old_size
            while len(jobs) > max_entries or stats.bytes > max_bytes:  # the oldest go
                _, victim = jobs.popitem(last=False)
                stats.bytes -= victim.size()
                stats.evictions += 1
        stats.entries = len(jobs)
        self._mark_stale(touched)

    def _mark_stale(self, queues: dict[str, None]) -> None:
        """An event of each of ``queues`` was applied: their counts are stale."""
        counts = self._counts
        for queue in queues:
            entry = counts.get(queue)
            if entry is not None:
                entry.stale = True
            else:
                counts[queue] = _QueueCounts()

    def _drop(self, job_id: str) -> None:
        victim = self._jobs.pop(job_id, None)
        if victim is not None:
            self.stats.bytes -= victim.size()
            self.stats.entries = len(self._jobs)

    def staleness_ms(self) -> float | None:
        """Milliseconds since the last applied event was written (None before any)."""
        if self.stats.last_event_at is None:
            return None
        return max(0.0, time.time() * 1000 - self.stats.last_event_at)

    # -- the feed ---------------------------------------------------------------------

    async def run(self) -> None:
        # A supervised restart keeps the feed: its position is where this stopped.
        if self._subscription is None or self._subscription.closed:
            # exact=False: the events this broker has not read yet are applied too;
            # prompt=False: they come with the reader's polls, not a read per hint;
            # tallies: the metrics fed from here count the claims, from their active
            # events where someone wants those, else from one `claimed` row per
            # claim statement (manager.interest); claim_events: every active event.
            self._subscription = await self._manager.subscribe_events(
                None,
                maxsize=self.feed_size,
                tokens=False,
                exact=False,
                prompt=False,
                active=self._manager.config.claim_events,
                tallies=True,
            )
        self.started.set()
        await self._follow(self._subscription)

    async def stop(self) -> None:
        await super().stop()
        if self._subscription is not None:
            self._subscription.close()

    async def _follow(self, feed: Subscription) -> None:
        """Apply the feed's events.  A failed read leaves the feed where it was
        (before the first event it did not hand over): it is retried from there,
        never from "now", so nothing committed meanwhile is skipped (a position
        lost to retention comes back as a ``gap`` event, which drops the cache)."""
        delay = FEED_RETRY_MIN_S
        while not feed.closed:
            try:
                event = await feed.get()
            except PgQueueError as exc:
                if feed.closed:
                    return
                log.warning("projection feed failed: %s; reading again in %.1fs", exc, delay)
                await asyncio.sleep(delay)  # retry pacing
                delay = min(delay * 2, FEED_RETRY_MAX_S)
                continue
            delay = FEED_RETRY_MIN_S
            events = [event]
            events += feed.take(APPLY_RUN_MAX - 1)  # what the feed holds: applied in one run
            listeners = self.listeners
            if listeners:  # each sees the summaries as of its event
                for event in events:
                    self.apply(event)
                    for listener in listeners:
                        listener(event)
            else:
                self.apply_many(events)
            for batch_listener in self.batch_listeners:
                batch_listener(events)
            self.applied.set()
