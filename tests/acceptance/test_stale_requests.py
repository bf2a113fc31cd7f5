"""A broker never executes a request that its client gave up on: the connection is gone,
or the request is older than its deadline (issue 9 item 11 (b)).

A broker process is paused with SIGSTOP: the kernel still takes the request's bytes
into the socket, so when the broker resumes it reads a request from the past.
"""

from __future__ import annotations

import signal
import uuid

import pytest

from pgqueue.client.connection import Connection
from pgqueue.errors import CommandTimeout
from pgqueue.protocol import encode_frame, pack
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.helpers import sql_value


async def _admitted(dsn: str, namespace: str, job_id: str) -> int:
    query = (
        "SELECT (SELECT count(*) FROM pgqueue_jobs WHERE namespace = $1 AND id = $2)"
        " + (SELECT count(*) FROM pgqueue_finished WHERE namespace = $1 AND id = $2)"
    )
    return int(await sql_value(dsn, query, namespace, job_id))


def _push_frame(job_id: str, **extra: object) -> bytes:
    """A PUSH as the official clients send it (no deadline of their own)."""
    fields = {"cmd": "PUSH", "queue": "stale", "data": {}, "jobId": job_id}
    return encode_frame(pack({**fields, **extra}))


async def _paused(broker: BrokerProcess) -> None:
    broker.process.send_signal(signal.SIGSTOP)


async def test_a_push_whose_connection_closed_while_the_broker_was_paused_is_not_executed(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    a = brokers.start("a", http=False)
    conn = await Connection.open("127.0.0.1", a.tcp_port, probe=True)
    job_id = f"stale-{uuid.uuid4().hex[:8]}"
    await _paused(a)
    try:
        conn.send_raw(_push_frame(job_id))
        with pytest.raises(CommandTimeout):  # the client gives up, as it would on a timeout
            await conn.call("Ping", timeout=0.5)
        await conn.close()
    finally:
        a.process.send_signal(signal.SIGCONT)

    async def decided() -> bool:
        return "connection is gone" in a.log() or await _admitted(db_dsn, namespace, job_id) > 0

    await eventually(decided, message="the broker read the stale push")
    assert await _admitted(db_dsn, namespace, job_id) == 0


async def test_a_push_older_than_the_clients_timeout_is_refused_when_the_broker_resumes(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    a = brokers.start("a", http=False)
    conn = await Connection.open("127.0.0.1", a.tcp_port, probe=True)
    job_id = f"stale-{uuid.uuid4().hex[:8]}"
    try:
        await _paused(a)
        try:
            fields = {"queue": "stale", "data": {}, "jobId": job_id}
            with pytest.raises(CommandTimeout):
                await conn.call("PUSH", fields, timeout=0.5)
        finally:
            a.process.send_signal(signal.SIGCONT)

        async def decided() -> bool:
            return "expired" in a.log() or await _admitted(db_dsn, namespace, job_id) > 0

        await eventually(decided, message="the broker read the stale push")
    finally:
        await conn.close()
    assert await _admitted(db_dsn, namespace, job_id) == 0


async def test_a_push_older_than_the_brokers_max_request_age_is_refused(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    a = brokers.start("a", "--max-request-age-ms", "300", http=False)
    conn = await Connection.open("127.0.0.1", a.tcp_port, probe=True)
    job_id = f"stale-{uuid.uuid4().hex[:8]}"
    try:
        await _paused(a)
        try:
            conn.send_raw(_push_frame(job_id))
            with pytest.raises(CommandTimeout):
                await conn.call("Ping", timeout=0.6)
        finally:
            a.process.send_signal(signal.SIGCONT)
        answer = await conn.next_raw_answer(timeout=10)
        assert answer["ok"] is False and "expired" in answer["error"]
        await conn.call("Ping", timeout=10)
    finally:
        await conn.close()
    assert await _admitted(db_dsn, namespace, job_id) == 0
    fresh = await Connection.open("127.0.0.1", a.tcp_port, probe=True)
    try:
        answer = await fresh.request(
            {"cmd": "PUSH", "queue": "stale", "data": {}, "jobId": job_id}, timeout=10
        )
        assert answer["ok"] is True, "a fresh request is served"
    finally:
        await fresh.close()
