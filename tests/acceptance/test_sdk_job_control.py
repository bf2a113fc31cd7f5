"""Job control through the SDK on both transports: update data, priority, delay,
discard, move to delayed (from outside and from the handler), the job view's
stall timeout and last heartbeat, the workers and webhooks listings."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import asyncio
import uuid

import pytest

from pgqueue.client import Admin, Job, Queue
from pgqueue.errors import InvalidState, JobNotFound
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


async def test_the_data_and_priority_of_a_waiting_job_change_before_it_runs(sdk: SDK) -> None:
    queue = sdk.queue()
    job = await queue.add("n", {"v": 1})
    await queue.update_job_data(job.id, {"v": 2, "k": [1]})
    await queue.change_job_priority(job.id, 7)
    stored = await queue.get_job(job.id)
    assert stored is not None
    assert (stored.data, stored.priority, stored.state) == ({"v": 2, "k": [1]}, 7, "prioritized")
    await stored.update_data({"v": 3})
    await stored.change_priority(0, lifo=True)
    again = await queue.get_job(job.id)
    assert again is not None and (again.data, again.state) == ({"v": 3}, "waiting")
    with pytest.raises(JobNotFound):
        await queue.update_job_data("no-such-job", 1)


async def test_a_waiting_job_is_delayed_promoted_and_delayed_again(sdk: SDK) -> None:
    queue = sdk.queue()
    job = await queue.add("n", 1)
    await queue.move_job_to_delayed(job.id, 600_000)
    assert await queue.get_state(job.id) == "delayed"
    await queue.promote(job.id)
    await queue.change_job_delay(job.id, 600_000)
    assert await queue.get_state(job.id) == "delayed"
    await queue.promote(job.id)
    stored = await queue.get_job(job.id)
    assert stored is not None
    await stored.move_to_delayed(600_000)  # a job read back carries no token
    assert await queue.get_state(job.id) == "delayed"


async def test_discard_dead_letters_a_waiting_job(sdk: SDK) -> None:
    queue = sdk.queue()
    job = await queue.add("n", 1)
    await queue.discard(job.id)
    assert await queue.get_state(job.id) == "failed"
    [entry] = await queue.get_dlq()
    assert entry["reason"] == "explicit_fail"
    with pytest.raises(InvalidState):
        await queue.discard(job.id)


async def test_a_handler_moves_its_job_to_delayed_and_the_worker_sends_no_outcome(
    sdk: SDK,
) -> None:
    queue = sdk.queue()
    runs: list[int] = []

    async def handler(job: Job) -> str:
        runs.append(job.attempts_made)
        if len(runs) == 1:
            await job.move_to_delayed(0)  # again at once, no attempt used
            return "ignored"
        return "second run"

    worker = sdk.worker(handler)
    job = await queue.add("n", 1)
    assert await queue.wait_for(job, timeout=10) == "second run"
    assert runs == [0, 0]
    assert (worker.processed, worker.lost, worker.failed) == (1, 0, 0)


async def test_a_handler_discards_its_job(sdk: SDK) -> None:
    queue = sdk.queue()

    async def handler(job: Job) -> None:
        await job.discard()

    worker = sdk.worker(handler)
    job = await queue.add("n", 1, attempts=5)
    await eventually(
        lambda: _state_is(queue, job.id, "failed"), timeout=10, message="dead-lettered"
    )
    assert (worker.processed, worker.lost, worker.failed) == (0, 0, 0)


async def _state_is(queue: Queue, job_id: str, state: str) -> bool:
    return await queue.get_state(job_id) == state


async def test_the_job_shows_its_timeouts_and_its_last_heartbeat(sdk: SDK) -> None:
    queue = sdk.queue()
    beats = asyncio.Event()
    release = asyncio.Event()

    async def handler(job: Job) -> None:
        await release.wait()

    worker = sdk.worker(handler, lock_duration_ms=4_000, heartbeat_interval=0.2)
    worker.on("active", lambda job: beats.set())
    job = await queue.add("n", 1, stall_timeout=9_000, timeout=60_000)
    await asyncio.wait_for(beats.wait(), 10)
    first = await queue.get_job(job.id)
    assert first is not None and first.state == "active"
    assert (first.stall_timeout, first.timeout) == (9_000, 60_000)
    assert first.last_heartbeat is not None and first.processed_on is not None

    async def renewed() -> bool:
        seen = await queue.get_job(job.id)
        assert seen is not None and seen.last_heartbeat is not None
        return seen.last_heartbeat > first.processed_on  # type: ignore[operator]

    await eventually(renewed, timeout=10, message="a heartbeat was recorded")
    seen = await queue.get_job(job.id)
    assert seen is not None and seen.last_heartbeat is not None
    # The last heartbeat, not the lease deadline (which lies ahead).
    assert seen.last_heartbeat < seen.processed_on + 30_000  # type: ignore[operator]
    release.set()
    await queue.wait_for(job, timeout=10)


async def test_workers_and_webhooks_are_listed(sdk: SDK) -> None:
    queue = sdk.queue()

    async def handler(job: Job) -> None:
        return None

    worker = sdk.worker(handler)

    async def listed() -> bool:
        return any(w.get("workerId") == worker.id for w in await queue.get_workers())

    await eventually(listed, timeout=10, message="the worker registered")
    [mine] = [w for w in await queue.get_workers() if w["workerId"] == worker.id]
    assert mine["queues"] == [sdk.queue_name]
    hook = await queue.add_webhook(
        f"https://hooks-{uuid.uuid4().hex[:6]}.example.com/in", ["job.completed"]
    )
    other = sdk.queue(f"{sdk.queue_name}-other")
    [listed_hook] = await queue.list_webhooks()
    assert (listed_hook["id"], listed_hook["queue"], listed_hook["events"]) == (
        hook,
        sdk.queue_name,
        ["job.completed"],
    )
    assert await other.list_webhooks() == []
    async with Admin(sdk.connection) as admin:
        assert hook in [w["id"] for w in await admin.get_webhooks()]
    assert await queue.remove_webhook(hook) is True
    assert await queue.remove_webhook(hook) is False
    assert await queue.list_webhooks() == []
