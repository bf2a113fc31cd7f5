"""The one LISTEN connection of a manager: NOTIFY is a hint, polling is the truth.

Every state change that makes work available or must reach subscribers sends
``pg_notify('pgqueue_events', {"ns", "a", "b", "q"})``: ``a..b`` is the range of
outbox event ids written, ``q`` the queues touched (or null for "many").  Rare
writes send it inside their transaction (delivered at commit).  The hot path (push,
ack) sends it *after* its commit through :meth:`Notifier.hint`: a NOTIFY in the
writing transaction holds PostgreSQL's cluster-wide notification lock until the
commit record is flushed, which serialises every such commit (no group commit:
32 concurrent producers ran 2.9x slower).  Hints given while one is in flight are
merged into the next one, and a hint's own commit does not wait for the WAL flush.
The notifier

* wakes long-polling claims waiting on those queues: its own at once when its
  process gives the hint (the commit is done; no round trip through the
  database, and not woken again when that NOTIFY comes back), the others' on
  the NOTIFY.  A hint names the queues whose work it may have made available
  (``w``, when not all of ``q``: an ack's completions free work only on a
  limited or grouped queue); a claim that found nothing on a plain queue waits
  for work only (:meth:`Notifier.claim_waiter`), one held back by a limit or a
  group for any event of its queue.  A push's hint says how many jobs it
  made claimable (``n``): of the claims waiting idle on a queue, that many are
  woken, not all of them (one job, one claim, not a claim per waiter),
* passes the event id range to the outbox reader's fast path,
* reconnects with capped, jittered backoff when the connection breaks, and
  after every (re)connect tells everyone to resync (a lost NOTIFY only
  delays, it never loses anything: claims and the outbox are polled).

A write that comes alone (:meth:`Notifier.begin_write`: no other write of this
process in flight or just before it) carries its NOTIFY in its own transaction
instead: one statement, and the other processes' claims wake at its commit, not
one round trip later.  Its commit holds the notification lock through its WAL
flush, which costs nothing while no other notifying commit waits; a process
writing back to back, where group commit matters, hints after its commits.  The
payload names its sender (``s``), whose own claims were woken at the commit.

With ``poll_only`` (PgBouncer in transaction mode) it never LISTENs; waiters
simply time out after the poll interval.

A hint after a commit goes out only when another listener of the namespace may
hear it: each notifier says ``hello`` when its LISTEN starts and every other one
of the namespace answers ``here``.  Until :data:`ALONE_AFTER_S` have passed after
its own hello with no word from another listener, a notifier sends every hint;
then, alone (a producer process with no worker or broker on the database), it
hands its hints to its own waiters and hooks in-process and saves the statement
(a sequential push was two statements, the hint as costly as the insert).  A
hello from a newcomer ends that at once (and is answered), so the newcomer misses
at most the hints of the moment its hello takes to arrive, which its resync after
connecting and the polling cover.

Nor does a hint go out when every other listener of the namespace said it is
*deaf*: nothing of its process needs another process's hints (no waiting claim
or job wait, no prompt event subscription, no webhook leader with webhooks:
:meth:`Notifier.want`).  A notifier's hello and its answers say whether it is
deaf (``d``); it says ``hear`` as soon as something of its process needs hints
and ``deaf`` once nothing has for :data:`DEAF_AFTER_S` (claims come and go
between a worker's polls).  Every other notifier answers a ``hear`` (or a
``here`` that says a listener hears, unknown till then) with ``heard``, sent
after it has noted the hearer: a push whose hint it skipped before that
committed before the answer, and the hearer's claims claim again when an answer
(or a ``here`` to its hello) arrives, so such a push waits for no poll; a new
listener that hears is answered ``here`` alike.  So a notifier needs no time
after its hello to learn who hears.  A listener of another version (no ``d``)
hears; an unknown note wakes its claims, as the answer does here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pgqueue.config import Config
from pgqueue.db.executor import Database
from pgqueue.db.queries import Q
from pgqueue.errors import PgQueueError
from pgqueue.service import Service

__all__ = ["CHANNEL", "EventHint", "Notifier", "Wakeup", "hint_payload"]

log = logging.getLogger("pgqueue.notifier")

CHANNEL = "pgqueue_events"

EventHint = Callable[[int, int], None]
ResyncHook = Callable[[], None]

MAX_HINT_QUEUES = 16
OWN_RANGES = 64

ALONE_AFTER_S = 2.0
"""How long after its hello a notifier that heard no other listener keeps sending hints."""

INLINE_AFTER_S = 0.010
"""How long this process wrote nothing before a lone write may carry its NOTIFY."""

DEAF_AFTER_S = 5.0
"""How long after its last waiter left a notifier that wants nothing else says ``deaf``."""

PRESENCE_WORDS = ("hello", "here", "hear", "deaf", "heard")


def hint_payload(
    namespace: str,
    queues: set[str] | None,
    first: int,
    last: int,
    work: set[str] | None = None,
    jobs: int | None = None,
) -> str:
    """The NOTIFY payload of the SQL fragment ``notify_hint`` (``q`` null: many queues);
    ``work``: the queues whose work the events may have made available, when not all
    of them (``w``; absent: all of ``q``); ``jobs``: at most how many jobs they made
    claimable (``n``; absent: unknown)."""
    listed = sorted(queues) if queues is not None and len(queues) <= MAX_HINT_QUEUES else None
    hint: dict[str, Any] = {"ns": namespace, "a": first, "b": last, "q": listed}
    if work is not None and listed is not None and work != queues:
        hint["w"] = sorted(work)
    if jobs is not None:
        hint["n"] = jobs
    return json.dumps(hint)


@dataclass(slots=True, eq=False)
class Wakeup:
    """A waiter's two futures: ``work`` is set by a hint that may have made work
    available on its queue (a push, a retry, released dependents), ``event`` by
    every hint of its queue (a completion too: it frees a limit's or a group's slot).
    A plain :meth:`Notifier.waiter` has one future for both.  ``idle``: its claim
    is over and it waits (its next claim starts after any wake-up)."""

    work: asyncio.Future[None]
    event: asyncio.Future[None]
    idle: bool = False


def _work_to_wake(group: set[Wakeup], jobs: int | None) -> list[asyncio.Future[None]]:
    """The ``work`` futures a hint of ``jobs`` jobs sets among ``group``: every
    waiter's, but when more than ``jobs`` claims wait idle, only ``jobs`` of those
    (the claims still running are left alone: each idle one claims after the commit,
    so they cover the jobs).  A plain waiter (one future) is always woken."""
    open_ = [w for w in group if not w.work.done()]
    if jobs is not None:
        idle = [w for w in open_ if w.idle and w.work is not w.event]
        if len(idle) > jobs:
            plain = [w for w in open_ if w.work is w.event]
            return [w.work for w in idle[:jobs] + plain]
    return [w.work for w in open_]


class Notifier(Service):
    """Owns the LISTEN connection and dispatches hints."""

    name = "notifier"

    def __init__(self, db: Database, config: Config) -> None:
        super().__init__()
        self._db = db
        self._config = config
        self._waiters: dict[str, set[Wakeup]] = {}
        self._event_hooks: list[EventHint] = []
        self._resync_hooks: list[ResyncHook] = []
        self.connected = asyncio.Event()
        self.draining = False
        self.notifications = 0
        self.reconnects = 0
        self.hints_sent = 0
        # Hints waiting to be sent after their commits: queues (None: many), id range.
        self._hint_queues: set[str] | None = set()
        self._hint_work: set[str] = set()  # of _hint_queues, those with work
        self._hint_jobs: int | None = 0  # jobs made claimable (None: unknown)
        self._hint_range: tuple[int, int] | None = None
        self._hint_task: asyncio.Task[None] | None = None
        # Ranges of the hints sent from here: their NOTIFY wakes nobody here again.
        self._own_ranges: deque[tuple[int, int]] = deque(maxlen=OWN_RANGES)
        # Listener presence (see the module docstring): this notifier's own id, when
        # its hello went out, and whether another listener of the namespace spoke.
        self.instance = uuid.uuid4().hex
        self._hello_at: float | None = None
        self.peers_heard = False
        self._alone = False  # alone() found so since _hello_at
        self.hints_kept = 0
        self._presence_tasks: set[asyncio.Task[None]] = set()
        self._presence_out: deque[str] = deque()  # sent in order, one at a time
        self._presence_task: asyncio.Task[None] | None = None
        # Whether something of this process needs other processes' hints (said as
        # hear / deaf), and why: the sources of want(), how many waiters there are,
        # when the last one left; the other listeners that said they hear.
        self.hearing = False
        self._wants: set[str] = set()
        self._waiter_count = 0
        self._waiters_left_at = float("-inf")
        self._deaf_timer: asyncio.TimerHandle | None = None
        self.hearing_peers: set[str] = set()
        self.answers = 0  # answers to its hear or hello that made its claims claim again
        self._writing = 0  # autocommit writes of this process in flight (begin_write)
        self._written_at = float("-inf")  # when the last of them ended (monotonic)

    # -- waiting -----------------------------------------------------------

    @contextlib.contextmanager
    def waiter(self, queue: str) -> Iterator[asyncio.Future[None]]:
        """Register interest in ``queue`` *before* checking it, then await the future
        (set by every hint of ``queue``).

        Registering first closes the window in which a NOTIFY could arrive
        between an empty claim and the start of the wait.
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._registered(queue, Wakeup(future, future)):
            yield future

    @contextlib.contextmanager
    def claim_waiter(self, queue: str) -> Iterator[Wakeup]:
        """Like :meth:`waiter`, for a claim: after an empty claim, await ``work``
        when nothing was claimable, ``event`` when a limit or a group held work back
        (both are set from the registration on, so nothing given during the claim
        is missed whichever the claim turns out to need)."""
        loop = asyncio.get_running_loop()
        with self._registered(queue, Wakeup(loop.create_future(), loop.create_future())) as w:
            yield w

    @contextlib.contextmanager
    def _registered(self, queue: str, wakeup: Wakeup) -> Iterator[Wakeup]:
        waiters = self._waiters.setdefault(queue, set())
        waiters.add(wakeup)
        self._waiter_count += 1
        if not self.hearing:
            self._interest_changed()
        try:
            yield wakeup
        except BaseException:
            if wakeup.work is not wakeup.event:
                # A claim that ends by an error or a cancellation may have been
                # woken as the one claim for a job (here, or just before its
                # registration): another waiter takes the wake-up over.
                waiters.discard(wakeup)
                self.wake(queue, jobs=1)
            raise
        finally:
            waiters.discard(wakeup)
            if not waiters:
                self._waiters.pop(queue, None)
            self._waiter_count -= 1
            if not self._waiter_count:
                self._waiters_left_at = time.monotonic()
                self._interest_changed()
            for future in (wakeup.work, wakeup.event):
                if not future.done():
                    future.cancel()

    def begin_drain(self) -> None:
        """The broker drains: long polls stop waiting and claim nothing more."""
        self.draining = True
        self.wake(None)

    def waiter_count(self, queue: str) -> int:
        """How many claims wait on ``queue`` right now."""
        return len(self._waiters.get(queue, ()))

    def wake(self, queue: str | None, *, work: bool = True, jobs: int | None = None) -> None:
        """Wake the waiters of ``queue`` (all waiters when ``None``); ``work``: the
        events may have made work available (else only ``Wakeup.event`` is set);
        ``jobs``: at most that many jobs (None: unknown) — when more claims wait
        idle, only that many of them are woken for work."""
        if queue is None:
            groups = list(self._waiters.values())
        else:
            group = self._waiters.get(queue)
            groups = [group] if group else []
        for group in groups:
            for wakeup in list(group):
                if not wakeup.event.done():
                    wakeup.event.set_result(None)
            if work:
                for future in _work_to_wake(group, jobs):
                    future.set_result(None)

    # -- hints after commit ------------------------------------------------

    def hint(
        self,
        queues: Iterable[str],
        first: int | None,
        last: int | None,
        work: Iterable[str] | None = None,
        jobs: int | None = None,
    ) -> None:
        """Announce committed events ``first..last`` of ``queues`` (never waits);
        ``work``: those of ``queues`` whose work they may have made available
        (None: all of them); ``jobs``: at most how many jobs (None: unknown).

        The claims of this process waiting on ``queues`` are woken at once.  Merged
        with the hints not sent yet; one hint at a time is in flight.  A lost hint
        only delays (readers and claims poll), so a failed send is dropped."""
        if first is None or last is None:
            return
        queues = set(queues)
        working = queues if work is None else queues.intersection(work)
        for queue in queues:
            self.wake(queue, work=queue in working, jobs=jobs)
        if self._hint_queues is not None:
            self._hint_queues.update(queues)
            self._hint_work.update(working)
            if len(self._hint_queues) > MAX_HINT_QUEUES:
                self._hint_queues = None
        if working and self._hint_jobs is not None:
            self._hint_jobs = None if jobs is None else self._hint_jobs + jobs
        low, high = self._hint_range or (first, last)
        self._hint_range = (min(low, first), max(high, last))
        if self._hint_task is None or self._hint_task.done():
            if self.unheard():
                self._keep_hints()
                return
            self._hint_task = asyncio.get_running_loop().create_task(self._send_hints())

    def begin_write(self) -> bool:
        """Before an autocommit write that hints its events (:meth:`end_write` after
        it, whatever happens): whether it may carry its NOTIFY in its own transaction
        instead (one statement, and one round trip less before another process's
        claim wakes; then :meth:`hinted`, not :meth:`hint`).  Such a commit holds
        PostgreSQL's cluster-wide notification lock through its WAL flush, so no
        other notifying commit shares that flush (finding 1 of docs/performance.md);
        only a write that comes alone after a pause may: no other write of this
        process in flight or ended in the last :data:`INLINE_AFTER_S`, and another
        listener may hear it (not :meth:`alone`).  A process that
        writes back to back (throughput, and other processes may be doing the same)
        keeps its hints after the commits."""
        self._writing += 1
        return (
            self._writing == 1
            and time.monotonic() - self._written_at >= INLINE_AFTER_S
            and not self.unheard()
        )

    def end_write(self) -> None:
        """After a write of :meth:`begin_write`."""
        self._writing -= 1
        self._written_at = time.monotonic()

    def hinted(self, queues: Iterable[str], jobs: int | None = None) -> None:
        """A write of :meth:`begin_write` committed its NOTIFY (sent by this notifier:
        ``s`` in the payload): wake this process's claims on ``queues`` now, as
        :meth:`hint` does; its NOTIFY wakes nobody here again."""
        self.hints_sent += 1
        for queue in queues:
            self.wake(queue, jobs=jobs)

    def alone(self) -> bool:
        """Whether no other listener of the namespace can hear a hint: this notifier
        listens, said hello at least :data:`ALONE_AFTER_S` ago, and nobody answered."""
        hello = self._hello_at
        if hello is None or self.peers_heard:
            return False
        if not self._alone:  # once alone, until the next hello or a peer's word
            self._alone = asyncio.get_running_loop().time() - hello >= ALONE_AFTER_S
        return self._alone

    def unheard(self) -> bool:
        """Whether no other listener of the namespace needs a hint: this notifier
        listens and every other listener it heard of says it is deaf.  One it has
        not heard of yet (its answer to the hello on its way) claims again once it
        is heard of: it gets an answer then (:meth:`_presence`)."""
        return not self.hearing_peers and self._hello_at is not None

    # -- hearing: whether this process needs other processes' hints ---------------

    def want(self, source: str, wanted: bool) -> None:
        """Whether ``source`` (an outbox reader's prompt subscriptions, a webhook
        leader with webhooks) needs the hints of other processes' writes; waiting
        claims and job waits count by themselves."""
        if wanted == (source in self._wants):
            return
        if wanted:
            self._wants.add(source)
        else:
            self._wants.discard(source)
        self._interest_changed()

    def _interest_changed(self) -> None:
        """Say ``hear`` at once when something needs hints, ``deaf`` once nothing
        has for :data:`DEAF_AFTER_S` since the last waiter left."""
        if self._wants or self._waiter_count:
            if not self.hearing:
                self.hearing = True
                self._say_state()
            return
        if not self.hearing:
            return
        left = self._waiters_left_at + DEAF_AFTER_S - time.monotonic()
        if left > 0:
            if self._deaf_timer is None:
                self._deaf_timer = asyncio.get_running_loop().call_later(left, self._deaf_due)
            return
        if self._deaf_timer is not None:
            self._deaf_timer.cancel()
            self._deaf_timer = None
        self.hearing = False
        self._say_state()

    def _deaf_due(self) -> None:
        self._deaf_timer = None
        self._interest_changed()

    def _say_state(self) -> None:
        """Tell the other listeners (a notifier not listening says it in its hello)."""
        if self._hello_at is not None:
            self._announce("hear" if self.hearing else "deaf")

    def _keep_hints(self) -> None:
        """Deliver the merged hints in this process only (what the NOTIFY would have
        done on its way back through the LISTEN connection): the hooks are called
        now, as :meth:`dispatch` calls them, not in a loop step of their own (a
        sequential push paid one more event-loop iteration per add for it)."""
        assert self._hint_range is not None
        self.hints_kept += 1
        first, last = self._hint_range  # its queues were woken at hint time: hooks only
        self._hint_queues, self._hint_work, self._hint_range = set(), set(), None
        self._hint_jobs = 0
        self.notifications += 1
        for hook in self._event_hooks:
            hook(first, last)

    def _take_hints(self) -> str:
        """The payload of the merged hints, which are reset."""
        assert self._hint_range is not None
        first, last = self._hint_range
        queues, work, jobs = self._hint_queues, self._hint_work, self._hint_jobs
        self._hint_queues, self._hint_work, self._hint_range = set(), set(), None
        self._hint_jobs = 0
        return hint_payload(self._config.namespace, queues, first, last, work, jobs or None)

    async def _send_hints(self) -> None:
        while self._hint_range is not None:
            self._own_ranges.append(self._hint_range)
            payload = self._take_hints()
            try:
                await self._db.fetchval(Q.event_hint, payload=payload)
                self.hints_sent += 1
            except PgQueueError as exc:
                log.debug("hint not sent (%s): readers will poll", exc)

    async def flush_hints(self) -> None:
        """Wait for the hints given so far to be sent (on close)."""
        task = self._hint_task
        if task is not None and not task.done():
            with contextlib.suppress(Exception):
                await task
        if self._presence_tasks:
            await asyncio.wait(set(self._presence_tasks))

    async def stop(self) -> None:
        await super().stop()
        if self._deaf_timer is not None:  # no deaf said by a stopped notifier
            self._deaf_timer.cancel()
            self._deaf_timer = None
        for task in list(self._presence_tasks):  # an answer given while stopping
            task.cancel()
        if self._presence_tasks:
            await asyncio.wait(set(self._presence_tasks))

    # -- hooks ------------------------------------------------------------

    def on_events(self, hook: EventHint) -> None:
        """Call ``hook(first_id, last_id)`` for every event range hinted (once per hook)."""
        if hook not in self._event_hooks:
            self._event_hooks.append(hook)

    def on_resync(self, hook: ResyncHook) -> None:
        """Call ``hook()`` after every (re)connect: hints may have been missed."""
        if hook not in self._resync_hooks:
            self._resync_hooks.append(hook)

    def dispatch(self, payload: str) -> None:
        """Handle one NOTIFY payload (ignores other namespaces and garbage)."""
        try:
            hint: Any = json.loads(payload)
        except ValueError:
            return
        if not isinstance(hint, dict) or hint.get("ns") != self._config.namespace:
            return
        if "a" not in hint and any(word in hint for word in PRESENCE_WORDS):
            self._presence(hint)
            return
        self.notifications += 1
        first, last = hint.get("a"), hint.get("b")
        queues, work, jobs = hint.get("q"), hint.get("w"), hint.get("n")
        if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
            jobs = None
        own: Any = (first, last)
        if hint.get("s") == self.instance:
            pass  # sent in a write's transaction here: woken at its commit (hinted)
        elif own in self._own_ranges:
            self._own_ranges.remove(own)  # its queues were woken at hint time
        elif isinstance(queues, list):
            for queue in queues:
                if isinstance(queue, str):
                    self.wake(queue, work=not isinstance(work, list) or queue in work, jobs=jobs)
        else:
            self.wake(None)
        if isinstance(first, int) and isinstance(last, int):
            for hook in self._event_hooks:
                hook(first, last)

    def _presence(self, note: dict[str, Any]) -> None:
        """Another listener of the namespace said hello (answer it: here), here,
        hear (answer it: heard) or deaf; or answered this one's hello or hear."""
        word = next(w for w in PRESENCE_WORDS if w in note)
        sender = note[word]
        if sender == self.instance or not isinstance(sender, str):
            return
        self.peers_heard = True
        if word in ("here", "heard") and note.get("to") == self.instance and self.hearing:
            # The answer went out after its sender noted this one's hearing: what it
            # pushed before without a hint is committed; the claims claim again.
            self.answers += 1
            self._resync()
        if word == "heard":
            return
        if word == "deaf" or (word != "hear" and note.get("d")):
            self.hearing_peers.discard(sender)
            new = False
        else:
            new = sender not in self.hearing_peers
            self.hearing_peers.add(sender)
        if word == "hello":
            self._announce("here", to=sender)
        elif word == "hear" or new:  # what went out unhinted before this is committed
            self._announce("heard", to=sender)

    def _announce(self, word: str, *, to: str | None = None) -> None:
        """Send a presence note; in order, one statement at a time."""
        note: dict[str, Any] = {"ns": self._config.namespace, word: self.instance}
        if to is not None:
            note["to"] = to
        if word in ("hello", "here") and not self.hearing:
            note["d"] = 1
        self._presence_out.append(json.dumps(note))
        if self._presence_task is None or self._presence_task.done():
            task = asyncio.get_running_loop().create_task(self._send_presence())
            self._presence_task = task
            self._presence_tasks.add(task)
            task.add_done_callback(self._presence_tasks.discard)

    async def _send_presence(self) -> None:
        while self._presence_out:
            payload = self._presence_out.popleft()
            try:
                await self._db.fetchval(Q.event_hint, payload=payload)
            except PgQueueError as exc:
                # An answer or a deaf lost: the other side keeps sending hints.  A
                # hear lost: the claims here poll until the next hello says it.
                log.debug("presence not sent (%s)", exc)

    def _resync(self) -> None:
        self.wake(None)
        for hook in self._resync_hooks:
            hook()

    # -- the connection loop ---------------------------------------------

    async def run(self) -> None:
        if self._config.poll_only:
            self.started.set()
            await asyncio.Event().wait()
            return
        delay = 0.1
        ping_every = max(self._config.poll_interval_ms / 1000 * 4, 1.0)
        while True:
            try:
                async with self._db.listen([CHANNEL]) as listener:
                    self.connected.set()
                    self.started.set()
                    self._hello_at = asyncio.get_running_loop().time()
                    self._alone = False
                    self._announce("hello")
                    self._resync()
                    delay = 0.1
                    while True:
                        try:
                            async with asyncio.timeout(ping_every):
                                note = await listener.get()
                        except TimeoutError:
                            await listener.ping()
                            continue
                        self.dispatch(note.payload)
            except asyncio.CancelledError:
                raise
            except (PgQueueError, OSError) as exc:
                self.connected.clear()
                self._hello_at = None  # not listening: hints go out until the next hello
                self.reconnects += 1
                log.warning("LISTEN connection lost (%s); reconnecting in %.1fs", exc, delay)
                self.started.set()
                self._resync()
                await asyncio.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 5.0)
