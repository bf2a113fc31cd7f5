"""Group commit through a real broker: coalesced operations are decided one by one (G10).

Single PUSH / ACK / FAIL frames from many connections share one batch.  To make the
sharing certain, the test holds a row lock on two jobs, acks them (those two acks are
the batches in flight, waiting on the lock), sends the operations under test and waits
until the broker reports them all waiting for the next batch
(``pgqueue_group_commit_waiting``); only then does it release the lock.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx

from pgqueue.client.connection import Connection
from pgqueue.errors import RemoteError
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess

VALID = 12
PAYLOAD_LIMIT = 4096


def _waiting(metrics: str, operation: str) -> float:
    match = re.search(
        rf'^pgqueue_group_commit_waiting\{{operation="{operation}"\}} (\S+)$', metrics, re.M
    )
    return float(match.group(1)) if match else -1.0


async def _settled(call: Any) -> Any:
    try:
        return await call
    except RemoteError as exc:
        return exc


@asynccontextmanager
async def _connections(broker: BrokerProcess, n: int) -> AsyncIterator[list[Connection]]:
    conns = [await Connection.open("127.0.0.1", broker.tcp_port) for _ in range(n)]
    try:
        yield conns
    finally:
        for conn in conns:
            await conn.close()


async def _claimed(conn: Connection, queue: str, n: int, **opts: Any) -> list[tuple[str, str]]:
    for i in range(n):
        await conn.call("PUSH", {"queue": queue, "name": "n", "data": i, **opts})
    pulled = await conn.call("PULLB", {"queue": queue, "count": n, "owner": "w", "detach": True})
    return list(zip([job["id"] for job in pulled["jobs"]], pulled["tokens"], strict=True))


async def _coalesced(
    db_dsn: str,
    namespace: str,
    broker: BrokerProcess,
    blockers: list[tuple[str, str]],
    conns: list[Connection],
    operation: str,
    frames: list[tuple[str, dict[str, Any]]],
) -> list[Any]:
    """Send ``frames`` (one per connection) so that they all share one batch: the two
    ``blockers`` (jobs, locked by the test) get the same command as the first frame and
    are the two batches in flight, on the lock, while the frames wait."""
    lock = await asyncpg.connect(db_dsn)
    watch = await asyncpg.connect(db_dsn)
    try:
        tx = lock.transaction()
        await tx.start()
        await lock.execute(
            "SELECT 1 FROM pgqueue_jobs WHERE namespace = $1 AND id = ANY($2) FOR UPDATE",
            namespace,
            [job_id for job_id, _ in blockers],
        )
        cmd = frames[0][0]
        held = [
            asyncio.create_task(conns[i].call(cmd, {"id": job_id, "token": token}))
            for i, (job_id, token) in enumerate(blockers)
        ]

        async def blocked() -> bool:
            waiting = await watch.fetchval(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
            return bool(waiting >= len(blockers))

        await eventually(blocked, message="the blocking acks wait on the row lock")
        sent = [
            asyncio.create_task(_settled(conns[len(blockers) + i].call(cmd, fields)))
            for i, (cmd, fields) in enumerate(frames)
        ]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{broker.http_port}") as http:

            async def all_waiting() -> bool:
                metrics = (await http.get("/metrics")).text
                return _waiting(metrics, operation) == len(frames)

            await eventually(all_waiting, message="every frame waits for the next batch")
        await tx.rollback()
        await asyncio.gather(*held)
        return await asyncio.gather(*sent)
    finally:
        await lock.close()
        await watch.close()


def _broker(brokers: BrokerFactory) -> BrokerProcess:
    limits = (f"max_payload_bytes={PAYLOAD_LIMIT}", "lock_timeout_ms=60000")
    return brokers.start("gc", *(arg for limit in limits for arg in ("--set", limit)))


async def test_an_oversized_ack_result_fails_only_that_ack_not_the_acks_coalesced_with_it(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    broker = _broker(brokers)
    async with _connections(broker, 2 + 1 + VALID) as conns:
        jobs = await _claimed(conns[0], "acks", 2 + 1 + VALID)
        blockers, (bad, *valid) = jobs[:2], jobs[2:]
        frames = [("ACK", {"id": bad[0], "token": bad[1], "result": "x" * PAYLOAD_LIMIT})]
        frames += [("ACK", {"id": j, "token": t, "result": {"n": j}}) for j, t in valid]
        answers = await _coalesced(db_dsn, namespace, broker, blockers, conns, "ack", frames)
        assert isinstance(answers[0], RemoteError) and "too large" in str(answers[0])
        assert [a for a in answers[1:] if isinstance(a, RemoteError)] == []
        states = await _states(db_dsn, namespace, [j for j, _ in jobs])
        assert states[bad[0]] == "active"
        assert all(states[j] == "completed" for j, _ in valid + blockers)


async def _states(dsn: str, namespace: str, ids: list[str]) -> dict[str, str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT id, state FROM pgqueue_jobs WHERE namespace = $1 AND id = ANY($2)"
            " UNION ALL"
            " SELECT id, state FROM pgqueue_finished WHERE namespace = $1 AND id = ANY($2)",
            namespace,
            ids,
        )
    finally:
        await conn.close()
    return {row["id"]: row["state"] for row in rows}


async def test_a_fail_sent_twice_in_one_batch_is_decided_as_if_sent_alone(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    broker = _broker(brokers)
    async with _connections(broker, 2 + 2 + VALID) as conns:
        jobs = await _claimed(conns[0], "fails", 2 + 1 + VALID, maxAttempts=1)
        blockers, (twice, *valid) = jobs[:2], jobs[2:]
        frames = [("FAIL", {"id": twice[0], "token": twice[1], "error": "boom"})] * 2
        frames += [("FAIL", {"id": j, "token": t, "error": "boom"}) for j, t in valid]
        answers = await _coalesced(db_dsn, namespace, broker, blockers, conns, "fail", frames)
        assert [a for a in answers if isinstance(a, RemoteError)] == []
        finalized = {"applied": False, "reason": "already-finalized"}
        assert sorted(str(a.get("data")) for a in answers[:2]) == sorted([str(finalized), "None"])
        assert all("data" not in a for a in answers[2:])
        states = await _states(db_dsn, namespace, [j for j, _ in jobs[2:]])
        assert set(states.values()) == {"failed"}
