"""A Worker whose lease was lost while its handler ran: the late ACK is not a completion."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import asyncio

from pgqueue.client import Job, open_transport
from pgqueue.client.transport import AckRequest
from pgqueue.errors import LeaseLost
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
from tests.helpers import expire_lease


async def test_a_late_ack_after_another_worker_finished_the_job_is_a_lost_lease(
    sdk: SDK, db_dsn: str, module_namespace: str
) -> None:
    queue = sdk.queue()
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(job: Job) -> str:
        started.set()
        await release.wait()
        return "late"

    worker = sdk.worker(slow, concurrency=1)
    lost: list[tuple[str, Exception]] = []
    completed: list[str] = []
    worker.on("lost", lambda job, error: lost.append((job.id, error)))
    worker.on("completed", lambda job, result: completed.append(job.id))
    errors: list[Exception] = []
    worker.on("error", errors.append)
    job = await queue.add("n", 1)
    await asyncio.wait_for(started.wait(), 10)

    await expire_lease(db_dsn, module_namespace, job.id)

    async def waiting() -> bool:
        return await queue.get_state(job.id) == "waiting"

    await eventually(waiting, timeout=15, message="the expired lease was requeued")
    transport = open_transport(sdk.connection)
    await transport.start()
    try:
        [lease] = await transport.pull(
            sdk.queue_name, 1, owner="other", lock_ttl_ms=60_000, timeout_ms=5000
        )
        assert await transport.ack([AckRequest(job.id, lease.token, "other")]) == [True]
    finally:
        await transport.close()

    release.set()
    await eventually(
        lambda: completed or lost or any(isinstance(e, LeaseLost) for e in errors),
        message="the worker recorded the outcome of its late ACK",
    )
    assert completed == [], "a late ACK that was not applied counted as a completion"
    assert worker.processed == 0
    await eventually(lambda: worker.lost == 1, message="the lost lease is counted")
    assert [job_id for job_id, _ in lost] == [job.id]
    assert isinstance(lost[0][1], LeaseLost)
    assert await queue.get_result(job.id) == "other"
