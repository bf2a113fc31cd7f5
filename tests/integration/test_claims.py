"""Claims: order, due times, TTL, long-polling, and one lease per job (G2)."""

from __future__ import annotations

import asyncio
import time

import pytest

from pgqueue.errors import ValidationError
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import clock_ahead, events_of, expire_lease, sql, sql_value


async def test_claim_leases_the_job_on_the_database_clock_and_bumps_its_fence(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.want_active_events("q")  # the claims' events are written for it
    job_id = await manager.push("q", "n", {"a": 1})
    before = await sql_value(db_dsn, "SELECT extract(epoch FROM clock_timestamp()) * 1000")
    [claim] = await manager.pull_batch("q", 1, owner="w1", lock_ttl_ms=5000)
    assert (claim.id, claim.data, claim.fence, claim.attempts) == (job_id, {"a": 1}, 1, 0)
    assert claim.token.startswith("1:")
    assert float(before) + 4000 < claim.lease_until < float(before) + 6000
    row = (await sql(db_dsn, "SELECT state, lease_owner FROM pgqueue_jobs WHERE id = $1", job_id))[
        0
    ]
    assert (row["state"], row["lease_owner"]) == ("active", "w1")
    assert await events_of(db_dsn, namespace, job_id) == ["pushed", "active"]


async def test_higher_priority_first_then_fifo(manager: PostgresQueueManager) -> None:
    low = await manager.push_bulk("q", [{"name": "low", "data": i} for i in range(3)])
    high = await manager.push("q", "high", None, priority=10)
    claims = await manager.pull_batch("q", 10)
    assert [c.id for c in claims] == [high, *low]


async def test_lifo_jobs_come_out_newest_first(manager: PostgresQueueManager) -> None:
    ids = [await manager.push("q", "n", i, lifo=True) for i in range(3)]
    claims = await manager.pull_batch("q", 10)
    assert [c.id for c in claims] == list(reversed(ids))


async def test_delayed_job_is_not_claimed_before_it_is_due(manager: PostgresQueueManager) -> None:
    job_id = await manager.push("q", "later", None, delay=60_000)
    assert await manager.get_state(job_id) == "delayed"
    assert await manager.pull_batch("q", 10) == []
    later = clock_ahead(60_001)
    assert [c.id for c in await manager.pull_batch("q", 10, now=later)] == [job_id]


async def test_ttl_expired_job_is_not_claimed(manager: PostgresQueueManager) -> None:
    await manager.push("q", "n", None, ttl=60_000)
    assert await manager.pull_batch("q", 10, now=clock_ahead(60_001)) == []


async def test_claim_count_and_timeout_are_validated(manager: PostgresQueueManager) -> None:
    with pytest.raises(ValidationError, match="count must be at most 1000"):
        await manager.pull_batch("q", 1001)
    with pytest.raises(ValidationError, match="timeout must be at most 60000"):
        await manager.pull_batch("q", 1, timeout_ms=60_001)
    with pytest.raises(ValidationError, match="Queue name contains invalid characters"):
        await manager.pull_batch("bad queue", 1)


async def test_long_poll_wakes_on_notify_well_before_the_poll_interval(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="c", poll_interval_ms=20_000) as consumer,
        start_manager(db_dsn, namespace, broker_id="p") as producer,
    ):
        await consumer.notifier.connected.wait()
        waiting = asyncio.create_task(consumer.pull_batch("q", 1, timeout_ms=15_000))
        await eventually(lambda: consumer.notifier.waiter_count("q") > 0)
        started = time.monotonic()
        job_id = await producer.push("q", "n", None)
        claims = await waiting
        assert [c.id for c in claims] == [job_id]
        assert time.monotonic() - started < 5, "woken by NOTIFY, not by the 20 s poll"


async def test_long_poll_falls_back_to_polling_without_listen(db_dsn: str, namespace: str) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="c", poll_only=True, poll_interval_ms=50) as c,
        start_manager(db_dsn, namespace, broker_id="p") as producer,
    ):
        waiting = asyncio.create_task(c.pull_batch("q", 1, timeout_ms=10_000))
        job_id = await producer.push("q", "n", None)
        assert [claim.id for claim in await waiting] == [job_id]


