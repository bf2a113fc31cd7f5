"""Shared pieces of the command tests (``test_commands_*.py``).

Each test module gets two real broker processes on one namespace of its own
(:func:`pair`, started once per module: brokers take a second each to start);
each test works in queues of its own (:func:`new_queue`) and talks to both
brokers over real sockets (:func:`clients`).  :func:`assert_refused` checks a
bad command: the exact error, no stored row changed, both brokers still answer.

A test module picks the fixtures up by assigning them::

    pair = support.pair
    clients = support.clients
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pgqueue.client.connection import Connection
from pgqueue.errors import RemoteError
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.helpers import sql, sql_value

TABLES = (
    "pgqueue_jobs",
    "pgqueue_finished",
    "pgqueue_dlq",
    "pgqueue_dlq_audit",
    "pgqueue_events",
    "pgqueue_job_logs",
    "pgqueue_queues",
    "pgqueue_workers",
    "pgqueue_dependencies",
    "pgqueue_schedulers",
    "pgqueue_scheduler_ticks",
    "pgqueue_groups",
)


@dataclass
class Pair:
    """Two brokers serving one namespace of one database."""

    a: BrokerProcess
    b: BrokerProcess
    dsn: str
    namespace: str
    factory: BrokerFactory


@pytest.fixture(scope="module")
def pair(db_dsn: str) -> Iterator[Pair]:
    namespace = f"c{uuid.uuid4().hex[:10]}"
    factory = BrokerFactory(db_dsn, namespace, Path(tempfile.mkdtemp(prefix="pgqueue-cmds-")))
    try:
        a = factory.start("a", http=False)
        b = factory.start("b", http=False)
        yield Pair(a, b, db_dsn, namespace, factory)
    finally:
        factory.stop_all()


@pytest.fixture
async def clients(pair: Pair) -> AsyncIterator[tuple[Connection, Connection]]:
    """One connection to each broker (``a`` and ``b``)."""
    a = await Connection.open("127.0.0.1", pair.a.tcp_port)
    b = await Connection.open("127.0.0.1", pair.b.tcp_port)
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


def new_queue(prefix: str = "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def push(conn: Connection, queue: str, data: Any = None, **options: Any) -> str:
    answer = await conn.call("PUSH", {"queue": queue, "name": "n", "data": data, **options})
    return str(answer["id"])


async def pull(conn: Connection, queue: str, **options: Any) -> tuple[dict[str, Any], str]:
    """Claim one job (it must be there): the Job map and its lock token."""
    answer = await conn.call("PULL", {"queue": queue, "owner": "w", "timeout": 5000, **options})
    assert answer["job"] is not None, f"no job to pull in {queue}"
    return answer["job"], str(answer["token"])


async def dead_letter(conn: Connection, queue: str, data: Any = None) -> str:
    """A job of ``queue`` that failed for good (one attempt): it sits in the DLQ."""
    job_id = await push(conn, queue, data, maxAttempts=1)
    job, token = await pull(conn, queue)
    assert job["id"] == job_id
    await conn.call("FAIL", {"id": job_id, "token": token, "error": "boom"})
    assert (await conn.call("GetState", {"id": job_id}))["state"] == "failed"
    return job_id


async def state(conn: Connection, job_id: str) -> str:
    return str((await conn.call("GetState", {"id": job_id}))["state"])


async def snapshot(dsn: str, namespace: str) -> dict[str, str]:
    """A digest of every stored row of the namespace, per table."""
    digests: dict[str, str] = {}
    for table in TABLES:
        digests[table] = str(
            await sql_value(
                dsn,
                f"SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '')"
                f" FROM {table} t WHERE t.namespace = $1",
                namespace,
            )
        )
    return digests


async def assert_refused(
    pair: Pair,
    clients: tuple[Connection, Connection],
    message: dict[str, Any],
    error: str,
) -> None:
    """``message`` gets ``{ok: false, error}`` with exactly ``error``, changes nothing,
    and both brokers keep answering."""
    a, b = clients
    before = await snapshot(pair.dsn, pair.namespace)
    answer = await a.request(message)
    assert answer["ok"] is False, f"accepted: {answer}"
    assert answer["error"] == error, f"error {answer['error']!r}, expected {error!r}"
    assert set(answer) == {"ok", "error", "reqId"}, f"unexpected keys: {answer}"
    assert (await a.call("Ping"))["data"]["pong"] is True
    assert (await b.call("Ping"))["data"]["pong"] is True
    after = await snapshot(pair.dsn, pair.namespace)
    changed = [table for table in TABLES if after[table] != before[table]]
    assert not changed, f"{message.get('cmd')} changed {changed}"


async def remote_error(conn: Connection, cmd: str, fields: dict[str, Any]) -> str:
    """The error text of a command that must fail."""
    with pytest.raises(RemoteError) as info:
        await conn.call(cmd, fields)
    return info.value.message


async def audit_rows(dsn: str, namespace: str) -> list[dict[str, Any]]:
    rows = await sql(
        dsn,
        "SELECT actor, action, queue, job_ids, count FROM pgqueue_dlq_audit"
        " WHERE namespace = $1 ORDER BY id",
        namespace,
    )
    return [dict(row) for row in rows]
