"""Enqueue, add a flow and complete a job inside the application's own transaction,
on every driver the SDK joins: asyncpg, psycopg (async and sync), SQLAlchemy
(async on asyncpg and psycopg, sync on psycopg)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import psycopg
import pytest
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.orm import Session

from pgqueue import sync
from pgqueue.client import FlowProducer, Job, Queue, open_transport
from pgqueue.client.transport import Transport
from pgqueue.errors import ConfigError, LeaseLost
from pgqueue.manager.notifier import PRESENCE_WORDS
from pgqueue.testing.waiting import eventually
from tests.helpers import sql, sql_value, with_query
from tests.integration.app_transactions import (
    CREATE_ORDERS,
    MODES,
    ORDERS,
    Order,
    open_business,
    sqlalchemy_url,
)

each_mode = pytest.mark.parametrize("mode", MODES)


def url(dsn: str, namespace: str) -> str:
    return with_query(dsn, namespace=namespace, pool_max_size=4, poll_interval_ms=50)


@pytest.fixture(autouse=True)
async def orders_table(db_dsn: str) -> None:
    await sql(db_dsn, CREATE_ORDERS)


@pytest.fixture
async def transport(db_dsn: str, namespace: str) -> AsyncIterator[Transport]:
    t = open_transport(url(db_dsn, namespace))
    await t.start()
    yield t
    await t.close()


class Hints:
    """NOTIFY hints of one namespace, on a LISTEN connection of its own."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.received: asyncio.Queue[str] = asyncio.Queue()
        self.conn: asyncpg.Connection | None = None

    def _on(self, _c: object, _pid: int, _channel: str, payload: str) -> None:
        if payload == "sentinel":
            self.received.put_nowait(payload)
            return
        note = json.loads(payload)
        # A notifier's hello, here, hear... (listener presence) is no hint.
        if note.get("ns") == self.namespace and not any(w in note for w in PRESENCE_WORDS):
            self.received.put_nowait(payload)

    async def start(self, dsn: str) -> None:
        self.conn = await asyncpg.connect(dsn)
        await self.conn.add_listener("pgqueue_events", self._on)

    async def next_after_sentinel(self, dsn: str) -> list[str]:
        """Everything delivered before a NOTIFY sent now (which comes last)."""
        await sql(dsn, "SELECT pg_notify('pgqueue_events', 'sentinel')")
        seen = []
        async with asyncio.timeout(10):
            while (payload := await self.received.get()) != "sentinel":
                seen.append(payload)
        return seen

    async def close(self) -> None:
        assert self.conn is not None
        await self.conn.close()


@pytest.fixture
async def hints(db_dsn: str, namespace: str) -> AsyncIterator[Hints]:
    h = Hints(namespace)
    await h.start(db_dsn)
    yield h
    await h.close()


@each_mode
async def test_a_rolled_back_enqueue_leaves_no_job_no_event_and_no_notify(
    mode: str, db_dsn: str, namespace: str, transport: Transport, hints: Hints
) -> None:
    queue = Queue("orders", transport)
    order = f"o-{uuid.uuid4().hex[:8]}"
    async with open_business(mode, db_dsn) as app:
        await app.write(order)
        job = await queue.add("confirm", {"order": order}, connection=app.handle, job_id=order)
        [other] = await queue.add_bulk([{"name": "bill", "data": 1}], connection=app.handle)
        await app.rollback()
    assert await queue.get_state(job.id) == "unknown"
    assert await queue.get_state(other.id) == "unknown"
    assert (
        await sql_value(db_dsn, "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1", namespace)
        == 0
    )
    assert (
        await sql_value(
            db_dsn, "SELECT count(*) FROM pgqueue_events WHERE namespace = $1", namespace
        )
        == 0
    )
    assert await sql_value(db_dsn, f"SELECT count(*) FROM {ORDERS} WHERE id = $1", order) == 0
    assert await hints.next_after_sentinel(db_dsn) == []


