"""Lock tokens through real brokers: whose claim a token-less write may act on.

A worker that pulls without ``owner`` gets no token in its reply (bunqueue's
``useLocks: false`` workers, HTTP pulls); the broker fills the token in for
its token-less writes.  It must never fill in a token that belongs to another
client's claim: the adversary here is the old claimant whose lease ended and
whose late ACK or heartbeat arrives after someone else claimed the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

import httpx

from pgqueue.client.connection import Connection
from pgqueue.errors import RemoteError
from pgqueue.testing import eventually
from tests.acceptance import command_support as support
from tests.acceptance.command_support import Pair, new_queue, push, state
from tests.acceptance.conftest import BrokerFactory
from tests.helpers import expire_lease, sql_value

pair = support.pair
clients = support.clients


async def _open(pair: Pair) -> Connection:
    return await Connection.open("127.0.0.1", pair.a.tcp_port)


async def _refusal(conn: Connection, cmd: str, fields: dict[str, object]) -> str:
    answer = await conn.request({"cmd": cmd, **fields})
    assert answer["ok"] is False, f"{cmd} accepted: {answer}"
    return str(answer["error"])


async def _result(pair: Pair, job_id: str) -> object:
    return await sql_value(
        pair.dsn,
        "SELECT result::text FROM pgqueue_finished WHERE namespace = $1 AND id = $2",
        pair.namespace,
        job_id,
    )


async def test_a_token_less_ack_after_the_connection_dropped_does_not_borrow_the_new_owners_token(
    pair: Pair,
) -> None:
    queue = new_queue()
    w1, w2, w1_again = await _open(pair), await _open(pair), await _open(pair)
    try:
        job_id = await push(w1, queue, 1)
        assert (await w1.call("PULL", {"queue": queue, "timeout": 5000}))["job"]["id"] == job_id
        await w1.close()
        await eventually(lambda: _waiting(w2, job_id), message="released on disconnect")
        pulled = await w2.call("PULL", {"queue": queue, "owner": "w2", "timeout": 5000})
        assert pulled["job"]["id"] == job_id

        late = {"id": job_id, "result": "from w1"}
        assert await _refusal(w1_again, "ACK", late) == f"Lock token required for job {job_id}"
        heartbeat = await _refusal(w1_again, "JobHeartbeat", {"id": job_id})
        assert "token" in heartbeat.lower()
        assert await state(w2, job_id) == "active"

        answer = await w2.call("ACK", {"id": job_id, "token": pulled["token"], "result": "w2"})
        assert "data" not in answer, f"the owner's ACK was not applied: {answer}"
        assert await _result(pair, job_id) == '"w2"'
    finally:
        for conn in (w1, w2, w1_again):
            await conn.close()


async def test_a_token_less_ack_after_the_reaper_took_the_lease_does_not_complete_the_next_claim(
    pair: Pair,
) -> None:
    queue = new_queue()
    w1, w2, w1_again = await _open(pair), await _open(pair), await _open(pair)
    try:
        job_id = await push(w1, queue, 1)
        pulled = await w1.call("PULL", {"queue": queue, "timeout": 5000, "detach": True})
        assert pulled["job"]["id"] == job_id
        await expire_lease(pair.dsn, pair.namespace, job_id)
        await eventually(lambda: _waiting(w2, job_id), message="requeued by the reaper")
        # The next claimant pulls without owner too: neither side holds a token.
        assert (await w2.call("PULL", {"queue": queue, "timeout": 5000}))["job"]["id"] == job_id

        late = {"id": job_id, "result": "from w1"}
        assert await _refusal(w1_again, "ACK", late) == f"Lock token required for job {job_id}"
        assert await _refusal(w1, "ACK", late) == f"Lock token required for job {job_id}"
        assert await state(w2, job_id) == "active"
        answer = await w2.call("ACK", {"id": job_id, "result": "w2"})
        assert "data" not in answer, f"the claimant's own ACK was not applied: {answer}"
        assert await _result(pair, job_id) == '"w2"'
    finally:
        for conn in (w1, w2, w1_again):
            await conn.close()


async def test_a_pool_acks_a_job_pulled_without_owner_on_another_of_its_connections(
    pair: Pair,
) -> None:
    queue = new_queue()
    pulling, acking = await _open(pair), await _open(pair)
    try:
        job_id = await push(pulling, queue, 1)
        assert (await pulling.call("PULL", {"queue": queue, "timeout": 5000}))["job"]
        assert (await acking.call("JobHeartbeat", {"id": job_id}))["data"] == {"ok": True}
        answer = await acking.call("ACKB", {"ids": [job_id], "tokens": [""], "results": [7]})
        assert "data" not in answer, f"ignored: {answer}"
        assert await _result(pair, job_id) == "7"
    finally:
        await pulling.close()
        await acking.close()


async def _waiting(conn: Connection, job_id: str) -> bool:
    try:
        return await state(conn, job_id) == "waiting"
    except RemoteError:
        return False


async def test_a_draining_broker_keeps_the_leases_that_workers_renew_through_it_for_others(
    brokers: BrokerFactory,
) -> None:
    pulling = brokers.start("pulling", http=False)
    leaving = brokers.start("leaving", http=False)
    worker_a = await Connection.open("127.0.0.1", pulling.tcp_port)
    worker_b = await Connection.open("127.0.0.1", leaving.tcp_port)
    try:
        queue = new_queue()
        job_id = await push(worker_a, queue, 1)
        pulled = await worker_a.call(
            "PULL",
            {"queue": queue, "owner": "w", "lockTtl": 600_000, "timeout": 5000, "detach": True},
        )
        token = pulled["token"]
        # The worker renews through the broker that is about to restart.
        await worker_b.call("ExtendLock", {"id": job_id, "token": token, "duration": 600_000})
        await worker_b.close()
        assert leaving.terminate() == 0
        assert "broker stopped" in leaving.log()

        assert await state(worker_a, job_id) == "active", (
            "the drain gave back a lease it did not hold"
        )
        answer = await worker_a.call("ACK", {"id": job_id, "token": token, "result": "done"})
        assert "data" not in answer, f"the worker's ACK was not applied: {answer}"
    finally:
        await worker_a.close()
        await worker_b.close()


async def test_a_late_ack_with_an_issued_token_is_already_finalized_and_a_forged_one_an_error(
    pair: Pair,
) -> None:
    queue = new_queue()
    old, new = await _open(pair), await _open(pair)
    try:
        job_id = await push(old, queue, 1)
        first = await old.call("PULL", {"queue": queue, "owner": "old", "timeout": 5000})
        await expire_lease(pair.dsn, pair.namespace, job_id)
        await eventually(lambda: _waiting(new, job_id), message="requeued by the reaper")
        second = await new.call("PULL", {"queue": queue, "owner": "new", "timeout": 5000})
        await new.call("ACK", {"id": job_id, "token": second["token"], "result": "new"})

        late = await old.call("ACK", {"id": job_id, "token": first["token"], "result": "old"})
        assert late["data"] == {"applied": False, "reason": "already-finalized"}
        fence = str(second["token"]).split(":", 1)[0]
        stale = f"Invalid or expired lock token for job {job_id}"
        for forged in ("9:abc", f"{fence}:00000000-0000-4000-8000-000000000000", "abc"):
            assert await _refusal(old, "ACK", {"id": job_id, "token": forged}) == stale
            fail = {"id": job_id, "token": forged, "error": "x"}
            assert await _refusal(old, "FAIL", fail) == stale
            batch = await old.call("ACKB", {"ids": [job_id], "tokens": [forged]})
            assert batch["data"]["ignoredIndices"] == [0]
        assert await _result(pair, job_id) == '"new"'
    finally:
        await old.close()
        await new.close()


async def test_a_detached_pull_whose_connection_closed_before_the_reply_gives_the_job_back(
    pair: Pair,
) -> None:
    queue = new_queue()
    vanishing, producer = await _open(pair), await _open(pair)
    try:
        pull = {"queue": queue, "owner": "w", "lockTtl": 600_000, "timeout": 20_000}
        waiting = asyncio.create_task(vanishing.call("PULL", {**pull, "detach": True}))
        await vanishing.call("Ping")  # answered after the PULL frame was read: it is in flight
        await vanishing.close()
        with contextlib.suppress(Exception):
            await waiting
        job_id = await push(producer, queue, 1)  # the pending long poll claims it

        # Its reply has nowhere to go: the job must not sit leased to nobody until
        # the lease ends and then count as a stall.
        taken = await producer.call("PULL", {"queue": queue, "owner": "w2", "timeout": 10_000})
        assert taken["job"] is not None and taken["job"]["id"] == job_id
        stalls = await sql_value(
            pair.dsn,
            "SELECT stall_count FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
            pair.namespace,
            job_id,
        )
        assert stalls == 0
        await producer.call("ACK", {"id": job_id, "token": taken["token"]})
    finally:
        await vanishing.close()
        await producer.close()


async def _attempts_and_stalls(dsn: str, namespace: str, job_id: str) -> tuple[int, int]:
    row = await sql_value(
        dsn,
        "SELECT array[attempts, stall_count] FROM pgqueue_jobs WHERE namespace = $1 AND id = $2",
        namespace,
        job_id,
    )
    return int(row[0]), int(row[1])


async def _http_requests(port: int, route: str) -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: broker\r\nConnection: close\r\n\r\n")
        text = (await asyncio.wait_for(reader.read(), 10)).decode()
    finally:
        writer.close()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("pgqueue_http_requests_total{") and f'route="{route}"' in line
    )


async def test_an_http_pull_whose_client_went_away_before_the_reply_gives_the_job_back(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    broker = brokers.start("http-pull")
    producer = await Connection.open("127.0.0.1", broker.tcp_port)
    route = "/queues/{queue}/jobs/pull-batch"
    try:
        queue = new_queue()
        body = json.dumps({"count": 1, "owner": "w", "lockTtl": 600_000, "timeout": 20_000})
        reader, writer = await asyncio.open_connection("127.0.0.1", broker.http_port)
        writer.write(
            (
                f"POST /queues/{queue}/jobs/pull-batch HTTP/1.1\r\nHost: broker\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Expect: 100-continue\r\n\r\n"
            ).encode()
        )
        # The broker asks for the body once the pull's handler reads it: it is being served.
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        assert interim.startswith(b"HTTP/1.1 100"), interim
        writer.write(body.encode())
        await writer.drain()
        writer.close()  # the client goes away during the long poll
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        job_id = await push(producer, queue, 1)  # the pending long poll claims it

        async def served() -> bool:
            return await _http_requests(broker.http_port, route) >= 1

        await eventually(served, message="the abandoned HTTP pull ended")
        # Its reply had nowhere to go: the job must be back, not leased to nobody
        # until the lease ends and then counted as a stall.
        assert await state(producer, job_id) == "waiting"
        assert await _attempts_and_stalls(db_dsn, namespace, job_id) == (0, 0)
        taken = await producer.call("PULL", {"queue": queue, "owner": "w2", "timeout": 0})
        assert taken["job"] is not None and taken["job"]["id"] == job_id
    finally:
        await producer.close()


async def test_a_token_less_progress_on_another_clients_claim_is_refused_and_changes_nothing(
    pair: Pair,
) -> None:
    queue = new_queue()
    w1, w2, w1_again = await _open(pair), await _open(pair), await _open(pair)
    try:
        job_id = await push(w1, queue, 1)
        assert (await w1.call("PULL", {"queue": queue, "timeout": 5000}))["job"]["id"] == job_id
        await w1.call("Progress", {"id": job_id, "progress": 10})  # its own claim
        await w1.close()
        await eventually(lambda: _waiting(w2, job_id), message="released on disconnect")
        pulled = await w2.call("PULL", {"queue": queue, "owner": "w2", "timeout": 5000})
        assert pulled["job"]["id"] == job_id
        await w2.call("Progress", {"id": job_id, "progress": 50, "token": pulled["token"]})

        late = {"id": job_id, "progress": 99, "message": "from w1"}
        assert await _refusal(w1_again, "Progress", late) == f"Lock token required for job {job_id}"
        answer = await w2.call("GetProgress", {"id": job_id})
        assert answer["progress"] == 50
    finally:
        for conn in (w1, w2, w1_again):
            await conn.close()


async def test_a_pool_reports_progress_on_a_job_pulled_without_owner_on_another_connection(
    pair: Pair,
) -> None:
    queue = new_queue()
    pulling, reporting = await _open(pair), await _open(pair)
    try:
        job_id = await push(pulling, queue, 1)
        assert (await pulling.call("PULL", {"queue": queue, "timeout": 5000}))["job"]
        await reporting.call("Progress", {"id": job_id, "progress": 42})
        assert (await reporting.call("GetProgress", {"id": job_id}))["progress"] == 42
    finally:
        await pulling.close()
        await reporting.close()


async def test_acked_jobs_leave_no_claim_records_in_the_broker(brokers: BrokerFactory) -> None:
    # The soak's broker RSS grew by ~50 MB per broker: every ACK left a "clean"
    # record (200,000 at most) that only a later claim of the same job could use.
    broker = brokers.start("a")
    queue = new_queue()
    conn = await Connection.open("127.0.0.1", broker.tcp_port)
    try:
        for _ in range(3):
            jobs = [{"name": "n", "data": i} for i in range(100)]
            await conn.call("PUSHB", {"queue": queue, "jobs": jobs})
            pulled = await conn.call("PULLB", {"queue": queue, "count": 100, "timeout": 5000})
            ids = [job["id"] for job in pulled["jobs"]]
            assert len(ids) == 100
            answer = await conn.call("ACKB", {"ids": ids, "results": [None] * len(ids)})
            assert "data" not in answer, f"ignored: {answer}"
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{broker.http_port}") as http:
            heap = await http.get("/heapstats")
        assert heap.status_code == 200, heap.text
        books = heap.json()["collections"]
        assert books["claimBook"] == 0
        assert books["claimBookClean"] == 0
    finally:
        await conn.close()
