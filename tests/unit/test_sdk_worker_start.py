"""The SDK worker starts the handlers of a pulled batch before it pulls again.

An idle worker's next pull goes on the wire (a claim statement, a PULLB frame)
as soon as a batch arrives; starting the batch's handlers first keeps that
round trip, and the database process it wakes, out of the start latency.
Checked on the order of events with a transport that records its calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import cast

from pgqueue import Worker
from pgqueue.client.job import Job
from pgqueue.client.transport import AckRequest, Lease, Transport
from tests.unit.worker_transport import QuietTransport


class RecordingTransport(QuietTransport):
    """Hands out one batch of ``jobs`` on the first pull, then waits until closed."""

    def __init__(self, log: list[str], jobs: int) -> None:
        super().__init__()
        self.log = log
        self.jobs = jobs
        self.pulls = 0
        self.pulled_again = asyncio.Event()

    async def pull(
        self, queue: str, count: int, *, owner: str, lock_ttl_ms: int, timeout_ms: int
    ) -> list[Lease]:
        self.pulls += 1
        self.log.append(f"pull {self.pulls}")  # the request is on its way from here
        if self.pulls == 1:
            return [
                Lease({"id": f"j{i}", "name": "n", "data": i, "queue": queue}, f"t{i}", 1)
                for i in range(self.jobs)
            ]
        self.pulled_again.set()
        await self.closed.wait()
        return []

    async def ack(self, items: Sequence[AckRequest]) -> list[bool]:
        return [True] * len(items)


async def test_the_handlers_of_a_batch_start_before_the_next_pull_is_sent() -> None:
    log: list[str] = []
    started = asyncio.Event()
    transport = RecordingTransport(log, jobs=3)

    async def handler(job: Job) -> None:
        log.append(f"start {job.data}")
        if job.data == 2:
            started.set()

    worker = Worker("q", handler, connection=cast(Transport, transport), concurrency=5)
    try:
        await asyncio.wait_for(started.wait(), timeout=10)
        await asyncio.wait_for(transport.pulled_again.wait(), timeout=10)
    finally:
        transport.closed.set()
        await worker.close()
    assert log[:5] == ["pull 1", "start 0", "start 1", "start 2", "pull 2"]