@each_mode
async def test_a_committed_enqueue_is_claimable_at_once_with_its_notify(
    mode: str, db_dsn: str, transport: Transport, hints: Hints
) -> None:
    queue = Queue("orders", transport)
    order = f"o-{uuid.uuid4().hex[:8]}"
    async with open_business(mode, db_dsn) as app:
        job = await queue.add("confirm", {"order": order, "n": 2**70}, connection=app.handle)
        await app.write(order)  # the ORM flushes it after the job: order does not matter
        assert await queue.get_state(job.id) == "unknown"  # not committed yet
        await app.commit()
    [lease] = await transport.pull("orders", 1, owner="w", lock_ttl_ms=30_000, timeout_ms=0)
    assert lease.job["id"] == job.id
    assert lease.job["data"] == {"order": order, "n": 2**70}
    assert await sql_value(db_dsn, f"SELECT note FROM {ORDERS} WHERE id = $1", order) == "placed"
    assert len(await hints.next_after_sentinel(db_dsn)) >= 1


@each_mode
async def test_a_flow_added_in_the_transaction_commits_or_rolls_back_with_it(
    mode: str, db_dsn: str, transport: Transport
) -> None:
    flows = FlowProducer(transport)
    tree = {
        "name": "render",
        "queue_name": "video",
        "children": [{"name": "thumb", "queue_name": "media"}],
    }
    async with open_business(mode, db_dsn) as app:
        dropped = await flows.add(tree, connection=app.handle)
        await app.rollback()
    async with open_business(mode, db_dsn) as app:
        kept = await flows.add(tree, connection=app.handle)
        await app.commit()
    queue = Queue("video", transport)
    assert await queue.get_state(dropped.job.id) == "unknown"
    assert await queue.get_state(dropped.children[0].job.id) == "unknown"
    assert await queue.get_state(kept.job.id) == "waiting-children"
    assert await queue.get_state(kept.children[0].job.id) == "waiting"


@each_mode
async def test_a_stale_workers_complete_in_fails_and_rolls_the_business_write_back(
    mode: str, db_dsn: str, transport: Transport
) -> None:
    queue = Queue("orders", transport)
    job = await queue.add("ship", {})
    [first] = await transport.pull("orders", 1, owner="w1", lock_ttl_ms=30_000, timeout_ms=0)
    await transport.release([(job.id, first.token)])  # the claim ends; another worker takes it
    [second] = await transport.pull("orders", 1, owner="w2", lock_ttl_ms=30_000, timeout_ms=0)
    stale = Job.from_wire(transport, first.job, token=first.token, fence=first.fence)
    order = f"o-{uuid.uuid4().hex[:8]}"
    async with open_business(mode, db_dsn) as app:
        await app.write(order)
        with pytest.raises(LeaseLost):
            await stale.complete_in(app.handle, {"shipped": True})
        await app.rollback()  # what the handler's transaction block does on the error
    assert await sql_value(db_dsn, f"SELECT count(*) FROM {ORDERS} WHERE id = $1", order) == 0
    assert await queue.get_state(job.id) == "active"
    current = Job.from_wire(transport, second.job, token=second.token, fence=second.fence)
    async with open_business(mode, db_dsn) as app:
        await app.write(order)
        await current.complete_in(app.handle, {"shipped": True})
        await app.commit()
    assert await queue.get_state(job.id) == "completed"
    assert await queue.get_result(job.id) == {"shipped": True}
    assert await sql_value(db_dsn, f"SELECT count(*) FROM {ORDERS} WHERE id = $1", order) == 1


