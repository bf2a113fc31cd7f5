"""The bounded projection: bounded memory, repaired from the outbox, stale within bounds."""

from __future__ import annotations

import asyncio

import psycopg

from pgqueue.manager.outbox import Event
from pgqueue.manager.projection import Projection
from pgqueue.runtime import PostgresQueueManager
from pgqueue.testing import eventually
from tests.conftest import start_manager
from tests.helpers import sql


async def test_summaries_follow_a_jobs_life(manager: PostgresQueueManager) -> None:
    projection = Projection(manager)
    await projection.start()
    try:
        job_id = await manager.push("q", "n", 1)
        await eventually(lambda: projection.get(job_id) is not None)
        summary = projection.get(job_id)
        assert summary is not None and summary.state == "waiting" and summary.name == "n"
        [claim] = await manager.pull_batch("q", 1)
        await manager.update_progress(job_id, 40, "almost", claim.token)
        await manager.ack(job_id, claim.token, "r")

        def completed() -> bool:
            s = projection.get(job_id)
            return s is not None and s.state == "completed"

        await eventually(completed)
        assert projection.get(job_id).progress == 40  # type: ignore[union-attr]
        assert projection.stats.hit_rate > 0
    finally:
        await projection.stop()


async def test_the_projection_stays_within_its_cap_whatever_the_backlog(
    manager: PostgresQueueManager,
) -> None:
    projection = Projection(manager, max_entries=1_000, max_bytes=200_000)
    await projection.start()
    try:
        total = 200_000
        for _ in range(0, total, 20_000):
            await manager.push_bulk("big", [{"name": "n", "data": i} for i in range(20_000)])
        await eventually(lambda: projection.stats.events_applied >= total, timeout=120)
        assert projection.stats.entries <= 1_000
        assert projection.stats.bytes <= 200_000
        assert projection.stats.evictions >= total - 1_000
        counts = await projection.counts("big")
        assert counts["waiting"] == total, "counts come from PostgreSQL, not the cache"
    finally:
        await projection.stop()


async def test_counts_are_marked_stale_by_events_and_refreshed(
    manager: PostgresQueueManager,
) -> None:
    projection = Projection(manager, counts_refresh_ms=10)
    await projection.start()
    try:
        await manager.push("c", "n", 1)
        assert (await projection.counts("c")).get("waiting") == 1
        await manager.push("c", "n", 2)

        async def two() -> bool:
            return (await projection.counts("c")).get("waiting") == 2

        await eventually(two)
    finally:
        await projection.stop()


async def test_staleness_stays_bounded_with_the_listen_connection_killed(
    db_dsn: str, namespace: str
) -> None:
    async with start_manager(db_dsn, namespace, broker_id="p", poll_interval_ms=200) as m:
        projection = Projection(m)
        await projection.start()
        try:
            await m.notifier.connected.wait()

            # Kill the LISTEN connection each time it comes back: polling alone must keep up.
            async def kill_listeners() -> None:
                while True:
                    seen = m.notifier.reconnects
                    await sql(
                        db_dsn,
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND query LIKE 'LISTEN%'",
                    )
                    await eventually(lambda seen=seen: m.notifier.reconnects > seen, timeout=30)
                    await m.notifier.connected.wait()

            killer = asyncio.create_task(kill_listeners())
            try:
                job_id = await m.push("s", "n", 1)
                loop = asyncio.get_running_loop()
                started = loop.time()
                await eventually(lambda: projection.get(job_id) is not None, timeout=5)
                assert loop.time() - started < 2.0, "within a few poll intervals"
            finally:
                killer.cancel()
                await asyncio.gather(killer, return_exceptions=True)
        finally:
            await projection.stop()


async def test_two_events_of_one_job_read_out_of_order_leave_the_later_state(
    manager: PostgresQueueManager,
) -> None:
    """A transaction that took its xid early can write a job's later event with a
    smaller xid than the earlier one: read in (xid, id) order, ``completed``
    comes before ``active``.  Event ids follow the job's row lock, so the
    projection keeps the state of the highest id."""
    from pgqueue.manager.outbox import Event

    projection = Projection(manager)
    completed = Event(11, 5, "q", "j", "completed", {}, 2.0)
    active = Event(10, 6, "q", "j", "active", {"attempt": 1}, 1.0)
    projection.apply(completed)
    projection.apply(active)
    summary = projection.get("j")
    assert summary is not None and summary.state == "completed"


async def test_a_feed_error_resumes_where_the_projection_stopped_and_misses_no_event(
    manager: PostgresQueueManager, db_dsn: str, namespace: str
) -> None:
    """G9: the projection falls behind (its feed is small), and while it catches
    up from the database every connection of the broker is killed and one
    more event commits.  The failed read is retried from the projection's own
    position: the rest of the burst and the event of the outage are applied."""
    projection = Projection(manager, feed_size=5)
    outage: list[int] = []

    def kill_the_broker_connections(event: Event) -> None:
        if projection.stats.events_applied != 5 or outage:
            return
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND backend_type = 'client backend'"
            ).fetchall()
            conn.execute(
                "INSERT INTO pgqueue_events (namespace, queue, job_id, type, payload)"
                " VALUES (%s, 'q', 'outage', 'pushed', '{\"name\": \"n\"}')",
                (namespace,),
            )
        outage.append(len(rows))

    projection.listeners.append(kill_the_broker_connections)
    await projection.start()
    try:
        ids = await manager.push_bulk("q", [{"name": "n", "data": i} for i in range(20)])
        await eventually(lambda: outage, timeout=10, message="the connections were killed")
        await eventually(
            lambda: all(projection.get(j) is not None for j in [*ids, "outage"]),
            timeout=15,
            message="every event of the burst and of the outage applied",
        )
    finally:
        await projection.stop()


async def test_batch_listeners_see_every_applied_event_once_in_order(
    manager: PostgresQueueManager,
) -> None:
    projection = Projection(manager)
    runs: list[list[Event]] = []
    projection.batch_listeners.append(runs.append)
    await projection.start()
    try:
        ids = await manager.push_bulk("runs", [{"name": "n", "data": i} for i in range(50)])
        await eventually(lambda: sum(map(len, runs)) >= 50, message="the burst applied")
        seen = [e.job_id for run in runs for e in run if e.queue == "runs"]
        assert seen == ids
        assert all(projection.get(job_id) is not None for job_id in ids)
    finally:
        await projection.stop()