async def test_a_push_wakes_a_long_poll_of_the_same_manager_without_the_notify(
    db_dsn: str, namespace: str
) -> None:
    """The push's commit wakes the manager's own waiting claims at once: no NOTIFY
    round trip through the database (nor, without LISTEN, the poll interval)."""
    async with start_manager(
        db_dsn, namespace, broker_id="c", poll_only=True, poll_interval_ms=60_000
    ) as manager:
        waiting = asyncio.create_task(manager.pull_batch("q", 1, timeout_ms=60_000))
        await eventually(lambda: manager.ctx.notifier.waiter_count("q") == 1)
        job_id = await manager.push("q", "n", None)
        # Generous: the poll interval (60 s) is what it would take otherwise.
        claims = await asyncio.wait_for(waiting, timeout=20)
        assert [claim.id for claim in claims] == [job_id]


async def test_long_poll_returns_empty_at_its_timeout(manager: PostgresQueueManager) -> None:
    started = time.monotonic()
    assert await manager.pull_batch("q", 1, timeout_ms=300) == []
    assert 0.25 < time.monotonic() - started < 3


async def test_eight_managers_claiming_one_queue_never_share_a_job(
    db_dsn: str, namespace: str
) -> None:
    """G2: concurrent claims from 8 brokers hand out every job exactly once."""
    total = 2000
    async with start_manager(db_dsn, namespace, broker_id="producer") as producer:
        await producer.push_bulk("shared", [{"name": "n", "data": i} for i in range(total)])
    claimed: dict[str, str] = {}
    duplicates: list[str] = []

    async def consume(index: int) -> None:
        async with start_manager(db_dsn, namespace, broker_id=f"m{index}") as m:
            while True:
                jobs = await m.pull_batch("shared", 25, owner=f"m{index}")
                if not jobs:
                    return
                for job in jobs:
                    if job.id in claimed:
                        duplicates.append(job.id)
                    claimed[job.id] = f"m{index}"
                outcomes = await m.ack_batch([(j.id, j.token, None) for j in jobs])
                assert all(o.applied for o in outcomes)

    await asyncio.gather(*(consume(i) for i in range(8)))
    assert duplicates == []
    assert len(claimed) == total
    assert len(set(claimed.values())) > 1, "the work was spread over several managers"
    done = await sql_value(
        db_dsn, "SELECT count(*) FROM pgqueue_finished WHERE namespace = $1", namespace
    )
    assert done == total


async def test_at_most_one_valid_lease_per_job_while_leases_expire_and_jobs_move(
    db_dsn: str, namespace: str
) -> None:
    """G2 under churn: expired leases are reclaimed by others; only the holder of the
    newest claim can ever complete the job, and every job completes exactly once."""
    total = 120
    async with start_manager(db_dsn, namespace, broker_id="producer") as producer:
        await producer.push_bulk("churn", [{"name": "n", "data": i} for i in range(total)])
    accepted: dict[str, list[int]] = {}
    rejected = 0

    async def finished() -> int:
        return int(
            await sql_value(
                db_dsn, "SELECT count(*) FROM pgqueue_finished WHERE namespace = $1", namespace
            )
        )

    async def consume(index: int) -> None:
        nonlocal rejected
        async with start_manager(db_dsn, namespace, broker_id=f"c{index}") as m:
            while await finished() < total:
                jobs = await m.pull_batch("churn", 5, owner=f"c{index}", timeout_ms=200)
                stale = []
                for job in jobs:
                    if job.data % 4 == index and job.fence == 1:
                        # Stall this one: expire its lease so the reaper requeues it.
                        await expire_lease(db_dsn, namespace, job.id)
                        await m.reap()
                        stale.append(job)
                        continue
                    outcome = (await m.ack_batch([(job.id, job.token, index)]))[0]
                    if outcome.applied:
                        accepted.setdefault(job.id, []).append(job.fence)
                    else:
                        rejected += 1
                for job in stale:
                    outcome = (await m.ack_batch([(job.id, job.token, "stale")]))[0]
                    assert not outcome.applied, "a claim whose lease was reaped must be refused"
                    rejected += 1

    await asyncio.gather(*(consume(i) for i in range(4)))
    assert len(accepted) == total
    assert all(len(fences) == 1 for fences in accepted.values())
    assert rejected > 0
    results = await sql(
        db_dsn,
        "SELECT id, fence, result FROM pgqueue_finished WHERE namespace = $1",
        namespace,
    )
    assert len(results) == total
    assert all(row["result"] != '"stale"' for row in results)
    for row in results:
        assert accepted[row["id"]] == [row["fence"]]
