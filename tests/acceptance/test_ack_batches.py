"""ACKB through a real broker: every item gets the answer that is true for it.

An ACKB mixes jobs that the fast statement completes with jobs that have
dependents, completed in a second transaction that also releases the dependents.
When that second transaction fails, the fast statement has already committed:
its items are answered applied, the others get the error (G1).  To make the second
transaction fail without sleeping, the test holds a row lock on the dependent and
the broker runs with a short ``lock_timeout``; the lock is released only after the
answer arrived.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest

from pgqueue.client.connection import Connection
from tests.acceptance.conftest import BrokerFactory
from tests.acceptance.test_group_commit import _states

PAYLOAD_LIMIT = 4096


@pytest.fixture
async def conn(brokers: BrokerFactory) -> AsyncIterator[Connection]:
    settings = (f"max_payload_bytes={PAYLOAD_LIMIT}", "lock_timeout_ms=100")
    broker = brokers.start("acks", *(arg for s in settings for arg in ("--set", s)), http=False)
    connection = await Connection.open("127.0.0.1", broker.tcp_port)
    try:
        yield connection
    finally:
        await connection.close()


async def _push(conn: Connection, queue: str, **options: object) -> str:
    answer = await conn.call("PUSH", {"queue": queue, "name": "n", "data": {}, **options})
    return str(answer["id"])


async def _pulled(conn: Connection, queue: str, ids: list[str]) -> list[str]:
    """Claim the jobs ``ids`` of ``queue``: their lock tokens, in the order of ``ids``."""
    fields = {"queue": queue, "count": len(ids), "owner": "w", "detach": True}
    answer = await conn.call("PULLB", fields)
    tokens = {
        job["id"]: str(token) for job, token in zip(answer["jobs"], answer["tokens"], strict=True)
    }
    assert set(tokens) == set(ids)
    return [tokens[job_id] for job_id in ids]


async def test_an_ackb_whose_dependent_release_fails_answers_its_committed_acks_applied(
    conn: Connection, db_dsn: str, namespace: str
) -> None:
    plain = await _push(conn, "work")
    target = await _push(conn, "work")
    dependent = await _push(conn, "later", dependsOn=[target])
    tokens = await _pulled(conn, "work", [plain, target])
    lock = await asyncpg.connect(db_dsn)
    try:
        tx = lock.transaction()
        await tx.start()
        await lock.execute(
            "SELECT 1 FROM pgqueue_jobs WHERE namespace = $1 AND id = $2 FOR UPDATE",
            namespace,
            dependent,
        )
        answer = await conn.request({"cmd": "ACKB", "ids": [plain, target], "tokens": tokens})
        await tx.rollback()
    finally:
        await lock.close()
    states = await _states(db_dsn, namespace, [plain, target, dependent])
    assert states == {plain: "completed", target: "active", dependent: "waiting-children"}
    assert answer["ok"] is True, f"the committed ack of {plain} was answered {answer}"
    data = answer["data"]
    assert data["errorIndices"] == [1]
    assert data["errors"] == ["Internal server error"]
    assert "ignoredIndices" not in data
    # The item that was not applied can be sent again and is applied then.
    again = await conn.request({"cmd": "ACKB", "ids": [target], "tokens": [tokens[1]]})
    assert again["ok"] is True and "data" not in again, again
    states = await _states(db_dsn, namespace, [target, dependent])
    assert states == {target: "completed", dependent: "pending"}


async def test_an_ackb_refused_for_one_oversized_result_names_that_item(
    conn: Connection, db_dsn: str, namespace: str
) -> None:
    ids = [await _push(conn, "big") for _ in range(3)]
    tokens = await _pulled(conn, "big", ids)
    results = [{"n": 0}, {"n": 1}, "x" * PAYLOAD_LIMIT]
    answer = await conn.request({"cmd": "ACKB", "ids": ids, "tokens": tokens, "results": results})
    assert answer["ok"] is False
    assert answer["error"].startswith("results[2]: Job result too large"), answer["error"]
    states = await _states(db_dsn, namespace, ids)
    assert set(states.values()) == {"active"}, "a refused ACKB changed nothing"
