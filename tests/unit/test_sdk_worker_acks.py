"""The Worker's per-job bookkeeping around its ACK batches: each job of a batch
learns its own outcome, in the order the jobs were handed in, outside the
batch's delivery; a batch's error reaches every job of it; a handler's task
leaves the worker's task set as it ends; a force close that cancels handlers
before they started still ends.

Checked with a transport whose pulls are scripted and whose ACK answers are
given by the test.
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


class ScriptedTransport(QuietTransport):
    """``jobs`` on the first pull, then empty pulls; ACKs answer ``applied`` (or raise
    ``error``) and are recorded with the task that delivered them."""

    def __init__(
        self, jobs: int, applied: list[bool] | None = None, error: Exception | None = None
    ) -> None:
        super().__init__()
        self.jobs = jobs
        self.applied = applied
        self.error = error
        self.pulls = 0
        self.acked: list[AckRequest] = []
        self.ack_tasks: list[asyncio.Task[Any] | None] = []
        self.answered = asyncio.Event()
        self.failed: list[FailRequest] = []

    def leases(self, queue: str) -> list[Lease]:
        return [
            Lease({"id": f"j{i}", "name": "n", "data": i, "queue": queue}, f"t{i}", 1)
            for i in range(self.jobs)
        ]

    async def pull(
        self, queue: str, count: int, *, owner: str, lock_ttl_ms: int, timeout_ms: int
    ) -> list[Lease]:
        self.pulls += 1
        if self.pulls == 1:
            return self.leases(queue)
        await asyncio.sleep(0)  # a yield, as a real pull's I/O would
        return []

    async def ack(self, items: Sequence[AckRequest]) -> list[bool]:
        self.acked.extend(items)
        self.ack_tasks.append(asyncio.current_task())
        self.answered.set()
        if self.error is not None:
            raise self.error
        return list(self.applied) if self.applied is not None else [True] * len(items)

    async def fail(self, item: FailRequest) -> bool:
        self.failed.append(item)
        return True

    async def extend(self, held: Sequence[tuple[str, str]], ttl: int) -> list[str]:
        return ["renewed"] * len(held)


RESULTS: list[Any] = [None, {"a": [1, 2.5, "x"]}, "text", 0, [], {"nested": {"n": None}}]


def _worker(transport: ScriptedTransport, handler: Any) -> Worker:
    return Worker(
        "q",
        handler,
        connection=cast(Transport, transport),
        concurrency=len(RESULTS),
        ack_batch_size=len(RESULTS),
        ack_batch_delay=30,  # the batch goes when full: one batch of all the jobs
        poll_timeout=0.05,
    )


async def _results(job: Job) -> Any:
    return RESULTS[job.data]


async def test_each_job_of_a_batch_learns_its_own_outcome_in_order() -> None:
    applied = [True, False, True, True, False, True]
    transport = ScriptedTransport(len(RESULTS), applied)
    worker = _worker(transport, _results)
    completed: list[tuple[str, Any, Any, asyncio.Task[Any] | None]] = []
    lost: list[str] = []
    drained = asyncio.Event()
    worker.on(
        "completed",
        lambda job, result: completed.append(
            (job.id, result, job.returnvalue, asyncio.current_task())
        ),
    )
    worker.on("lost", lambda job, error: lost.append(job.id))
    worker.on("error", lambda error: None)
    worker.on("drained", lambda: drained.set())
    try:
        await asyncio.wait_for(drained.wait(), timeout=10)
    finally:
        await worker.close()
    assert [item.job_id for item in transport.acked] == [f"j{i}" for i in range(len(RESULTS))]
    assert [item.result for item in transport.acked] == RESULTS
    assert all(a.result is r for a, r in zip(transport.acked, RESULTS, strict=True))
    ok = [i for i, yes in enumerate(applied) if yes]
    assert [c[0] for c in completed] == [f"j{i}" for i in ok]
    assert all(
        c[1] is RESULTS[i] and c[2] is RESULTS[i] for c, i in zip(completed, ok, strict=True)
    )
    # fired outside the batch's delivery (not in the task that sent the ACK)
    assert all(c[3] is not transport.ack_tasks[0] for c in completed)
    assert lost == [f"j{i}" for i, yes in enumerate(applied) if not yes]
    assert (worker.processed, worker.lost) == (len(ok), len(RESULTS) - len(ok))
    assert worker._held == {} and worker._recording == set() and worker._tasks == set()


async def test_a_batchs_error_reaches_every_job_of_it() -> None:
    transport = ScriptedTransport(len(RESULTS), error=ValueError("refused batch"))
    worker = _worker(transport, _results)
    errors: list[BaseException] = []
    completed: list[str] = []
    drained = asyncio.Event()
    worker.on("error", errors.append)
    worker.on("completed", lambda job, result: completed.append(job.id))
    worker.on("drained", lambda: drained.set())
    try:
        await asyncio.wait_for(drained.wait(), timeout=10)
    finally:
        await worker.close()
    assert [str(e) for e in errors] == ["refused batch"] * len(RESULTS)
    assert completed == [] and worker.processed == 0
    assert worker._held == {} and worker._recording == set()


async def test_a_handler_failure_still_fails_with_its_text() -> None:
    transport = ScriptedTransport(2)

    async def handler(job: Job) -> None:
        if job.data == 1:
            raise RuntimeError("handler said no")

    worker = Worker("q", handler, connection=cast(Transport, transport), concurrency=2)
    failed: list[tuple[str, str]] = []
    done = asyncio.Event()
    worker.on("failed", lambda job, error: failed.append((job.id, job.failed_reason)))
    worker.on("drained", lambda: done.set())
    try:
        await asyncio.wait_for(done.wait(), timeout=10)
    finally:
        await worker.close()
    assert failed == [("j1", "handler said no")]
    assert [item.error for item in transport.failed] == ["handler said no"]
    assert [item.job_id for item in transport.acked] == ["j0"]
    assert worker._tasks == set()


@pytest.mark.parametrize("jobs", [1, 5])
async def test_a_force_close_before_the_handlers_started_ends(jobs: int) -> None:
    """close(force=True) running between the pull and the handlers' first step
    cancels tasks that never ran: the close still ends."""
    started: list[str] = []

    class ClosingTransport(ScriptedTransport):
        worker: Worker

        def leases(self, queue: str) -> list[Lease]:
            # its first step comes before the handlers' (they are made after this returns)
            asyncio.get_running_loop().create_task(self.worker.close(force=True))
            return super().leases(queue)

    async def handler(job: Job) -> None:
        started.append(job.id)

    transport = ClosingTransport(jobs)
    worker = Worker("q", handler, connection=cast(Transport, transport), concurrency=jobs)
    transport.worker = worker
    await asyncio.wait_for(worker.run(), timeout=10)
    assert started == []
    assert not worker.running
