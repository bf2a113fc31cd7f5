"""The SDK's global limits and job groups, on both transports (embedded and TCP)."""

# ruff: noqa: F811 - fixtures imported from sdk_support are requested as arguments

from __future__ import annotations

import pytest

from pgqueue.errors import ValidationError
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


async def test_global_limits_are_set_read_and_removed(sdk: SDK) -> None:
    queue = sdk.queue()
    await queue.set_global_concurrency(4)
    await queue.set_global_rate_limit(10, 2_000)
    assert await queue.get_queue_limits() == {
        "rateLimit": {"max": 10, "duration": 2_000},
        "rateLimitTtl": 0,
        "concurrencyLimit": 4,
        "maxed": False,
    }
    await queue.remove_global_concurrency()
    await queue.remove_global_rate_limit()
    limits = await queue.get_queue_limits()
    assert (limits["rateLimit"], limits["concurrencyLimit"]) == (None, None)
    with pytest.raises(ValidationError, match="limit"):
        await queue.set_global_concurrency(0)


async def test_a_worker_under_a_global_concurrency_limit_finishes_every_job(sdk: SDK) -> None:
    queue = sdk.queue()
    await queue.set_global_concurrency(1)
    await queue.add_bulk([{"name": "n", "data": i} for i in range(4)])
    done: list[int] = []

    async def handle(job: object) -> None:
        limits = await queue.get_queue_limits()
        assert limits["maxed"] is True  # this job is the one active job
        done.append(1)

    sdk.worker(handle, concurrency=3)
    await eventually(lambda: len(done) == 4 or None, timeout=30)


async def test_group_settings_round_trip(sdk: SDK) -> None:
    queue = sdk.queue()
    await queue.add("n", 1, group_id="tenant-1")
    await queue.add("n", 2, group_id="tenant-1")
    assert await queue.get_group_jobs_count("tenant-1") == 2
    assert await queue.get_groups_jobs_count() == 2
    await queue.set_group_concurrency("tenant-1", 3)
    assert await queue.get_group_concurrency("tenant-1") == 3
    assert await queue.remove_group_concurrency("tenant-1") is True
    assert await queue.get_group_concurrency("tenant-1") is None
    await queue.set_group_rate_limit("tenant-1", 5, 1_000)
    assert await queue.get_group_rate_limit("tenant-1") == {"max": 5, "duration": 1_000}
    assert await queue.remove_group_rate_limit("tenant-1") is True
    assert await queue.get_group_rate_limit("tenant-1") is None
    assert await queue.get_group_rate_limit_ttl("tenant-1") == -2
    await queue.rate_limit_group("tenant-1", 60_000)
    assert 50_000 < await queue.get_group_rate_limit_ttl("tenant-1") <= 60_000
    assert await queue.pause_group("tenant-1") is True
    assert await queue.is_group_paused("tenant-1") is True
    assert await queue.resume_group("tenant-1") is True
    assert await queue.get_group_active_count("tenant-1") == 0
    with pytest.raises(ValidationError, match="groupId"):
        await queue.pause_group("")
