"""Two real broker processes on one database, driven over real sockets."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator

import pytest

from pgqueue.client.connection import Connection
from pgqueue.errors import RemoteError
from pgqueue.protocol import encode_frame, pack
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.helpers import count_rows, expire_lease, sql_value


async def connect(broker: BrokerProcess, token: str | None = None) -> Connection:
    return await Connection.open("127.0.0.1", broker.tcp_port, token=token)


@pytest.fixture
def two(brokers: BrokerFactory) -> tuple[BrokerProcess, BrokerProcess]:
    return brokers.start("a", http=False), brokers.start("b", http=False)


@pytest.fixture
async def clients(
    two: tuple[BrokerProcess, BrokerProcess],
) -> AsyncIterator[tuple[Connection, Connection]]:
    a, b = await connect(two[0]), await connect(two[1])
    yield a, b
    await a.close()
    await b.close()


async def test_hello_and_ping(clients: tuple[Connection, Connection]) -> None:
    a, _ = clients
    hello = await a.call("Hello", {"protocolVersion": 3})
    assert hello["protocolVersion"] == 3
    assert "separate-job-name" in hello["capabilities"]
    pong = await a.call("Ping")
    assert pong["data"]["pong"] is True


async def test_a_job_pushed_on_one_broker_is_pulled_and_acked_on_the_other(
    clients: tuple[Connection, Connection],
) -> None:
    a, b = clients
    pushed = await a.call("PUSH", {"queue": "q", "name": "n", "data": {"x": 1}})
    pulled = await b.call("PULL", {"queue": "q", "owner": "w", "timeout": 5000})
    assert pulled["job"]["id"] == pushed["id"]
    assert pulled["job"]["data"] == {"x": 1} and pulled["job"]["name"] == "n"
    ack = await a.call("ACK", {"id": pushed["id"], "token": pulled["token"], "result": 7})
    assert "data" not in ack
    result = await b.call("GetResult", {"id": pushed["id"]})
    assert result["result"] == 7
    again = await b.call("ACK", {"id": pushed["id"], "token": pulled["token"]})
    assert again["data"] == {"applied": False, "reason": "already-finalized"}


async def test_custom_id_pushes_to_both_brokers_at_once_make_one_job(
    clients: tuple[Connection, Connection], db_dsn: str, namespace: str
) -> None:
    a, b = clients
    answers = await asyncio.gather(
        *[
            c.call("PUSH", {"queue": "q", "name": "n", "data": i, "jobId": "same-id"})
            for i, c in enumerate([a, b] * 5)
        ]
    )
    assert {answer["id"] for answer in answers} == {"same-id"}
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 1


async def test_a_stale_ack_is_rejected_after_the_lease_moved_to_the_other_broker(
    clients: tuple[Connection, Connection], db_dsn: str, namespace: str
) -> None:
    a, b = clients
    job_id = (await a.call("PUSH", {"queue": "q", "name": "n", "data": 1}))["id"]
    first = await a.call("PULL", {"queue": "q", "owner": "w1", "lockTtl": 60000})
    await expire_lease(db_dsn, namespace, job_id)
    await sql_value(
        db_dsn,
        "UPDATE pgqueue_jobs SET state = 'pending', lease_token = NULL, lease_until = NULL"
        " WHERE id = $1 RETURNING id",
        job_id,
    )
    second = await b.call("PULL", {"queue": "q", "owner": "w2"})
    assert second["job"]["id"] == job_id
    with pytest.raises(RemoteError, match=f"Invalid or expired lock token for job {job_id}"):
        await a.call("ACK", {"id": job_id, "token": first["token"], "result": "stale"})
    await b.call("ACK", {"id": job_id, "token": second["token"], "result": "fresh"})
    assert (await a.call("GetResult", {"id": job_id}))["result"] == "fresh"


async def test_jobs_pulled_on_a_connection_go_back_to_waiting_when_it_closes(
    two: tuple[BrokerProcess, BrokerProcess],
) -> None:
    worker = await connect(two[0])
    observer = await connect(two[1])
    job_id = (await observer.call("PUSH", {"queue": "q", "name": "n", "data": 1}))["id"]
    await worker.call("PULL", {"queue": "q", "owner": "w"})
    assert (await observer.call("GetState", {"id": job_id}))["state"] == "active"
    await worker.close()

    async def waiting() -> bool:
        return (await observer.call("GetState", {"id": job_id}))["state"] == "waiting"

    from pgqueue.testing import eventually

    await eventually(waiting, timeout=10)
    await observer.close()


BAD_COMMANDS = [
    ({"cmd": "PUSH", "queue": ["not", "a", "name"], "name": "n", "data": 1}, "Queue name"),
    ({"cmd": "PUSH", "queue": "q", "name": "n", "data": 1, "jobId": {"a": 1}}, "jobId"),
    ({"cmd": "PUSH", "queue": "q", "name": "n", "data": 1, "lifo": "true"}, "lifo"),
    ({"cmd": "PUSH", "queue": "q", "name": "n", "data": 1, "delay": -5}, "delay"),
    ({"cmd": "PUSH", "queue": "q", "name": "n", "data": 1, "maxAttempts": 0}, "maxAttempts"),
    ({"cmd": "PUSH", "queue": "bad queue!", "name": "n", "data": 1}, "invalid characters"),
    ({"cmd": "PUSH", "queue": "q" * 300, "name": "n", "data": 1}, "too long"),
    ({"cmd": "PUSH", "queue": "q", "name": "n\u0000x", "data": 1}, "name"),
    (
        {
            "cmd": "PUSH",
            "queue": "q",
            "name": "n",
            "data": 1,
            "backoff": {"type": "sometimes", "delay": 5},
        },
        "backoff",
    ),
    (
        {
            "cmd": "PUSHB",
            "queue": "q",
            "jobs": [{"name": "ok", "data": 1}, {"name": "bad", "data": 1, "priority": "high"}],
        },
        "jobs[1]: priority",
    ),
    (  # entries without options: checked for the whole batch, refused job by job
        {"cmd": "PUSHB", "queue": "q", "jobs": [{"name": "ok", "data": 1}, {"name": ""}]},
        "jobs[1]: Job name must be a non-empty string",
    ),
    (
        {
            "cmd": "PUSHB",
            "queue": "q",
            "jobs": [{"name": "ok", "data": 1}, {"name": "n", "data": {"x": float("nan")}}],
        },
        "jobs[1]: data must be JSON serializable: NaN",
    ),
    ({"cmd": "PULLB", "queue": "q", "count": 5000}, "count must be at most 1000"),
    ({"cmd": "PULL", "queue": "q", "timeout": 600000}, "timeout must be at most 60000"),
    (
        {"cmd": "ACKB", "ids": ["a", "b"], "tokens": ["x"]},
        "ACKB tokens length must match ids length",
    ),
    ({"cmd": "NoSuchCommand"}, "Unknown command: NoSuchCommand"),
    (
        {"cmd": "Cron", "name": "c", "queue": "q"},
        "Cron job must have either schedule or repeatEvery",
    ),
    ({"noCmd": True}, "Invalid command"),
]


@pytest.mark.parametrize(("message", "error"), BAD_COMMANDS)
async def test_bad_commands_get_a_clear_error_and_change_nothing(
    clients: tuple[Connection, Connection],
    db_dsn: str,
    namespace: str,
    message: dict[str, object],
    error: str,
) -> None:
    a, b = clients
    answer = await a.request(message)
    assert answer["ok"] is False
    assert error in answer["error"]
    assert (await a.call("Ping"))["data"]["pong"] is True
    assert (await b.call("Ping"))["data"]["pong"] is True
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0


async def test_garbage_frames_get_an_error_and_other_connections_keep_working(
    clients: tuple[Connection, Connection], db_dsn: str, namespace: str
) -> None:
    a, b = clients
    a.send_raw(encode_frame(b"\xc1\xc1\xc1 not msgpack"))
    answer = await a.next_raw_answer()
    assert answer == {"ok": False, "error": "Invalid command format"}
    a.send_raw(encode_frame(pack([1, 2, 3])))  # a list, not a map
    assert (await a.next_raw_answer())["ok"] is False
    assert (await a.call("Ping"))["data"]["pong"] is True
    assert (await b.call("Ping"))["data"]["pong"] is True
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0


async def test_an_oversized_frame_is_refused_from_its_header_and_the_broker_lives_on(
    two: tuple[BrokerProcess, BrokerProcess], db_dsn: str, namespace: str
) -> None:
    hostile = await connect(two[0])
    other = await connect(two[0])
    hostile.send_raw(struct.pack(">I", 2**31))  # declares 2 GiB, sends nothing more
    answer = await hostile.next_raw_answer()
    assert answer["ok"] is False and "Frame too large" in answer["error"]
    await asyncio.wait_for(hostile.closed.wait(), 10)
    assert (await other.call("Ping"))["data"]["pong"] is True
    await hostile.close()
    await other.close()
    assert await count_rows(db_dsn, "pgqueue_jobs", namespace) == 0


async def test_sigterm_drains_and_gives_the_brokers_jobs_back_at_once(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    leaving = brokers.start("leaving", http=False)
    staying = brokers.start("staying", http=False)
    worker = await connect(leaving)
    other = await connect(staying)
    ids = (
        await other.call(
            "PUSHB", {"queue": "q", "jobs": [{"name": "n", "data": i} for i in range(5)]}
        )
    )["ids"]
    pulled = await worker.call("PULLB", {"queue": "q", "count": 5, "owner": "w", "lockTtl": 600000})
    assert len(pulled["jobs"]) == 5
    assert leaving.terminate() == 0
    assert "broker stopped" in leaving.log()
    reclaimed = await other.call("PULLB", {"queue": "q", "count": 5, "owner": "w2"})
    assert sorted(job["id"] for job in reclaimed["jobs"]) == sorted(ids), (
        "released at once, not after the 10-minute lease"
    )
    sessions = await sql_value(
        db_dsn,
        "SELECT count(*) FROM pgqueue_brokers WHERE namespace = $1 AND broker_id = $2",
        namespace,
        "leaving",
    )
    assert sessions == 0
    await worker.close()
    await other.close()


async def test_kill_9_leaves_nothing_stuck_beyond_the_lease(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    doomed = brokers.start("doomed", "--lease-ms", "60000", http=False)
    survivor = brokers.start("survivor", http=False)
    worker = await connect(doomed)
    other = await connect(survivor)
    job_id = (await other.call("PUSH", {"queue": "q", "name": "n", "data": 1}))["id"]
    await worker.call("PULL", {"queue": "q", "owner": "w", "lockTtl": 60000})
    doomed.kill()
    assert (await other.call("GetState", {"id": job_id}))["state"] == "active"
    await expire_lease(db_dsn, namespace, job_id)  # the lease ends (no waiting 60 s)

    async def reclaimed() -> bool:
        answer = await other.call("PULL", {"queue": "q", "owner": "w2"})
        return answer["job"] is not None and answer["job"]["id"] == job_id

    from pgqueue.testing import eventually

    await eventually(reclaimed, timeout=40, interval=0.2)
    await worker.close()
    await other.close()


async def test_a_long_poll_in_flight_ends_at_once_when_the_broker_drains(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("poller", http=False)
    worker = await connect(broker)
    waiting = asyncio.create_task(
        worker.call("PULL", {"queue": "idle", "owner": "w", "timeout": 60000})
    )
    assert (await worker.call("Ping"))["data"]["pong"] is True  # the PULL is being served
    loop = asyncio.get_running_loop()
    started = loop.time()
    code = await asyncio.to_thread(broker.terminate)
    assert code == 0
    assert loop.time() - started < 15, "the drain did not wait for the 60 s long poll"
    answer = await waiting
    assert answer["job"] is None
    await worker.close()


async def test_a_connection_holding_a_partial_frame_is_closed_and_others_go_on(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("slow", "--idle-partial-frame-ms", "300", http=False)
    slow = await connect(broker)
    other = await connect(broker)
    slow.send_raw(struct.pack(">I", 100) + b"only ten b")  # 10 of the 100 declared bytes
    await asyncio.wait_for(slow.closed.wait(), 10)  # closed by the broker (slowloris guard)
    assert (await other.call("Ping"))["data"]["pong"] is True
    await slow.close()
    await other.close()


async def test_the_per_connection_inflight_cap_pauses_reading_without_losing_frames(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("capped", "--max-inflight", "2", http=False)
    client = await connect(broker)
    try:
        polls = [
            asyncio.create_task(client.call("PULL", {"queue": f"idle-{i}", "timeout": 1500}))
            for i in range(2)
        ]
        # (not Pings: they take no slot, see the test below)
        reads = [
            asyncio.create_task(client.call("IsPaused", {"queue": "idle-q"})) for _ in range(5)
        ]
        loop = asyncio.get_running_loop()
        started = loop.time()
        answers = await asyncio.gather(*reads)
        assert all(a["paused"] is False for a in answers)
        assert loop.time() - started > 0.5, "the requests waited for a free slot"
        assert [answer["job"] for answer in await asyncio.gather(*polls)] == [None, None]
    finally:
        await client.close()


async def test_a_ping_is_answered_while_the_inflight_window_is_full(
    brokers: BrokerFactory,
) -> None:
    # The SDK's liveness check pings a connection whose requests heard nothing
    # for 5 s and drops it when the ping goes unanswered for 5 s more.  A ping
    # that waited behind a full window of slow requests dropped a live broker's
    # connection, which gave back its pulled jobs: the soak's refused acks.
    broker = brokers.start("pinged", "--max-inflight", "2", http=False)
    client = await connect(broker)
    try:
        polls = [
            asyncio.create_task(client.call("PULL", {"queue": f"idle-{i}", "timeout": 6000}))
            for i in range(2)
        ]
        queued = [  # as many again as the window wait for a slot, read
            asyncio.create_task(client.call("IsPaused", {"queue": "idle-q"})) for _ in range(2)
        ]
        pong = await asyncio.create_task(client.call("Ping", timeout=3))  # sent last
        assert pong["data"]["pong"] is True
        assert not any(task.done() for task in (*polls, *queued)), "the window was not full"
        assert [answer["paused"] for answer in await asyncio.gather(*queued)] == [False] * 2
        assert [answer["job"] for answer in await asyncio.gather(*polls)] == [None, None]
    finally:
        await client.close()


async def test_a_client_that_asks_for_job_rows_gets_pullb_jobs_as_rows(
    two: tuple[BrokerProcess, BrokerProcess],
) -> None:
    """``job-rows`` in Hello (the SDK's pool asks): PULLB answers ``columns`` once and
    a row per job, the same values in the same order as ``jobs``; others get ``jobs``."""
    plain = await connect(two[0])
    rows = await Connection.open("127.0.0.1", two[1].tcp_port, job_rows=True)
    try:
        hello = await rows.call("Hello", {"capabilities": ["int64", "job-rows"]})
        assert "job-rows" in hello["capabilities"]
        for i in range(4):
            await plain.call("PUSH", {"queue": "rows", "name": "n", "data": {"i": i}})
        as_jobs = await plain.call("PULLB", {"queue": "rows", "count": 2, "owner": "w"})
        assert "rows" not in as_jobs and len(as_jobs["jobs"]) == 2
        as_rows = await rows.call("PULLB", {"queue": "rows", "count": 2, "owner": "w"})
        assert "jobs" not in as_rows and len(as_rows["rows"]) == len(as_rows["tokens"]) == 2
        assert as_rows["columns"] == list(as_jobs["jobs"][0])
        made = [dict(zip(as_rows["columns"], row, strict=True)) for row in as_rows["rows"]]
        assert sorted(job["data"]["i"] for job in as_jobs["jobs"] + made) == [0, 1, 2, 3]
        assert {job["queue"] for job in made} == {"rows"}
        empty = await rows.call("PULLB", {"queue": "rows", "count": 2, "owner": "w"})
        assert empty["jobs"] == [] and "rows" not in empty
        ids = [job["id"] for job in made]
        acked = await rows.call("ACKB", {"ids": ids, "tokens": as_rows["tokens"]})
        assert "data" not in acked
    finally:
        await plain.close()
        await rows.close()
