"""Deduplication and debounce on the wire, with two brokers racing the same key.

The key is decided in PostgreSQL (the unique index of live keys, the locked
finished holder of a key whose TTL outlives its job), so pushes through
different brokers at the same moment still agree on one job.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pgqueue.client.connection import Connection
from tests.acceptance import command_support as support
from tests.acceptance.command_support import Pair, new_queue, pull
from tests.helpers import sql, sql_value

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]

HOUR = 3_600_000


async def _push(conn: Connection, queue: str, data: Any, **fields: Any) -> str:
    answer = await conn.call("PUSH", {"queue": queue, "name": "n", "data": data, **fields})
    return str(answer["id"])


async def _live_jobs(pair: Pair, queue: str) -> int:
    return int(
        await sql_value(
            pair.dsn,
            "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND queue = $2",
            pair.namespace,
            queue,
        )
    )


async def test_pushes_of_one_key_racing_on_two_brokers_admit_one_job(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    for round_ in range(10):
        queue = new_queue()
        fields = {"uniqueKey": f"order-{round_}", "dedup": {"ttl": HOUR}}
        ids = await asyncio.gather(
            *(_push(conn, queue, i, **fields) for i, conn in enumerate([a, b] * 4))
        )
        assert len(set(ids)) == 1, ids
        assert await _live_jobs(pair, queue) == 1


async def test_debounced_pushes_racing_after_the_job_ran_are_all_dropped(
    pair: Pair, clients: Clients
) -> None:
    """The key outlives its job for debounceTtl: racing pushes on both brokers
    all get the finished job, and each drop is told by a 'debounced' event."""
    a, b = clients
    queue = new_queue()
    first = await _push(a, queue, 0, debounceId="refresh", debounceTtl=HOUR)
    _job, token = await pull(b, queue)
    await b.call("ACK", {"id": first, "token": token})
    ids = await asyncio.gather(
        *(
            _push(conn, queue, i, debounceId="refresh", debounceTtl=HOUR)
            for i, conn in enumerate([a, b] * 3)
        )
    )
    assert set(ids) == {first}
    assert await _live_jobs(pair, queue) == 0
    rows = await sql(
        pair.dsn,
        "SELECT count(*) AS n FROM pgqueue_events"
        " WHERE namespace = $1 AND job_id = $2 AND type = 'debounced'",
        pair.namespace,
        first,
    )
    assert rows[0]["n"] == 6
    answer = await a.call("GetDeduplicationJobId", {"queue": queue, "deduplicationId": "refresh"})
    assert answer["data"]["jobId"] == first


async def test_a_replace_racing_on_two_brokers_leaves_one_owner(
    pair: Pair, clients: Clients
) -> None:
    a, b = clients
    queue = new_queue()
    await _push(a, queue, 0, uniqueKey="k", dedup={"ttl": HOUR})
    fields = {"uniqueKey": "k", "dedup": {"ttl": HOUR, "replace": True}}
    await asyncio.gather(*(_push(conn, queue, i, **fields) for i, conn in enumerate([a, b] * 3)))
    assert await _live_jobs(pair, queue) == 1
    owner = await b.call("GetDeduplicationJobId", {"queue": queue, "deduplicationId": "k"})
    assert owner["data"]["jobId"] is not None


async def test_a_key_without_a_ttl_is_free_once_its_job_completed(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    first = await _push(a, queue, 0, uniqueKey="once")
    assert await _push(b, queue, 1, uniqueKey="once") == first
    _job, token = await pull(b, queue)
    await b.call("ACK", {"id": first, "token": token})
    assert await _push(b, queue, 2, uniqueKey="once") != first
