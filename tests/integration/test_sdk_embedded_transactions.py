"""Transactional use of the embedded SDK: enqueue and complete inside the
application's own transaction (asyncpg and psycopg)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import asyncpg
import psycopg
import pytest

from pgqueue.client import Job, Queue, Worker, open_transport
from pgqueue.client.transport import AckRequest
from pgqueue.errors import ConfigError, LeaseLost
from tests.helpers import sql, sql_value, with_query


def url(dsn: str, namespace: str) -> str:
    return with_query(dsn, namespace=namespace, pool_max_size=4, poll_interval_ms=50)


@pytest.fixture
async def orders(db_dsn: str) -> AsyncIterator[str]:
    """An application table of this test's own."""
    table = f"app_orders_{uuid.uuid4().hex[:8]}"
    await sql(db_dsn, f"CREATE TABLE {table} (id text PRIMARY KEY, note text)")
    yield table
    await sql(db_dsn, f"DROP TABLE {table}")


@pytest.fixture
async def queue(db_dsn: str, namespace: str) -> AsyncIterator[Queue]:
    q = Queue("orders", url(db_dsn, namespace))
    yield q
    await q.close()


async def test_a_job_added_in_an_asyncpg_transaction_exists_once_it_commits(
    db_dsn: str, queue: Queue, orders: str
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        async with conn.transaction():
            await conn.execute(f"INSERT INTO {orders} VALUES ('o1', 'new')")
            job = await queue.add("confirm", {"order": "o1"}, connection=conn)
            assert await queue.get_state(job.id) == "unknown"  # not committed yet
        assert await queue.get_state(job.id) == "waiting"
        stored = await queue.get_job(job.id)
        assert stored is not None and stored.data == {"order": "o1"}
    finally:
        await conn.close()


async def test_a_job_added_in_a_rolled_back_transaction_never_exists(
    db_dsn: str, queue: Queue, orders: str
) -> None:
    conn = await asyncpg.connect(db_dsn)
    try:
        added: list[Job] = []

        async def order_that_fails() -> None:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {orders} VALUES ('o1', 'new')")
                added.append(await queue.add("confirm", {"order": "o1"}, connection=conn))
                raise RuntimeError("the order failed")

        with pytest.raises(RuntimeError):
            await order_that_fails()
        assert await queue.get_state(added[0].id) == "unknown"
        assert (await queue.get_counts())["waiting"] == 0
        assert await sql_value(db_dsn, f"SELECT count(*) FROM {orders}") == 0
    finally:
        await conn.close()


async def test_add_bulk_in_a_psycopg_transaction_commits_or_rolls_back_with_it(
    db_dsn: str, queue: Queue, orders: str
) -> None:
    async with await psycopg.AsyncConnection.connect(db_dsn) as conn:
        async with conn.transaction():
            kept = await queue.add_bulk(
                [{"name": "a", "data": 1}, {"name": "b", "data": 2}], connection=conn
            )
        dropped: list[Job] = []

        async def rolled_back() -> None:
            async with conn.transaction():
                dropped.extend(await queue.add_bulk([{"name": "c", "data": 3}], connection=conn))
                raise RuntimeError("rolled back")

        with pytest.raises(RuntimeError):
            await rolled_back()
    assert [await queue.get_state(job.id) for job in kept] == ["waiting", "waiting"]
    assert await queue.get_state(dropped[0].id) == "unknown"


class CountingAcks:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.acked: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def ack(self, items: Sequence[AckRequest]) -> list[bool]:
        self.acked.extend(item.job_id for item in items)
        result: list[bool] = await self.inner.ack(items)
        return result


@pytest.fixture
async def transport(db_dsn: str, namespace: str) -> AsyncIterator[CountingAcks]:
    t = CountingAcks(open_transport(url(db_dsn, namespace)))
    await t.start()
    yield t
    await t.close()


async def test_complete_in_commits_the_completion_with_the_handlers_writes(
    db_dsn: str, queue: Queue, orders: str, transport: CountingAcks
) -> None:
    errors: list[BaseException] = []

    async def handler(job: Job) -> None:
        conn = await asyncpg.connect(db_dsn)
        try:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {orders} VALUES ($1, 'shipped')", job.id)
                await job.complete_in(conn, {"shipped": True})
        finally:
            await conn.close()

    worker = Worker("orders", handler, transport, poll_timeout=0.2)
    worker.on("error", errors.append)
    job = await queue.add("ship", {})
    try:
        assert await queue.wait_for(job, timeout=10) == {"shipped": True}
    finally:
        await worker.close()
    assert await sql_value(db_dsn, f"SELECT note FROM {orders} WHERE id = $1", job.id) == (
        "shipped"
    )
    assert transport.acked == []  # completed in the handler's transaction, not acked again
    assert errors == []
    assert worker.processed == 1


async def test_a_rolled_back_complete_in_leaves_the_job_to_be_retried(
    db_dsn: str, queue: Queue, orders: str, transport: CountingAcks
) -> None:
    attempts: list[int] = []

    async def handler(job: Job) -> None:
        attempts.append(job.attempts_made)
        async with await psycopg.AsyncConnection.connect(db_dsn) as conn:
            async with conn.transaction():
                await conn.execute(
                    f"INSERT INTO {orders} VALUES (%s, %s)",  # type: ignore[arg-type]
                    (f"{job.id}-{job.attempts_made}", "shipped"),
                )
                await job.complete_in(conn, {"attempt": job.attempts_made})
                if job.attempts_made == 0:
                    raise RuntimeError("the carrier refused after we wrote")

    worker = Worker("orders", handler, transport, poll_timeout=0.2)
    job = await queue.add("ship", {}, attempts=2, backoff=0)
    try:
        assert await queue.wait_for(job, timeout=10) == {"attempt": 1}
    finally:
        await worker.close()
    assert attempts == [0, 1]
    rows = await sql(db_dsn, f"SELECT id FROM {orders}")
    assert [row["id"] for row in rows] == [f"{job.id}-1"]
    assert transport.acked == []


async def test_complete_in_with_a_stale_claim_changes_nothing(
    db_dsn: str, queue: Queue, orders: str, transport: CountingAcks
) -> None:
    job = await queue.add("ship", {})
    [lease] = await transport.pull("orders", 1, owner="w", lock_ttl_ms=30_000, timeout_ms=0)
    stale = Job.from_wire(transport, lease.job, token=lease.token + "x", fence=lease.fence)
    conn = await asyncpg.connect(db_dsn)
    try:

        async def write_and_complete() -> None:
            async with conn.transaction():
                await conn.execute(f"INSERT INTO {orders} VALUES ('x', 'written')")
                await stale.complete_in(conn, "nope")

        with pytest.raises(LeaseLost):
            await write_and_complete()
    finally:
        await conn.close()
    assert await queue.get_state(job.id) == "active"
    assert await sql_value(db_dsn, f"SELECT count(*) FROM {orders}") == 0
    await transport.release([(lease.job["id"], lease.token)])


async def test_complete_in_needs_a_job_pulled_by_a_worker(queue: Queue) -> None:
    job = await queue.add("ship", {})
    with pytest.raises(ConfigError, match="pulled by a Worker"):
        await job.complete_in(object())
