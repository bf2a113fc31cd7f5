"""Who wants the claims' ``active`` events: the claim writes them only then.

A claim is neither an admission nor a terminal transition, so its ``active``
outbox event (one row per claimed job) exists for its observers only: a
subscriber of the queue's events (QueueEvents, SSE, WebSocket, a TCP
subscription, a broker's metrics and projection) or a webhook of
``job.started``.  A broker with such a subscriber holds a row of
``pgqueue_event_interest`` for the queue (``''``: every queue) until its session
ends (the row goes with it); an enabled webhook of ``job.started`` is read from
``pgqueue_webhooks``.  The claim statements write the events only when one of
them exists (migration 0027).

A registration must not lose the event of a claim that commits after the
subscriber was told it is subscribed.  A claim may read the interest with a
snapshot taken before the row committed; but PostgreSQL takes a statement's
table locks before its snapshot, and every claim statement reads the
always-empty ``pgqueue_claim_guard`` FOR KEY SHARE, so such a claim holds the
guard's ROW SHARE lock.  Hence :func:`wait_out_claims`: once the row committed,
take the guard's EXCLUSIVE lock in a transaction of its own, which waits out
every claim holding it (and nothing else: EXCLUSIVE does not conflict with a
reader's ACCESS SHARE, so a ``pg_dump`` never holds a registration up); every
claim after that reads with a snapshot that sees the row.  Claims queue behind
the lock for as long as it takes to get it, so each try waits
:data:`WAIT_LOCK_MS` at most and yields before the next one.

A broker server counts the claims (its metrics) without wanting their events: it
holds the queue :data:`TALLY` (``'*'``, no queue's name), and a claim statement
that writes no ``active`` events while such a row exists writes one ``claimed``
row (its queue, no job, payload ``{"count": n}``) instead (migration 0029).  The
statement reads both with one snapshot: each claim is counted once, from its
events or from its tally.

Interest is held, never released, while the broker lives: a subscription that
ends and resumes from its token (a client reconnecting) then still finds every
``active`` event of the queue written meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time

from pgqueue.db.errormap import TransientConflict
from pgqueue.db.executor import Database
from pgqueue.db.queries import Q, Query
from pgqueue.errors import StorageError

__all__ = ["TALLY", "WAIT_LOCK_MS", "EventInterest", "wait_out_claims"]

log = logging.getLogger("pgqueue.interest")

TALLY = "*"  # the interest in the claims' count (a tally row per claim statement)
WAIT_LOCK_MS = 100  # one try for the lock: the longest the claims queue behind it
WAIT_GIVE_UP_S = 60.0
WAIT_RETRY_MAX_S = 1.0


async def wait_out_claims(db: Database, lock: Query) -> None:
    """Wait until every claim that read the interest before this call has ended
    (``lock``: ``Q.interest_wait``); raise :class:`StorageError` after
    :data:`WAIT_GIVE_UP_S` of tries."""
    deadline = time.monotonic() + WAIT_GIVE_UP_S
    delay = 0.01
    while True:
        try:
            async with db.transaction() as tx:
                await tx.execute(Q.interest_lock_timeout, timeout_ms=WAIT_LOCK_MS)
                await tx.execute(lock)
            return
        except TransientConflict as exc:  # the lock was not had in time: claims go on
            if time.monotonic() >= deadline:
                raise StorageError(
                    f"a long claim transaction holds the claim guard: {exc}"
                ) from exc
            log.info("interest registration waits for a long reader of its table")
            await asyncio.sleep(delay)  # retry pacing: the claims run meanwhile
            delay = min(delay * 2, WAIT_RETRY_MAX_S)


class EventInterest:
    """The queues whose ``active`` events this broker's subscribers want."""

    def __init__(self, db: Database, namespace: str, broker_id: str) -> None:
        self._db = db
        self._namespace = namespace
        self._broker_id = broker_id
        self._held: set[str] = set()
        self._lock = asyncio.Lock()

    @property
    def held(self) -> frozenset[str]:
        """The queues held (``''``: every queue; :data:`TALLY`: the claims' count)."""
        return frozenset(self._held)

    async def hold(self, queue: str | None) -> None:
        """From the return on, every claim of ``queue`` (None: of every queue) that
        commits writes its ``active`` events, whichever broker claims (``queue``
        :data:`TALLY`: its ``claimed`` tally when it writes no events)."""
        key = queue or ""
        if self._covered(key):
            return
        async with self._lock:
            if self._covered(key):
                return
            await self._db.execute(
                Q.interest_hold, namespace=self._namespace, queue=key, broker_id=self._broker_id
            )
            await wait_out_claims(self._db, Q.interest_wait)
            self._held.add(key)

    def _covered(self, key: str) -> bool:
        return key in self._held or (key != TALLY and "" in self._held)