@each_mode
async def test_a_connection_in_autocommit_is_refused_and_nothing_is_written(
    mode: str, db_dsn: str, namespace: str, transport: Transport
) -> None:
    queue = Queue("orders", transport)
    if mode == "asyncpg":
        conn = await asyncpg.connect(db_dsn)
        try:
            with pytest.raises(ConfigError, match="open transaction"):
                await queue.add("x", {}, connection=conn)
        finally:
            await conn.close()
    elif mode.startswith("psycopg"):
        async with await psycopg.AsyncConnection.connect(db_dsn, autocommit=True) as aconn:
            with pytest.raises(ConfigError, match="open transaction"):
                await queue.add("x", {}, connection=aconn)
    else:
        engine = create_engine(sqlalchemy_url(db_dsn, "psycopg"), isolation_level="AUTOCOMMIT")
        try:
            with Session(engine) as session, pytest.raises(ConfigError, match="open transaction"):
                await queue.add("x", {}, connection=session)
        finally:
            engine.dispose()
    count = "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1"
    assert await sql_value(db_dsn, count, namespace) == 0


async def test_transactional_calls_over_tcp_say_what_to_use_instead() -> None:
    queue = Queue("orders", "pgqueue://127.0.0.1:1")
    with pytest.raises(ConfigError, match=r"embedded transport.*pgqueue\.enqueue"):
        await queue._push_in(object(), object(), [])  # type: ignore[arg-type]
    await queue.close()


@pytest.mark.parametrize("mode", ["psycopg-sync", "sqlalchemy-sync"])
def test_the_sync_facade_enqueues_in_a_sync_transaction(
    mode: str, db_dsn: str, namespace: str
) -> None:
    queue = sync.Queue("orders", url(db_dsn, namespace))
    try:
        order = f"o-{uuid.uuid4().hex[:8]}"
        if mode == "psycopg-sync":
            with psycopg.connect(db_dsn) as conn:
                conn.execute(f"INSERT INTO {ORDERS} VALUES (%s, 'placed')", (order,))
                kept = queue.add("confirm", {"order": order}, connection=conn)
                conn.commit()
                dropped = queue.add("confirm", {"order": "never"}, connection=conn)
                conn.rollback()
        else:
            engine = create_engine(sqlalchemy_url(db_dsn, "psycopg"))
            with Session(engine) as session:
                session.add(Order(id=order, note="placed"))
                kept = queue.add("confirm", {"order": order}, connection=session)
                session.commit()
                dropped = queue.add("confirm", {"order": "never"}, connection=session)
                session.rollback()
            engine.dispose()
        assert queue.get_state(kept.id) == "waiting"
        assert queue.get_state(dropped.id) == "unknown"
    finally:
        queue.close()


@each_mode
async def test_the_sql_function_joins_the_transaction_it_is_called_in(
    mode: str, db_dsn: str, namespace: str, transport: Transport, hints: Hints
) -> None:
    data = '{"z": 1, "a": 12345678901234567890}'
    async with open_business(mode, db_dsn) as app:
        await app.write(f"o-{uuid.uuid4().hex[:8]}")
        dropped = await app.enqueue(namespace, data, '{"priority": 3}')
        await app.rollback()
    assert await Queue("orders", transport).get_state(dropped) == "unknown"
    for table in ("pgqueue_jobs", "pgqueue_events"):
        count = f"SELECT count(*) FROM {table} WHERE namespace = $1"
        assert await sql_value(db_dsn, count, namespace) == 0, table
    assert await hints.next_after_sentinel(db_dsn) == []
    async with open_business(mode, db_dsn) as app:
        kept = await app.enqueue(namespace, data, '{"job_id": "sql-1"}')
        await app.commit()
    assert kept == "sql-1"
    [lease] = await transport.pull("orders", 1, owner="w", lock_ttl_ms=30_000, timeout_ms=0)
    assert lease.job["id"] == "sql-1"
    stored = "SELECT data::text FROM pgqueue_jobs WHERE namespace = $1 AND id = 'sql-1'"
    assert await sql_value(db_dsn, stored, namespace) == data
    assert len(await hints.next_after_sentinel(db_dsn)) >= 1


