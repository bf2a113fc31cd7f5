"""BullMQ's ``deduplication`` and bunqueue's debounce through ``Queue.add``, on both
transports: a key with a TTL keeps deduplicating after its job ran."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

from pgqueue.client import Job
from tests.acceptance.sdk_support import (  # noqa: F401 - fixtures
    SDK,
    connection,
    module_namespace,
    queue_name,
    sdk,
    shared_brokers,
    transport_kind,
)

HOUR = 3_600_000


async def test_a_deduplicated_add_returns_the_job_that_holds_the_key(sdk: SDK) -> None:
    queue = sdk.queue()
    first = await queue.add("n", 1, deduplication={"id": "report-7", "ttl": HOUR})
    assert (await queue.add("n", 2, deduplication={"id": "report-7", "ttl": HOUR})).id == first.id
    ran: list[object] = []

    async def handler(job: Job) -> None:
        ran.append(job.data)

    sdk.worker(handler)
    await queue.wait_for(first, timeout=15)
    third = await queue.add("n", 3, deduplication={"id": "report-7", "ttl": HOUR})
    assert third.id == first.id, "the TTL outlives the job (throttle)"
    assert await queue.get_deduplication_job_id("report-7") == first.id
    assert await first.remove_deduplication_key() is True
    fourth = await queue.add("n", 4, deduplication={"id": "report-7"})
    assert fourth.id != first.id
    await queue.wait_for(fourth, timeout=15)
    assert ran == [1, 4]


async def test_a_debounced_add_within_the_ttl_is_dropped(sdk: SDK) -> None:
    queue = sdk.queue()
    first = await queue.add("n", 1, debounce_id="refresh", debounce_ttl=HOUR)
    second = await queue.add("n", 2, debounce_id="refresh", debounce_ttl=HOUR)
    assert second.id == first.id
    assert (await queue.get_counts())["waiting"] == 1
