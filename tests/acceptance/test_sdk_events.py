"""QueueEvents and Queue.wait_for, on both transports."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pgqueue.client import Job, Queue, QueueEvent, QueueEvents, open_transport
from pgqueue.errors import JobFailed, JobNotFound
from pgqueue.testing import eventually
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)
from tests.conftest import start_manager
from tests.helpers import trim_until


async def live(queue: Queue, events: QueueEvents) -> None:
    """Wait until ``events`` is subscribed: queue-level events go by until one arrives."""

    async def probe() -> bool:
        await queue.pause()
        await queue.resume()
        return events.confirmed.is_set()

    await eventually(probe, interval=0.05, message="event subscription live")


def of_job(seen: list[QueueEvent], job_id: str) -> list[str]:
    return [e.event for e in seen if e.job_id == job_id]


async def test_events_tell_a_jobs_life_in_order(sdk: SDK) -> None:
    queue = sdk.queue()
    events = sdk.events()
    seen: list[QueueEvent] = []
    events.on("pushed", seen.append)
    events.on("active", seen.append)
    events.on("progress", seen.append)
    events.on("completed", seen.append)
    await live(queue, events)

    async def handler(job: Job) -> str:
        await job.update_progress(40)
        return "shipped"

    sdk.worker(handler)
    job = await queue.add("ship", {"order": 9})
    await eventually(lambda: "completed" in of_job(seen, job.id), message="completed event")
    assert of_job(seen, job.id) == ["pushed", "active", "progress", "completed"]
    [progress] = [e for e in seen if e.event == "progress"]
    assert progress.progress == 40
    [completed] = [e for e in seen if e.event == "completed"]
    assert completed.returnvalue == "shipped"
    assert completed.queue == sdk.queue_name
    assert completed.cursor


async def test_failed_attempts_are_events_and_only_the_last_is_terminal(sdk: SDK) -> None:
    queue = sdk.queue()
    events = sdk.events()
    failed: list[QueueEvent] = []
    events.on("failed", failed.append)
    await live(queue, events)

    async def handler(job: Job) -> None:
        raise RuntimeError(f"attempt {job.attempts_made}")

    sdk.worker(handler)
    job = await queue.add("doomed", {}, attempts=2, backoff=0)
    await eventually(lambda: len(failed) == 2, message="two failed events")
    assert [(e.failed_reason, e.data.get("terminal")) for e in failed] == [
        ("attempt 0", False),
        ("attempt 1", True),
    ]
    assert {e.job_id for e in failed} == {job.id}


async def test_async_for_yields_every_event_of_the_queue(sdk: SDK) -> None:
    queue = sdk.queue()
    events = sdk.events()
    await live(queue, events)
    stream = aiter(events)  # sees every event from here on
    jobs = await queue.add_bulk([{"name": "n", "data": i} for i in range(3)])
    pushed: list[str] = []
    async with asyncio.timeout(10):
        async for event in stream:
            if event.event == "pushed":
                pushed.append(event.job_id)
            if len(pushed) == 3:
                break
    await stream.aclose()
    assert pushed == [job.id for job in jobs]


async def test_events_resume_after_a_cursor_without_gaps_or_repeats(sdk: SDK) -> None:
    queue = sdk.queue()
    witness = sdk.events()
    everything: list[QueueEvent] = []
    witness.on("pushed", everything.append)
    await live(queue, witness)
    reader = QueueEvents(sdk.queue_name, sdk.connection)
    got: list[QueueEvent] = []
    reader.on("pushed", got.append)
    await live(queue, reader)
    first = await queue.add_bulk([{"name": "before"} for _ in range(3)])
    await eventually(lambda: any(e.job_id == first[-1].id for e in got), message="reader saw")
    cursor = got[-1].cursor
    await reader.close()

    second = await queue.add_bulk([{"name": "after"} for _ in range(4)])
    await eventually(lambda: any(e.job_id == second[-1].id for e in everything), message="w")

    resumed = sdk.events(last_event_id=cursor)
    again: list[QueueEvent] = []
    resumed.on("pushed", again.append)
    await eventually(lambda: any(e.job_id == second[-1].id for e in again), message="resumed")
    assert [e.job_id for e in again] == [job.id for job in second]


async def test_wait_for_returns_the_result_even_when_the_job_finished_before(sdk: SDK) -> None:
    queue = sdk.queue()

    async def handler(job: Job) -> dict[str, Any]:
        return {"echo": job.data}

    sdk.worker(handler)
    job = await queue.add("echo", [1, 2])
    await eventually(lambda: _state_is(queue, job.id, "completed"), message="completed")
    assert await queue.wait_for(job.id, timeout=5) == {"echo": [1, 2]}
    assert await job.wait_until_finished(timeout=5) == {"echo": [1, 2]}


async def _state_is(queue: Queue, job_id: str, state: str) -> bool:
    return await queue.get_state(job_id) == state


async def test_wait_for_raises_job_failed_for_a_job_that_failed_for_good(sdk: SDK) -> None:
    queue = sdk.queue()

    async def handler(job: Job) -> None:
        raise RuntimeError("no such user")

    sdk.worker(handler)
    job = await queue.add("lookup", {}, attempts=1)
    with pytest.raises(JobFailed) as caught:
        await queue.wait_for(job, timeout=10)
    assert caught.value.job_id == job.id
    assert caught.value.failed_reason == "no such user"


async def test_wait_for_raises_timeout_error_when_the_job_does_not_finish(sdk: SDK) -> None:
    queue = sdk.queue()
    job = await queue.add("nobody-works", {})
    with pytest.raises(TimeoutError, match=job.id):
        await queue.wait_for(job, timeout=0.3)


async def test_wait_for_an_unknown_job_raises_job_not_found(sdk: SDK) -> None:
    queue = sdk.queue()
    with pytest.raises(JobNotFound):
        await queue.wait_for("no-such-job", timeout=5)


async def test_wait_for_raises_job_not_found_when_the_job_is_removed(sdk: SDK) -> None:
    queue = sdk.queue()
    job = await queue.add("doomed", {}, delay=3_600_000)
    waiting = asyncio.ensure_future(queue.wait_for(job, timeout=10))
    await eventually(lambda: queue._listener is not None, message="listener started")
    assert queue._listener is not None
    await live(queue, queue._listener)
    await queue.remove(job.id)
    with pytest.raises(JobNotFound):
        await waiting


class CountingReads:
    """A transport that counts get_job calls (re-reads would show up here)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def get_job(self, job_id: str) -> dict[str, Any] | None:
        self.reads += 1
        result: dict[str, Any] | None = await self.inner.get_job(job_id)
        return result


