"""Auto-batching: concurrent single pushes travel together as one PUSHB.

Each ``submit(queue, entry)`` joins its queue's open batch.  A batch leaves

- at once when it holds ``max_jobs`` (50) jobs;
- at the end of the current event-loop step when fewer than ``max_inflight``
  batches are on the way (the pushes made in one step — ``asyncio.gather`` of
  many ``add()`` — travel together);
- otherwise when a batch in flight comes back, or after ``max_delay``
  (5 ms) at the latest.

``max_inflight`` is 1 on both transports: the pushes made while a batch is on
its way leave together when it comes back, so a batch grows with the rate of
pushes and each commit carries as many as came (group commit that clocks
itself).  More batches in flight split the same pushes into smaller commits
for no more throughput: with 8 or 16 concurrent producers, 1 in flight instead of
4 (TCP) or 5 (embedded) took 25-35 % less client CPU per push and pushed 2-19 %
more (docs/performance.md, finding 38).

Every caller gets its own id or its own error.  Jobs were validated one by
one before they got here; a PUSHB is all-or-nothing, so when the broker
refuses a batch, nothing of it was admitted: if the error names a job
(``jobs[i]: ...``) that job gets it (without the prefix) and the others are
sent again without it; otherwise each job is sent again on its own, so that
each learns its own outcome.  An outcome the client cannot know (the
connection broke, no answer in time) reaches every job of the batch and
nothing is re-sent.  Jobs with dependencies, a parent or a dedup strategy
travel alone (their admission can fail on its own, and takes the engine's
slower graph path); two jobs with the same custom id or unique key never
share a batch (each gets what a PUSH of its own would give).

With ``direct_when_idle`` (both transports use it) a push made when nothing is
open or on its way is sent at once, in the caller's task: a lone push pays no
loop step, no timer and no task; the pushes that come while it is on its way
(the rest of a ``gather``) gather into a batch.  The entries are PUSHB entries
by default; the embedded transport batches the engine's job specs the same way
(``keys`` and ``solo`` say what a spec's custom id, unique key and solo-ness are).
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pgqueue.errors import CommandTimeout, ConnectionLost, IndeterminateCommit, PgQueueError

__all__ = ["AutoBatcher", "SendBatch"]

E = TypeVar("E")
"""A batched entry: a PUSHB entry (``dict``) or the engine's job spec."""

SendBatch = Callable[[str, list[E]], Awaitable[list[str]]]
"""``send(queue, entries) -> ids``: one PUSHB; raises for the whole batch."""

_JOB_INDEX = re.compile(r"^jobs\[(\d+)\]: ")
_SOLO_FIELDS = ("dependsOn", "parentId", "dedup")

OUTCOME_UNKNOWN = (ConnectionLost, CommandTimeout, IndeterminateCommit)
"""Errors after which a batch may or may not have been admitted: never re-sent here."""


@dataclass(eq=False)
class _Batch(Generic[E]):
    queue: str
    entries: list[E] = field(default_factory=list)
    futures: list[asyncio.Future[str]] = field(default_factory=list)
    keys: set[tuple[str, str]] = field(default_factory=set)
    timer: asyncio.TimerHandle | None = None
    scheduled: bool = False


def wire_keys(entry: dict[str, Any]) -> set[tuple[str, str]]:
    """The custom id and unique key of a PUSHB entry (two sharing one never share a batch)."""
    keys = set()
    if entry.get("customId") is not None:
        keys.add(("id", str(entry["customId"])))
    if entry.get("uniqueKey") is not None:
        keys.add(("key", str(entry["uniqueKey"])))
    return keys


def wire_solo(entry: dict[str, Any]) -> bool:
    """True for a PUSHB entry that travels alone (dependencies, a parent, a dedup strategy)."""
    return any(entry.get(name) for name in _SOLO_FIELDS)


