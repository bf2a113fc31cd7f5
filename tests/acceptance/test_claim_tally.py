"""Broker servers count the cluster's claims from one tally row per claim statement.

Without a subscriber of job events, a claim over TCP writes no ``active`` row per job
but one ``claimed`` row per statement (migration 0029); another broker's
``pgqueue_events_total{type="active"}``, ``bunqueue_jobs_pulled_total`` and
``pullPerSec`` still count every pull, once, also while a subscriber of one queue
has the claims of that queue write their events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.helpers import sql

Clients = tuple[Connection, Connection, Connection]  # a, b, b's event subscriber
Key = tuple[str, tuple[tuple[str, str], ...]]


@pytest.fixture
async def clients(brokers: BrokerFactory) -> AsyncIterator[Clients]:
    pair: tuple[BrokerProcess, BrokerProcess] = (
        brokers.start("a", http=False),
        brokers.start("b", http=False),
    )
    a = await Connection.open("127.0.0.1", pair[0].tcp_port)
    b = await Connection.open("127.0.0.1", pair[1].tcp_port)
    watcher = await Connection.open("127.0.0.1", pair[1].tcp_port)
    try:
        yield a, b, watcher
    finally:
        for conn in (a, b, watcher):
            await conn.close()


def samples(text: str) -> dict[Key, float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def push_and_pull(conn: Connection, queue: str, batches: list[int]) -> None:
    jobs = [{"name": "n", "data": i} for i in range(sum(batches))]
    await conn.call("PUSHB", {"queue": queue, "jobs": jobs})
    for count in batches:
        if count == 1:
            answer = await conn.call("PULL", {"queue": queue, "owner": "w", "timeout": 5000})
            assert answer["job"] is not None
        else:
            answer = await conn.call("PULLB", {"queue": queue, "count": count, "owner": "w"})
            assert len(answer["jobs"]) == count


async def counted(b: Connection, queues: dict[str, int]) -> dict[Key, float]:
    total = sum(queues.values())

    async def scraped() -> dict[Key, float] | None:
        found = samples((await b.call("Prometheus"))["data"]["metrics"])
        per_queue = {
            q: found.get(("pgqueue_events_total", (("queue", q), ("type", "active"))), 0)
            for q in queues
        }
        pulled = found.get(("bunqueue_jobs_pulled_total", ()), 0)
        return found if (per_queue, pulled) == (queues, total) else None

    return await eventually(scraped, timeout=20, message="broker b counted the pulls")


async def test_pulls_on_one_broker_are_counted_exactly_on_the_other(
    clients: Clients, db_dsn: str, namespace: str
) -> None:
    a, b, _ = clients
    await push_and_pull(a, "tally", [10, 10, 4, 1])

    async def rate() -> int | None:
        seen = round((await b.call("Stats"))["stats"]["pullPerSec"] * 10)
        return seen if seen == 25 else None

    assert await eventually(rate, timeout=8, interval=0.05) == 25
    await counted(b, {"tally": 25})
    rows = await sql(
        db_dsn,
        "SELECT type, job_id, payload::text AS payload FROM pgqueue_events"
        " WHERE namespace = $1 AND type IN ('active', 'claimed') ORDER BY id",
        namespace,
    )
    assert [(r["type"], r["job_id"]) for r in rows] == [("claimed", None)] * 4
    assert sorted(r["payload"] for r in rows) == sorted(
        f'{{"count" : {n}}}' for n in (10, 10, 4, 1)
    )


async def test_a_subscribed_queue_counts_its_events_and_the_others_their_tallies(
    clients: Clients, db_dsn: str, namespace: str
) -> None:
    a, b, watcher = clients
    await watcher.call("SubscribeEvents", {"queue": "seen"})
    await push_and_pull(a, "seen", [5, 2])
    await push_and_pull(a, "other", [3])
    found = await counted(b, {"seen": 7, "other": 3})
    assert found[("bunqueue_jobs_pulled_total", ())] == 10
    rows = await sql(
        db_dsn,
        "SELECT queue, type, count(*) AS n FROM pgqueue_events"
        " WHERE namespace = $1 AND type IN ('active', 'claimed')"
        " GROUP BY queue, type ORDER BY queue, type",
        namespace,
    )
    assert [(r["queue"], r["type"], r["n"]) for r in rows] == [
        ("other", "claimed", 1),
        ("seen", "active", 7),
    ]
