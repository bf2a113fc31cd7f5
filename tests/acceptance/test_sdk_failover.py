"""Reconnects and fail-over under a running worker.

TCP: two brokers; one of them is stopped (SIGTERM: drained; SIGKILL: gone)
while a worker, a producer and an event subscriber use both.  Embedded: the
database connections of the worker are terminated under it.  Every job must
still complete (at least once), and events must resume without gaps.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable

import pytest

from pgqueue.client import Job, Queue, QueueEvent, QueueEvents, Worker
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.sdk_support import TCP_AVAILABLE, TCP_SKIP, embedded_url
from tests.helpers import sql

needs_tcp = pytest.mark.skipif(not TCP_AVAILABLE, reason=TCP_SKIP)


def two_brokers(brokers: BrokerFactory) -> tuple[str, list[BrokerProcess]]:
    a = brokers.start("fail-a", "--poll-interval-ms", "50")
    b = brokers.start("fail-b", "--poll-interval-ms", "50")
    return f"pgqueue://{a.address},{b.address}", [a, b]


async def completed(queue: Queue) -> int:
    return (await queue.get_counts())["completed"]


async def run_under_failure(
    connection: str, fail: Callable[[], Awaitable[None]], jobs_total: int = 120
) -> Counter[str]:
    """Start a worker on ``jobs_total`` jobs, call ``fail()`` a third of the way,
    wait until every job completed; return how often each job ran."""
    runs: Counter[str] = Counter()

    async def handler(job: Job) -> int:
        runs[job.id] += 1
        await asyncio.sleep(0.01)  # a little work
        return int(job.data)

    queue = Queue("failover", connection)
    worker = Worker("failover", handler, connection, concurrency=8, poll_timeout=0.2)
    try:
        await queue.add_bulk([{"name": "n", "data": i} for i in range(jobs_total)])
        await eventually(lambda: sum(runs.values()) >= jobs_total // 3, timeout=30)
        await fail()
        await eventually(
            lambda: _all_completed(queue, jobs_total), timeout=60, message="all jobs completed"
        )
    finally:
        await worker.close()
        await queue.close()
    return runs


async def _all_completed(queue: Queue, total: int) -> bool:
    try:
        return await completed(queue) == total
    except Exception:
        return False  # the producer's own connection may be failing over right now


@needs_tcp
@pytest.mark.parametrize("how", ["terminate", "kill"])
async def test_a_worker_keeps_going_when_a_broker_stops_under_it(
    brokers: BrokerFactory, how: str
) -> None:
    connection, started = two_brokers(brokers)
    victim = started[0]

    async def stop_broker() -> None:
        await asyncio.to_thread(getattr(victim, how))

    runs = await run_under_failure(connection, stop_broker)
    assert len(runs) == 120  # every job ran (some twice: at least once, by design)


@needs_tcp
async def test_a_producer_fails_over_to_the_remaining_broker(brokers: BrokerFactory) -> None:
    connection, started = two_brokers(brokers)
    queue = Queue("producer", connection)
    try:
        before = await queue.add_bulk([{"name": "n", "data": i} for i in range(10)])
        await asyncio.to_thread(started[0].terminate)
        after = [await queue.add("n", i, job_id=f"after-{i}") for i in range(10)]
        counts = await queue.get_counts()
        assert counts["waiting"] == 20
        assert len({job.id for job in before + after}) == 20
    finally:
        await queue.close()


@needs_tcp
async def test_queue_events_resume_on_the_other_broker_without_gaps(
    brokers: BrokerFactory,
) -> None:
    connection, started = two_brokers(brokers)
    queue = Queue("watched", connection)
    events = QueueEvents("watched", connection)
    seen: list[QueueEvent] = []
    events.on("pushed", seen.append)
    try:

        async def live() -> bool:
            await queue.pause()
            await queue.resume()
            return events.confirmed.is_set()

        await eventually(live, interval=0.05)
        first = await queue.add_bulk([{"name": "n"} for _ in range(5)])
        await eventually(lambda: len(seen) == 5, message="first events")
        for broker in started:  # stop whichever broker carries the stream
            if broker.process.poll() is None:
                await asyncio.to_thread(broker.terminate)
                break
        second = await queue.add_bulk([{"name": "n"} for _ in range(5)])
        await eventually(lambda: len(seen) >= 10, timeout=30, message="events resumed")
        assert [e.job_id for e in seen] == [job.id for job in first + second]
    finally:
        await events.close()
        await queue.close()


async def test_an_embedded_worker_keeps_going_when_its_connections_are_cut(
    db_dsn: str, namespace: str
) -> None:
    connection = embedded_url(db_dsn, namespace)

    async def cut_connections() -> None:
        await sql(
            db_dsn,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name LIKE 'pgqueue:%' AND datname = current_database()"
            " AND pid <> pg_backend_pid()",
        )

    runs = await run_under_failure(connection, cut_connections)
    assert len(runs) == 120