class AutoBatcher(Generic[E]):
    """Coalesces single pushes into batches (see the module docstring)."""

    def __init__(
        self,
        send: SendBatch[E],
        *,
        max_jobs: int = 50,
        max_delay: float = 0.005,
        max_inflight: int = 1,
        keys: Callable[[E], set[tuple[str, str]]] = wire_keys,  # type: ignore[assignment]
        solo: Callable[[E], bool] = wire_solo,  # type: ignore[assignment]
        direct_when_idle: bool = False,
    ) -> None:
        self._send = send
        self.max_jobs = max_jobs
        self.max_delay = max_delay
        self.max_inflight = max_inflight
        self._keys = keys
        self._solo_entry = solo
        self._direct_when_idle = direct_when_idle
        self._direct = 0  # pushes sent at once (direct_when_idle), on their way
        self._open: dict[str, _Batch[E]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0
        self.jobs = 0

    def _inflight(self) -> int:
        return len(self._tasks) + self._direct

    async def submit(self, queue: str, entry: E) -> str:
        """Push one entry (a PUSHB entry: ``customId`` for a custom id); return its job id."""
        loop = asyncio.get_running_loop()
        if self._solo_entry(entry):
            return await self._solo(queue, entry)
        if self._direct_when_idle and not self._open and not self._inflight():
            return await self._at_once(queue, entry)
        keys = self._keys(entry)
        batch = self._open.get(queue)
        if batch is not None and batch.keys & keys:
            self._flush(batch)
            batch = None
        if batch is None:
            batch = self._open[queue] = _Batch(queue)
            batch.timer = loop.call_later(self.max_delay, self._flush, batch)
        future: asyncio.Future[str] = loop.create_future()
        batch.entries.append(entry)
        batch.futures.append(future)
        batch.keys |= keys
        if len(batch.entries) >= self.max_jobs:
            self._flush(batch)
        elif self._inflight() < self.max_inflight and not batch.scheduled:
            batch.scheduled = True
            loop.call_soon(self._flush_if_free, batch)
        return await future

    async def _at_once(self, queue: str, entry: E) -> str:
        """Nothing open or on its way: this push goes now, in the caller's task; the
        pushes that come while it is on its way gather into a batch."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._direct += 1
        try:
            await self._deliver(queue, [entry], [future])
        finally:
            self._direct -= 1
            self._flush_free()
        return future.result()

    async def _solo(self, queue: str, entry: E) -> str:
        """A job with dependencies, a parent or a dedup strategy travels alone: its
        admission can fail on its own (an unknown dependency) and takes the graph path."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._deliver(queue, [entry], [future]))
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return await future

    def _flush_if_free(self, batch: _Batch[E]) -> None:
        batch.scheduled = False
        if self._inflight() < self.max_inflight:
            self._flush(batch)

    def _flush(self, batch: _Batch[E]) -> None:
        if self._open.get(batch.queue) is not batch:
            return  # already sent
        del self._open[batch.queue]
        if batch.timer is not None:
            batch.timer.cancel()
        task = asyncio.create_task(self._run(batch), name="pgqueue:autobatch")
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._flush_free()

    def _flush_free(self) -> None:
        """Send open batches while fewer than ``max_inflight`` are on their way."""
        for batch in list(self._open.values()):
            if self._inflight() >= self.max_inflight:
                break
            self._flush(batch)

    async def _run(self, batch: _Batch[E]) -> None:
        await self._deliver(batch.queue, batch.entries, batch.futures)

    async def _deliver(
        self, queue: str, entries: list[E], futures: list[asyncio.Future[str]]
    ) -> None:
        while entries:
            self.batches += 1
            self.jobs += len(entries)
            try:
                ids = await self._send(queue, entries)
            except OUTCOME_UNKNOWN as exc:
                _fail(futures, exc)
                return
            except PgQueueError as exc:  # refused: nothing of the batch was admitted
                if len(entries) == 1:
                    _fail(futures, _single(exc))
                    return
                match = _JOB_INDEX.match(exc.message)
                index = int(match.group(1)) if match else -1
                if not 0 <= index < len(entries):
                    # Whose fault is it?  Each job goes again on its own.
                    await asyncio.gather(
                        *(
                            self._deliver(queue, [e], [f])
                            for e, f in zip(entries, futures, strict=True)
                        )
                    )
                    return
                _fail([futures[index]], _single(exc))
                entries = entries[:index] + entries[index + 1 :]
                futures = futures[:index] + futures[index + 1 :]
                continue
            except Exception as exc:  # a bug below: every caller learns of it
                _fail(futures, exc)
                return
            except asyncio.CancelledError:
                for future in futures:
                    future.cancel()
                raise
            for future, job_id in zip(futures, ids, strict=True):
                if not future.done():
                    future.set_result(job_id)
            return

    @property
    def waiting(self) -> int:
        """Jobs in batches that have not left yet."""
        return sum(len(batch.entries) for batch in self._open.values())

    async def close(self) -> None:
        """Send what is waiting and wait for every batch on the way."""
        while self._open or self._tasks:
            for batch in list(self._open.values()):
                self._flush(batch)
            if self._tasks:
                await asyncio.wait(set(self._tasks))


def _fail(futures: list[asyncio.Future[str]], exc: BaseException) -> None:
    for future in futures:
        if not future.done():
            future.set_exception(exc)


def _single(exc: PgQueueError) -> PgQueueError:
    """The error of one job of a batch, as a push of its own would raise it."""
    match = _JOB_INDEX.match(exc.message)
    if match is None:
        return exc
    single = copy.copy(exc)
    single.args = (exc.message[match.end() :],)
    return single
