"""Ack batching: completions wait at most ``max_delay`` (or until ``max_size``
are waiting) and go out as one ACKB; each caller learns its own outcome.

A batch that meets a dropped connection, an unavailable database or a commit
of unknown outcome is sent again (with the same lease tokens) until
``retry_for`` seconds have passed: an ack whose first try did commit then
comes back as not applied, never as a second completion, because the tokens
are fenced.  After a try of unknown outcome, "not applied" most likely means
"applied the first time", and is reported as applied.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from pgqueue.client.transport import AckRequest
from pgqueue.errors import (
    CommandTimeout,
    ConnectionLost,
    DatabaseUnavailable,
    IndeterminateCommit,
)

__all__ = ["TRANSIENT", "AckBatcher", "retrying"]

log = logging.getLogger("pgqueue.client.worker")

TRANSIENT = (ConnectionLost, CommandTimeout, DatabaseUnavailable, IndeterminateCommit)
RETRY_DELAYS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)

T = TypeVar("T")


async def retrying(call: Callable[[], Awaitable[T]], retry_for: float) -> T:
    """``await call()``, again after transient errors, for up to ``retry_for`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + retry_for
    attempt = 0
    while True:
        try:
            return await call()
        except TRANSIENT as exc:
            delay = RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)]
            if loop.time() + delay > deadline:
                raise
            log.info("retrying after %s: %s", type(exc).__name__, exc)
            attempt += 1
            await asyncio.sleep(delay)


Answer = Callable[[Sequence[tuple[AckRequest, T]], "list[bool] | Exception | None"], None]
"""How an :class:`AckBatcher` tells a batch's outcome: the batch (each request with
the tag it was added with) and whether each applied, the error every ack of the
batch met, or None (the delivery was cancelled)."""


class AckBatcher(Generic[T]):
    """Collects acks and sends them in batches (see the module docstring).

    A batch's outcome goes to ``answered`` once per batch, in a later step of the
    loop than the delivery (never inside it), each ack in the order it was added.
    """

    def __init__(
        self,
        send: Callable[[Sequence[AckRequest]], Awaitable[list[bool]]],
        answered: Answer[T],
        *,
        max_size: int = 50,
        max_delay: float = 0.05,
        retry_for: float = 30.0,
    ) -> None:
        self._send = send
        self._answered = answered
        self.max_size = max_size
        self.max_delay = max_delay
        self.retry_for = retry_for
        self._pending: list[tuple[AckRequest, T]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._sending: set[asyncio.Task[None]] = set()

    def add(self, request: AckRequest, tag: T) -> None:
        """Queue one ack; its outcome goes to ``answered`` with ``tag``."""
        pending = self._pending
        pending.append((request, tag))
        if len(pending) >= self.max_size:
            self._flush_now()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.max_delay, self._flush_now)

    def _flush_now(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        if batch:
            task = asyncio.get_running_loop().create_task(self._deliver(batch))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def _deliver(self, batch: list[tuple[AckRequest, T]]) -> None:
        requests = [request for request, _ in batch]
        uncertain = False
        loop = asyncio.get_running_loop()

        async def send() -> list[bool]:
            nonlocal uncertain
            try:
                return await self._send(requests)
            except TRANSIENT:
                uncertain = True
                raise

        try:
            outcomes = await retrying(send, self.retry_for)
        except Exception as exc:  # every caller of the batch learns of it
            loop.call_soon(self._answered, batch, exc)
            return
        except asyncio.CancelledError:
            loop.call_soon(self._answered, batch, None)
            raise
        if len(outcomes) != len(batch):
            wrong = ValueError(f"{len(outcomes)} ack outcomes for a batch of {len(batch)}")
            loop.call_soon(self._answered, batch, wrong)
            return
        if uncertain:
            outcomes = [True] * len(batch)
        loop.call_soon(self._answered, batch, outcomes)

    async def flush(self) -> None:
        """Send what is waiting now and wait for every batch in flight."""
        self._flush_now()
        while self._sending:
            await asyncio.wait(list(self._sending))