@each_mode
async def test_concurrent_sql_pushes_of_one_custom_id_make_one_job(
    mode: str, db_dsn: str, namespace: str
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        apps = [await stack.enter_async_context(open_business(mode, db_dsn)) for _ in range(4)]
        calls = [
            asyncio.ensure_future(app.enqueue(namespace, "{}", '{"job_id": "one"}')) for app in apps
        ]
        await eventually(
            lambda: sql_value(
                db_dsn,
                "SELECT count(*) >= $1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database() AND query LIKE '%pgqueue.enqueue%'",
                len(apps) - 1,
            ),
            message="the other pushes waiting for the first",
        )
        # The first push's statement is done on the server once the others wait on its
        # row, but its reply can still be on its way to this client.
        await eventually(
            lambda: any(call.done() for call in calls), message="the first push's reply"
        )
        [first] = [i for i, call in enumerate(calls) if call.done()]
        await apps[first].commit()
        results = await asyncio.gather(*calls)
        for i, app in enumerate(apps):
            if i != first:
                await app.commit()
    assert results == ["one"] * len(apps)
    count = "SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1"
    assert await sql_value(db_dsn, count, namespace) == 1


@pytest.mark.parametrize("mode", ["psycopg-sync", "sqlalchemy-sync"])
def test_a_sync_worker_completes_in_its_sync_transaction(
    mode: str, db_dsn: str, namespace: str
) -> None:
    engine = create_engine(sqlalchemy_url(db_dsn, "psycopg"))

    def ship(job: Any) -> None:
        order = f"shipped-{job.id}"
        if mode == "psycopg-sync":
            with psycopg.connect(db_dsn) as conn:
                conn.execute(f"INSERT INTO {ORDERS} VALUES (%s, 'shipped')", (order,))
                job.complete_in(conn, {"order": order})
                conn.commit()
        else:
            with Session(engine) as session, session.begin():
                session.add(Order(id=order, note="shipped"))
                job.complete_in(session, {"order": order})

    connection = url(db_dsn, namespace)
    with sync.Queue("orders", connection) as queue, sync.Worker("orders", ship, connection):
        job = queue.add("ship", {})
        assert queue.wait_for(job, timeout=10) == {"order": f"shipped-{job.id}"}
    engine.dispose()
    with psycopg.connect(db_dsn) as conn:
        row = conn.execute(
            f"SELECT note FROM {ORDERS} WHERE id = %s", (f"shipped-{job.id}",)
        ).fetchone()
    assert row == ("shipped",)


@pytest.mark.parametrize("driver", ["asyncpg", "psycopg"])
async def test_a_sqlalchemy_async_connection_commits_or_rolls_back_the_job(
    driver: str, db_dsn: str, transport: Transport
) -> None:
    queue = Queue("orders", transport)
    engine = create_async_engine(sqlalchemy_url(db_dsn, driver))
    try:
        async with engine.connect() as conn:  # no begin(): the add begins it
            kept = await queue.add("confirm", {}, connection=conn)
            await conn.commit()
            dropped = await queue.add("confirm", {}, connection=conn)
            await conn.rollback()
    finally:
        await engine.dispose()
    assert await queue.get_state(kept.id) == "waiting"
    assert await queue.get_state(dropped.id) == "unknown"


async def test_a_sqlalchemy_sync_connection_commits_or_rolls_back_the_job(
    db_dsn: str, transport: Transport
) -> None:
    queue = Queue("orders", transport)
    engine = create_engine(sqlalchemy_url(db_dsn, "psycopg"))
    try:
        with engine.connect() as conn:
            kept = await queue.add("confirm", {}, connection=conn)
            await asyncio.to_thread(conn.commit)
            dropped = await queue.add("confirm", {}, connection=conn)
            await asyncio.to_thread(conn.rollback)
    finally:
        engine.dispose()
    assert await queue.get_state(kept.id) == "waiting"
    assert await queue.get_state(dropped.id) == "unknown"
