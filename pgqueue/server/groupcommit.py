"""Group commit: single operations arriving together share one transaction.

Natural batching, no timer: the first item is sent at once; while up to
``max_inflight`` batches are running, later items wait and go together in
the next batch (up to ``max_batch``).  At low load nothing is delayed; under
load many single PUSH / ACK / FAIL frames from many connections become one
statement each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Coalescer"]

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    """Runs ``run_batch(items) -> results`` (aligned) for items submitted one by one."""

    def __init__(
        self,
        run_batch: Callable[[list[T]], Awaitable[Sequence[R]]],
        *,
        max_batch: int = 500,
        max_inflight: int = 2,
    ) -> None:
        self._run_batch = run_batch
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
            batch = self._pending[: self._max_batch]
            del self._pending[: self._max_batch]
            task = asyncio.create_task(self._run(batch))
            self._tasks.add(task)
            task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._flush()

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        self.batches += 1
        self.items += len(batch)
        try:
            results = await self._run_batch([item for item, _ in batch])
        except BaseException as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
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
