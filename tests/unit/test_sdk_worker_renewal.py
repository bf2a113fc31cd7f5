"""A lease renewal that races the job's own ACK reports nothing.

The worker renews every lease it holds, and a job whose ACK is on its way is still
held (the outcome is recorded when the ACK returns).  When that ACK commits first,
the renewal finds the job finished and answers "lost": that is the ACK's success,
not a lost lease, and the worker must not report one (the soak's run 5 logged 500
such errors with every job completed once).  The ACK's own answer decides.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

from pgqueue import Worker
from pgqueue.client.job import Job
from pgqueue.client.transport import AckRequest, Lease, Renewal, Transport
from tests.unit.worker_transport import QuietTransport


class RacingTransport(QuietTransport):
    """One job; its ACK waits until a renewal of its lease has answered ``answer``."""

    def __init__(self, answer: Renewal, applied: bool) -> None:
        super().__init__()
        self.answer: Renewal = answer
        self.applied = applied
        self.pulls = 0
        self.ack_sent = asyncio.Event()
        self.renewed = asyncio.Event()
        self.extends = 0

    async def pull(
        self, queue: str, count: int, *, owner: str, lock_ttl_ms: int, timeout_ms: int
    ) -> list[Lease]:
        self.pulls += 1
        if self.pulls == 1:
            return [Lease({"id": "j1", "name": "n", "data": 1, "queue": queue}, "1:t", 1)]
        await self.closed.wait()
        return []

    async def ack(self, items: Sequence[AckRequest]) -> list[bool]:
        self.ack_sent.set()
        await self.renewed.wait()  # the ACK commits; its answer comes after the renewal's
        return [self.applied] * len(items)

    async def extend(self, items: Sequence[tuple[str, str]], duration_ms: int) -> list[Renewal]:
        self.extends += 1
        if self.ack_sent.is_set():
            self.renewed.set()
            return [self.answer] * len(items)
        return ["renewed"] * len(items)


async def _run(transport: RacingTransport) -> tuple[list[Exception], list[Any], list[Any]]:
    errors: list[Exception] = []
    completed: list[Any] = []
    lost: list[Any] = []

    async def handler(job: Job) -> str:
        return "done"

    worker = Worker(
        "q",
        handler,
        connection=cast(Transport, transport),
        concurrency=1,
        heartbeat_interval=0.01,
        lock_duration_ms=1_000,
    )
    worker.on("error", errors.append)
    worker.on("completed", lambda job, result: completed.append(job.id))
    worker.on("lost", lambda job, error: lost.append(job.id))
    finished = asyncio.Event()
    worker.on("completed", lambda *_: finished.set())
    worker.on("lost", lambda *_: finished.set())
    try:
        await asyncio.wait_for(finished.wait(), timeout=10)
    finally:
        transport.closed.set()
        await worker.close()
    return errors, completed, lost


async def test_a_renewal_that_finds_the_job_acked_reports_no_lost_lease() -> None:
    transport = RacingTransport("lost", applied=True)
    errors, completed, lost = await _run(transport)
    assert completed == ["j1"]
    assert lost == []
    assert errors == []


async def test_an_ack_refused_after_the_race_is_still_reported_lost_once() -> None:
    transport = RacingTransport("lost", applied=False)
    errors, completed, lost = await _run(transport)
    assert completed == []
    assert lost == ["j1"]
    assert [type(e).__name__ for e in errors] == ["LeaseLost"]
