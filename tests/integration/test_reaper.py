"""The reaper and leadership: abandoned jobs come back, only one leader (G6)."""

from __future__ import annotations

import asyncio

from pgqueue.config import Config
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import MANAGER_DEFAULTS, start_manager
from tests.helpers import HOUR_MS, clock_ahead, events_of, expire_lease, sql, sql_value


async def test_reaper_requeues_a_job_whose_owner_vanished(db_dsn: str, namespace: str) -> None:
    async with start_manager(db_dsn, namespace, broker_id="survivor") as survivor:
        vanished = PostgresQueueManager(
            Config(dsn=db_dsn, namespace=namespace, broker_id="vanished", **MANAGER_DEFAULTS)
        )
        await vanished.start()
        job_id = await vanished.push("q", "n", 1)
        [claim] = await vanished.pull_batch("q", 1, lock_ttl_ms=60_000)
        # The owner dies without releasing anything: close its pool, keep its leases.
        await vanished.close(release_leases=False)
        assert await survivor.get_state(job_id) == "active"
        report = await survivor.reap(now=clock_ahead(HOUR_MS))  # its lease has ended
        assert report.stalled == 1
        job = await survivor.get_job(job_id)
        assert job is not None and job.state == "waiting" and job.stall_count == 1
        assert job.attempts == 0, "a stall is not a failed attempt"
        [again] = await survivor.pull_batch("q", 1)
        assert again.id == job_id and again.fence == claim.fence + 1
        assert "stalled" in await events_of(db_dsn, namespace, job_id)


async def test_the_reaper_judges_leases_on_the_clock_it_is_given(
    manager: PostgresQueueManager,
) -> None:
    """``now=None`` (production) is the database clock: a fresh lease stays; a
    clock past its end requeues the job, which is then claimable at once."""
    job_id = await manager.push("q", "n", 1)
    await manager.pull_batch("q", 1, lock_ttl_ms=60_000)
    assert (await manager.reap()).total == 0
    assert (await manager.reap(now=clock_ahead(30_000))).total == 0, "the lease runs on"
    assert (await manager.reap(now=clock_ahead(HOUR_MS))).stalled == 1
    assert [c.id for c in await manager.pull_batch("q", 1)] == [job_id]


