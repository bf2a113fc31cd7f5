"""Group commit: single operations arriving together share one transaction.

Natural batching, no timer: the first item is sent at once; while up to
``max_inflight`` batches are running, later items wait and go together in
the next batch (up to ``max_batch``).  At low load nothing is delayed; under
load many single PUSH / ACK / FAIL frames from many connections become one
statement each.

Each item is still decided on its own (G10: a bad request affects only
itself):

- two items with the same ``key`` (a job id, a custom id) never share a
  batch: the later one waits for the next, so that it is decided after the
  first, exactly as if it had been sent alone;
- when a batch is refused with a :class:`~pgqueue.errors.ValidationError`
  (by contract nothing of it was written), it is split in halves and each
  half is run again, down to single items: the item at fault gets its error,
  every other item its own outcome.  A batch of ``n`` with ``k`` bad items
  costs about ``2·k·log2(n)`` extra runs, and a run that fails validation
  fails before it reaches the database.

Any other error (the database unavailable, a commit of unknown outcome, a
fenced session) concerns the whole batch, and every item gets it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

from pgqueue.errors import ValidationError

__all__ = ["Coalescer"]

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    """Runs ``run_batch(items) -> results`` (aligned) for items submitted one by one."""

    def __init__(
        self,
        run_batch: Callable[[list[T]], Awaitable[Sequence[R]]],
        *,
        key: Callable[[T], Hashable | None] | None = None,
        max_batch: int = 500,
        max_inflight: int = 2,
    ) -> None:
        self._run_batch = run_batch
        self._key = key
        self._max_batch = max_batch
        self._max_inflight = max_inflight
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.batches = 0
        self.items = 0

    @property
    def waiting(self) -> int:
        """Items submitted and not yet in a batch."""
        return len(self._pending)

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        self._flush()
        return await future

    def _flush(self) -> None:
        while self._pending and len(self._tasks) < self._max_inflight:
            batch = self._take()
            task = asyncio.create_task(self._run(batch))
            self._tasks.add(task)
            task.add_done_callback(self._done)

    def _take(self) -> list[tuple[T, asyncio.Future[R]]]:
        """The next batch: the oldest items, at most one per key."""
        if self._key is None:
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
            return batch
        batch, later = [], []
        keys: set[Hashable] = set()
        for entry in self._pending:
            key = self._key(entry[0])
            if len(batch) >= self._max_batch or (key is not None and key in keys):
                later.append(entry)
                continue
            if key is not None:
                keys.add(key)
            batch.append(entry)
        self._pending = later
        return batch

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._flush()

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        self.batches += 1
        self.items += len(batch)
        try:
            results = await self._run_batch([item for item, _ in batch])
        except ValidationError as exc:
            if len(batch) == 1:
                _fail(batch, exc)
                return
            middle = len(batch) // 2
            await self._run(batch[:middle])
            await self._run(batch[middle:])
            return
        except BaseException as exc:
            _fail(batch, exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)

    async def close(self) -> None:
        """Wait for the batches in flight (new submissions still get served)."""
        while self._tasks or self._pending:
            self._flush()
            if self._tasks:
                await asyncio.wait(set(self._tasks))


def _fail(batch: list[tuple[T, asyncio.Future[R]]], exc: BaseException) -> None:
    for _, future in batch:
        if not future.done():
            future.set_exception(exc)