async def test_wait_for_is_woken_by_the_event_not_by_rereading_the_job(sdk: SDK) -> None:
    transport = CountingReads(open_transport(sdk.connection))
    await transport.start()
    queue = Queue(sdk.queue_name, transport)
    gate = asyncio.Event()
    try:

        async def handler(job: Job) -> str:
            await gate.wait()
            return "late"

        sdk.worker(handler)
        job = await queue.add("slow", {})
        waiting = asyncio.ensure_future(queue.wait_for(job, timeout=20))
        await eventually(lambda: queue._listener is not None, message="listener started")
        assert queue._listener is not None
        await live(queue, queue._listener)
        await eventually(lambda: _state_is(queue, job.id, "active"), message="active")
        transport.reads = 0
        await asyncio.sleep(1.0)  # a second of waiting: no re-reads once the stream is live
        assert transport.reads <= 1
        gate.set()
        assert await asyncio.wait_for(waiting, 10) == "late"
        assert transport.reads <= 1
    finally:
        gate.set()
        await queue.close()
        await transport.close()


async def test_many_waiters_on_one_job_all_get_its_result(sdk: SDK) -> None:
    queue = sdk.queue()
    gate = asyncio.Event()

    async def handler(job: Job) -> int:
        await gate.wait()
        return 99

    sdk.worker(handler)
    job = await queue.add("shared", {})
    waiters = [asyncio.ensure_future(queue.wait_for(job, timeout=10)) for _ in range(5)]
    await eventually(lambda: _state_is(queue, job.id, "active"), message="active")
    gate.set()
    assert await asyncio.gather(*waiters) == [99] * 5


async def test_a_job_whose_lease_expires_is_reported_stalled_and_runs_again(sdk: SDK) -> None:
    queue = sdk.queue()
    events = sdk.events()
    stalled: list[QueueEvent] = []
    events.on("stalled", stalled.append)
    await live(queue, events)
    job = await queue.add("abandoned", {})
    hung = open_transport(sdk.connection)  # a worker that takes the job and hangs
    await hung.start()
    try:
        [lease] = await hung.pull(
            sdk.queue_name, 1, owner="hung", lock_ttl_ms=200, timeout_ms=1_000
        )
        assert lease.job["id"] == job.id
        # no ack, no heartbeat: the lease runs out and the reaper takes the job back
        await eventually(lambda: [e.job_id for e in stalled] == [job.id], message="stalled")
    finally:
        await hung.close()

    async def handler(job: Job) -> str:
        return "second worker"

    sdk.worker(handler)
    assert await queue.wait_for(job, timeout=10) == "second worker"


async def test_events_resumed_from_a_pruned_cursor_report_the_lost_range(
    sdk: SDK, db_dsn: str, module_namespace: str
) -> None:
    """Issue 9 item 3: resuming from a position whose events retention pruned
    delivers a ``gap`` event naming the lost range, never silence."""
    queue = sdk.queue()
    reader = QueueEvents(sdk.queue_name, sdk.connection)
    got: list[QueueEvent] = []
    reader.on("pushed", got.append)
    await live(queue, reader)
    seen = await queue.add("seen", {})
    await eventually(lambda: any(e.job_id == seen.id for e in got), message="reader saw it")
    cursor = got[-1].cursor
    await reader.close()
    await queue.add_bulk([{"name": "lost"} for _ in range(5)])
    kept = await queue.add("kept", {})
    async with start_manager(db_dsn, module_namespace, broker_id="trimmer") as engine:
        assert await trim_until(engine, sdk.queue_name, 1) > 0

    resumed = sdk.events(last_event_id=cursor)
    gaps: list[QueueEvent] = []
    after: list[QueueEvent] = []
    resumed.on("gap", gaps.append)
    resumed.on("pushed", after.append)
    await eventually(lambda: bool(after), message="the kept event")
    assert len(gaps) == 1 and gaps[0].data["from"] == cursor and gaps[0].data["to"]
    assert [e.job_id for e in after] == [kept.id]