async def test_job_is_dead_lettered_after_max_stalls(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    for _ in range(3):  # max_stalls_default = 3 requeues ...
        await manager.pull_batch("q", 1)
        await manager.reap(now=clock_ahead(HOUR_MS))
        assert await manager.get_state(job_id) == "waiting"
    await manager.pull_batch("q", 1)  # ... and the fourth stall dead-letters it
    report = await manager.reap(now=clock_ahead(HOUR_MS))
    assert report.dead_lettered == 1
    assert await manager.get_state(job_id) == "failed"
    assert (
        await sql_value(db_dsn, "SELECT reason FROM pgqueue_dlq WHERE job_id = $1", job_id)
        == "stalled"
    )


async def test_stall_settings_per_queue_are_honoured(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1)
    await sql(
        db_dsn,
        "UPDATE pgqueue_queues SET stall_config = '{\"maxStalls\": 0}'"
        " WHERE namespace = $1 AND queue = 'q'",
        namespace,
    )
    await manager.pull_batch("q", 1)
    await manager.reap(now=clock_ahead(HOUR_MS))
    assert await manager.get_state(job_id) == "failed"


async def test_a_job_past_its_timeout_fails_as_a_timeout(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    job_id = await manager.push("q", "n", 1, timeout=1000, attempts=1)
    await manager.pull_batch("q", 1)
    await manager.reap(now=clock_ahead(HOUR_MS))  # past the timeout and the lease
    assert await manager.get_state(job_id) == "failed"
    assert (
        await sql_value(db_dsn, "SELECT reason FROM pgqueue_dlq WHERE job_id = $1", job_id)
        == "timeout"
    )


async def test_a_pending_job_past_its_ttl_is_dead_lettered_not_lost(
    manager: PostgresQueueManager, db_dsn: str
) -> None:
    job_id = await manager.push("q", "n", 1, ttl=60_000)
    report = await manager.reap(now=clock_ahead(HOUR_MS))
    assert report.ttl_expired == 1
    assert (
        await sql_value(db_dsn, "SELECT reason FROM pgqueue_dlq WHERE job_id = $1", job_id)
        == "ttl_expired"
    )


async def test_reaper_and_a_late_ack_race_for_the_row_and_only_one_wins(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    for _ in range(20):
        job_id = await manager.push("race", "n", 1)
        [claim] = await manager.pull_batch("race", 1)
        await expire_lease(db_dsn, namespace, job_id)
        ack, reap = await asyncio.gather(
            manager.ack_batch([(job_id, claim.token, "late")]), manager.reap()
        )
        assert not ack[0].applied, "the lease had expired: the ack must lose"
        assert reap.stalled == 1
        assert await manager.get_state(job_id) == "waiting"
        [again] = await manager.pull_batch("race", 1)
        await manager.ack(again.id, again.token)


async def test_only_one_of_three_brokers_leads_and_another_takes_over(
    db_dsn: str, namespace: str
) -> None:
    settings = {"run_maintenance": True, "leader_ttl_ms": 2000, "reaper_interval_ms": 200}
    async with (
        start_manager(db_dsn, namespace, broker_id="l1", **settings) as a,
        start_manager(db_dsn, namespace, broker_id="l2", **settings) as b,
        start_manager(db_dsn, namespace, broker_id="l3", **settings) as c,
    ):
        managers = [a, b, c]

        def leaders() -> list[PostgresQueueManager]:
            return [m for m in managers if m.elector and m.elector.is_leader.is_set()]

        await eventually(lambda: len(leaders()) == 1)
        leader = leaders()[0]
        assert leader.elector is not None
        await leader.elector.resign()
        rest = [m for m in managers if m is not leader]
        await eventually(
            lambda: sum(1 for m in rest if m.elector and m.elector.is_leader.is_set()) == 1,
            timeout=10,
        )


async def test_the_leaders_reaper_runs_on_its_own(db_dsn: str, namespace: str) -> None:
    async with start_manager(
        db_dsn,
        namespace,
        broker_id="solo",
        run_maintenance=True,
        reaper_interval_ms=50,
        leader_ttl_ms=1000,
    ) as m:
        job_id = await m.push("q", "n", 1)
        await m.pull_batch("q", 1)
        await expire_lease(db_dsn, namespace, job_id)
        await eventually(lambda: m.get_state(job_id), timeout=10)
        await eventually(lambda: _is_waiting(m, job_id), timeout=10)


async def _is_waiting(m: PostgresQueueManager, job_id: str) -> bool:
    return await m.get_state(job_id) == "waiting"


async def test_a_sweep_by_a_broker_whose_session_row_was_purged_ends_and_writes_nothing(
    db_dsn: str, namespace: str
) -> None:
    """The dead-letter writes check the sweeper's session: with the row gone none
    applies, and a sweep that kept re-reading the same full batch would never end."""
    async with start_manager(db_dsn, namespace, broker_id="purged", reaper_batch=2) as m:
        ids = [await m.push("q", "n", i, ttl=60_000) for i in range(5)]
        await sql(db_dsn, "DELETE FROM pgqueue_brokers WHERE namespace = $1", namespace)
        report = await asyncio.wait_for(m.reap(now=clock_ahead(HOUR_MS)), timeout=10)
        assert report.total == 0, "a purged session applies nothing"
        assert {await m.get_state(job_id) for job_id in ids} == {"waiting"}
    async with start_manager(db_dsn, namespace, broker_id="live", reaper_batch=2) as live:
        assert (await live.reap(now=clock_ahead(HOUR_MS))).ttl_expired == 5
