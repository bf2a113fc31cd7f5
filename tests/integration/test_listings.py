"""Listings and queries: jobs by state, custom ids, counts, queues, waiting for a job."""

from __future__ import annotations

import asyncio

import pytest

from pgqueue.db.queries import Q
from pgqueue.errors import JobNotFound, ValidationError
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import sql


async def _one_of_each(m: PostgresQueueManager) -> dict[str, str]:
    """A job in every reported state of queue ``q``."""
    ids = {}
    ids["completed"] = await m.push("q", "n", "c")
    [claim] = await m.pull_batch("q", 1)
    await m.ack(claim.id, claim.token, "ok")
    ids["failed"] = await m.push("q", "n", "f", attempts=1)
    [claim] = await m.pull_batch("q", 1)
    await m.fail(claim.id, claim.token, "boom")
    ids["active"] = await m.push("q", "n", "a")
    await m.pull_batch("q", 1)
    ids["waiting"] = await m.push("q", "n", "w")
    ids["prioritized"] = await m.push("q", "n", "p", priority=3)
    ids["delayed"] = await m.push("q", "n", "d", delay=60_000)
    ids["waiting-children"] = await m.push("q", "n", "wc", depends_on=[ids["waiting"]])
    return ids


async def test_get_jobs_lists_every_state_in_creation_order(
    manager: PostgresQueueManager,
) -> None:
    ids = await _one_of_each(manager)
    jobs = await manager.get_jobs("q")
    assert [job.id for job in jobs] == list(ids.values())
    assert {job.id: job.state for job in jobs} == {v: k for k, v in ids.items()}
    newest_first = await manager.get_jobs("q", asc=False)
    assert [job.id for job in newest_first] == list(reversed(ids.values()))


async def test_get_jobs_filters_by_each_state(manager: PostgresQueueManager) -> None:
    ids = await _one_of_each(manager)
    for state, job_id in ids.items():
        assert [job.id for job in await manager.get_jobs("q", state)] == [job_id], state
    both = await manager.get_jobs("q", ["delayed", "completed"])
    assert [job.id for job in both] == [ids["completed"], ids["delayed"]]


async def test_get_jobs_pages_with_offset_and_limit(manager: PostgresQueueManager) -> None:
    ids = await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(7)])
    await manager.push("other", "n", "x")
    pages = [await manager.get_jobs("q", "waiting", offset=o, limit=3) for o in (0, 3, 6)]
    assert [[job.id for job in page] for page in pages] == [ids[0:3], ids[3:6], ids[6:7]]
    assert [job.data for job in pages[0]] == [0, 1, 2]


async def test_get_jobs_validates_its_arguments(manager: PostgresQueueManager) -> None:
    with pytest.raises(ValidationError) as caught:
        await manager.get_jobs("q", "running")
    assert caught.value.field == "state"
    with pytest.raises(ValidationError, match="limit must be at most"):
        await manager.get_jobs("q", limit=10**6)
    with pytest.raises(ValidationError, match="offset must be at least 0"):
        await manager.get_jobs("q", offset=-1)
    with pytest.raises(ValidationError, match="Queue name contains invalid characters"):
        await manager.get_jobs("q q")


async def test_get_jobs_for_one_state_reads_the_listing_index_in_order(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(500)])
    await manager.push_bulk("big", [{"name": "n", "data": i} for i in range(5_000)])
    await sql(db_dsn, "ANALYZE pgqueue_jobs")
    plan = await sql(db_dsn, "EXPLAIN " + Q.job_list_asc.sql, namespace, "q", ["waiting"], 0, 100)
    text = "\n".join(row[0] for row in plan)
    assert "pgqueue_jobs_listing_idx" in text
    assert "Seq Scan on pgqueue_jobs" not in text


async def test_get_job_by_custom_id_finds_the_job_pushed_with_it(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1, job_id="order-42")
    job = await manager.get_job_by_custom_id("order-42")
    assert job is not None and job.id == job_id == "order-42"
    plain = await manager.push("q", "n", 2)
    assert await manager.get_job_by_custom_id(plain) is None
    assert await manager.get_job_by_custom_id("missing") is None


async def test_count_and_counts_per_priority_cover_pending_jobs_only(
    manager: PostgresQueueManager,
) -> None:
    await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1)
    await manager.push("q", "n", 2)
    await manager.push("q", "n", 3, priority=5)
    await manager.push("q", "n", 4, priority=5, delay=60_000)
    await manager.push("other", "n", 5)
    assert await manager.count("q") == 3
    assert await manager.get_counts_per_priority("q") == {0: 1, 5: 2}


async def test_list_queues_names_registered_queues_and_queues_with_jobs(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    await manager.push("emails", "n", 1)
    await manager.pause("idle")
    await manager.push("reports", "n", 2)
    await sql(
        db_dsn, "DELETE FROM pgqueue_queues WHERE namespace = $1 AND queue = 'reports'", namespace
    )
    assert await manager.list_queues() == ["emails", "idle", "reports"]


async def test_wait_for_job_is_woken_by_a_completion_on_another_broker(
    db_dsn: str, namespace: str
) -> None:
    async with (
        start_manager(db_dsn, namespace, broker_id="a", poll_interval_ms=5_000) as a,
        start_manager(db_dsn, namespace, broker_id="b", poll_interval_ms=5_000) as b,
    ):
        job_id = await a.push("q", "n", 1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        waiting = asyncio.create_task(a.wait_for_job(job_id, 20_000))
        await eventually(lambda: a.notifier.waiter_count("q") == 1, message="wait registered")
        [claim] = await b.pull_batch("q", 1)
        await b.ack(job_id, claim.token, {"answer": 42})
        assert await waiting == (True, {"answer": 42})
        assert loop.time() - started < 3.0, "woken by the completion's NOTIFY, not a poll"


async def test_wait_for_job_times_out_with_completed_false(
    manager: PostgresQueueManager,
) -> None:
    job_id = await manager.push("q", "n", 1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert await manager.wait_for_job(job_id, 200) == (False, None)
    assert 0.15 <= loop.time() - started < 2.0


async def test_wait_for_job_returns_at_once_for_finished_jobs(
    manager: PostgresQueueManager,
) -> None:
    done = await manager.push("q", "n", 1, remove_on_complete=True)
    [claim] = await manager.pull_batch("q", 1)
    await manager.ack(done, claim.token, "r")
    assert await manager.wait_for_job(done, 0) == (True, "r")
    failed = await manager.push("q", "n", 1, attempts=1)
    [claim] = await manager.pull_batch("q", 1)
    await manager.fail(failed, claim.token, "boom")
    assert await manager.wait_for_job(failed, 10_000) == (False, None)


async def test_wait_for_job_of_an_unknown_id_says_not_found(
    manager: PostgresQueueManager,
) -> None:
    with pytest.raises(JobNotFound):
        await manager.wait_for_job("nope", 100)
    with pytest.raises(ValidationError, match="timeout must be at most 600000"):
        await manager.wait_for_job("nope", 600_001)
