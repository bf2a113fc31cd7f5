"""removeOnComplete / removeOnFail as a count or {age, count} on the wire: PUSH
and ACK fields through two brokers; the leader's retention applies them (run
here as one pass of a manager on the same namespace)."""

from __future__ import annotations

from typing import Any

from pgqueue.client.connection import Connection
from tests.acceptance import command_support as support
from tests.acceptance.command_support import Pair, new_queue, pull, remote_error
from tests.conftest import start_manager
from tests.helpers import clock_ahead

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]


async def _run(conn: Connection, queue: str, **ack: Any) -> str:
    job, token = await pull(conn, queue)
    await conn.call("ACK", {"id": job["id"], "token": token, "result": job["data"], **ack})
    return str(job["id"])


async def _retention(pair: Pair, **kw: Any) -> int:
    async with start_manager(
        pair.dsn, pair.namespace, broker_id="retention", run_maintenance=False
    ) as m:
        return (await m.retention_pass(**kw)).hidden


async def _visible(conn: Connection, ids: list[str]) -> list[str]:
    states = [(await conn.call("GetState", {"id": i}))["state"] for i in ids]
    return [i for i, state in zip(ids, states, strict=True) if state != "unknown"]


async def test_a_pushed_count_keeps_the_newest_completed_jobs(pair: Pair, clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    for i in range(4):
        await a.call("PUSH", {"queue": queue, "data": i, "removeOnComplete": 2})
    done = [await _run(b, queue) for _ in range(4)]
    assert await _retention(pair) == 2
    assert await _visible(a, done) == done[-2:]
    counts = (await b.call("GetJobCounts", {"queue": queue}))["counts"]
    assert counts["completed"] == 2


async def test_an_age_given_with_the_ack_keeps_jobs_that_long(pair: Pair, clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    for i in range(2):
        await a.call("PUSH", {"queue": queue, "data": i})
    done = [await _run(b, queue, removeOnComplete={"age": 60}) for _ in range(2)]
    assert await _retention(pair) == 0
    assert await _visible(a, done) == done
    assert await _retention(pair, now=clock_ahead(61_000)) == 2
    assert await _visible(a, done) == []


async def test_a_count_on_ackb_applies_per_item(pair: Pair, clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    for i in range(3):
        await a.call("PUSH", {"queue": queue, "data": i})
    answer = await b.call("PULLB", {"queue": queue, "count": 3, "owner": "w", "timeout": 5000})
    ids = [job["id"] for job in answer["jobs"]]
    await b.call(
        "ACKB",
        {"ids": ids, "tokens": answer["tokens"], "removeOnCompletes": [True, False, 0]},
    )
    assert await _visible(a, ids) == [ids[1]]


async def test_a_bad_removal_value_is_refused_naming_the_field(clients: Clients) -> None:
    a, _ = clients
    queue = new_queue()
    for value in (-1, "soon", {"age": "old"}):
        fields = {"queue": queue, "data": 1, "removeOnComplete": value}
        assert "removeOnComplete" in await remote_error(a, "PUSH", fields)
    assert (await a.call("Count", {"queue": queue}))["count"] == 0
