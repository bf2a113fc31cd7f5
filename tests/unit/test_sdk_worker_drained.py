"""``drained`` comes after the outcome of the last job: an empty pull while the
last ACK (or FAIL) is still on its way does not say "drained" before the job's
``completed`` (``failed``) does.

Checked with a transport whose ACK / FAIL answers wait for a gate while the
worker's next pulls come back empty.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

import pytest

from pgqueue import Worker
from pgqueue.client.job import Job
from pgqueue.client.transport import AckRequest, FailRequest, Lease, Transport
from tests.unit.worker_transport import QuietTransport


class SlowOutcomeTransport(QuietTransport):
    """One job on the first pull, then empty pulls; outcomes answer once ``gate`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.pulls = 0
        self.empty_pulls = 0
        self.empty_pulled = asyncio.Event()
        self.gate = asyncio.Event()

    async def pull(
        self, queue: str, count: int, *, owner: str, lock_ttl_ms: int, timeout_ms: int
    ) -> list[Lease]:
        self.pulls += 1
        if self.pulls == 1:
            return [Lease({"id": "j1", "name": "n", "data": 1, "queue": queue}, "t1", 1)]
        self.empty_pulls += 1
        if self.empty_pulls >= 2:
            self.empty_pulled.set()
        await asyncio.sleep(0)  # a yield, as a real pull's I/O would: the loop runs on
        return []

    async def ack(self, items: Sequence[AckRequest]) -> list[bool]:
        await self.gate.wait()
        return [True] * len(items)

    async def fail(self, item: FailRequest) -> bool:
        await self.gate.wait()
        return True


@pytest.mark.parametrize("outcome", ["completed", "failed"])
async def test_drained_is_emitted_after_the_last_jobs_outcome(outcome: str) -> None:
    transport = SlowOutcomeTransport()
    happened: list[str] = []
    drained = asyncio.Event()

    async def handler(job: Job) -> int:
        if outcome == "failed":
            raise ValueError("boom")
        return 1

    worker = Worker(
        "q", handler, connection=cast(Transport, transport), ack_batch_delay=0, poll_timeout=0.05
    )
    worker.on(outcome, lambda *args: happened.append(outcome))

    def on_drained(*args: Any) -> None:
        happened.append("drained")
        drained.set()

    worker.on("drained", on_drained)
    try:
        # The pulls come back empty while the outcome waits at the gate.
        await asyncio.wait_for(transport.empty_pulled.wait(), timeout=10)
        assert happened == []
        transport.gate.set()
        await asyncio.wait_for(drained.wait(), timeout=10)
    finally:
        transport.gate.set()
        transport.closed.set()
        await worker.close()
    assert happened == [outcome, "drained"]
