"""Tokens bound to namespaces, on one real broker serving several (docs/security.md).

The matrix: TCP, HTTP, SSE (``/events``, ``/pgqueue/events``), WebSocket ``/ws``
and the dashboard's routes, each with a token of namespace A reading and writing
its own namespace and trying B's.  B's ids read as not found, B's queues and
events never show, and a read-only token is refused every write.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import connect

from pgqueue.client.connection import Connection
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.http_support import JSON, http_client, sse_frames, sse_messages
from tests.acceptance.security_support import Token, call, make_token, unique, write_tokens

WAIT = 15.0


class World:
    """One broker, namespaces A and B (from the tokens file), a job in each."""

    def __init__(self, broker: BrokerProcess, a: str, b: str, tokens: dict[str, Token]) -> None:
        self.broker, self.a, self.b, self.tokens = broker, a, b, tokens
        self.job_a = self.job_b = ""

    async def tcp(self, token: str) -> Connection:
        return await Connection.open(
            "127.0.0.1", self.broker.tcp_port, token=self.tokens[token].secret
        )

    async def raw_tcp(self) -> Connection:
        """A connection that has not authenticated (no Hello: it would be refused)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.broker.tcp_port)
        return Connection(reader, writer, "raw")

    def http(self, token: str) -> httpx.AsyncClient:
        return http_client(self.broker, self.tokens[token].secret)


async def world(brokers: BrokerFactory, tmp_path: Path) -> World:
    a, b = unique("ns-a"), unique("ns-b")
    tokens = {
        "a": make_token("a-rw", a),
        "a-ro": make_token("a-ro", a, read_only=True),
        "b": make_token("b-rw", b),
    }
    path = write_tokens(tmp_path / "tokens", *tokens.values())
    w = World(brokers.start("a", "--tokens-file", str(path)), a, b, tokens)
    for which in ("a", "b"):
        conn = await w.tcp(which)
        answer = await call(conn, "PUSH", queue="q", name="secret", data={"of": which})
        assert answer["ok"] is True, answer
        if which == "a":
            w.job_a = answer["id"]
        else:
            w.job_b = answer["id"]
        await conn.close()
    return w


async def test_a_token_chooses_its_namespace_and_never_sees_anothers_over_tcp(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    w = await world(brokers, tmp_path)
    a, b = await w.tcp("a"), await w.tcp("b")
    try:
        assert (await call(a, "GetJob", id=w.job_a))["job"]["data"] == {"of": "a"}
        assert (await call(a, "GetJob", id=w.job_b)).get("job") is None
        assert (await call(a, "GetState", id=w.job_b))["state"] in (None, "unknown")
        listed = await call(a, "ListQueues")
        assert listed["ok"] is True
        counts = await call(a, "GetJobCounts", queue="q")
        assert counts["counts"]["waiting"] == 1  # A's job only, in a queue both named q
        # B pulls its own job and holds its lock token; A cannot use it.
        pulled_b = await call(b, "PULL", queue="q", timeout=0, owner="worker-b")
        assert pulled_b["job"]["id"] == w.job_b
        stolen = await call(a, "ACK", id=w.job_b, token=pulled_b["token"])
        assert stolen["ok"] is False and "not found" in stolen["error"].lower()
        assert (await call(a, "FAIL", id=w.job_b, token=pulled_b["token"]))["ok"] is False
        assert (await call(a, "Cancel", id=w.job_b))["ok"] is False
        pulled_a = await call(a, "PULL", queue="q", timeout=0)
        assert pulled_a["job"]["id"] == w.job_a  # never B's
        assert (await call(a, "PULL", queue="q", timeout=0))["job"] is None
        assert (await call(b, "ACK", id=w.job_b, token=pulled_b["token"]))["ok"] is True
        # A token may not choose a namespace it does not name.
        other = await w.raw_tcp()
        refused = await call(other, "Auth", token=w.tokens["a"].secret, namespace=w.b)
        assert refused == {"ok": False, "error": f"This token may not use namespace {w.b!r}"}
        assert (await call(other, "GetJob", id=w.job_a))["error"] == "Not authenticated"
        await other.close()
    finally:
        await a.close()
        await b.close()


async def test_a_subscription_carries_only_its_namespaces_events_over_tcp(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    w = await world(brokers, tmp_path)
    a, b = await w.tcp("a"), await w.tcp("b")
    try:
        assert (await call(a, "SubscribeEvents", queue="q"))["ok"] is True
        leaked = (await call(b, "PUSH", queue="q", name="b2", data={}))["id"]
        mine = (await call(a, "PUSH", queue="q", name="a2", data={}))["id"]
        seen: list[str] = []
        while mine not in seen:
            frame = await asyncio.wait_for(a.events.get(), WAIT)
            seen.append(str(frame["event"]["jobId"]))
        assert leaked not in seen
    finally:
        await a.close()
        await b.close()


async def test_a_read_only_token_reads_and_is_refused_every_write_over_tcp(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    w = await world(brokers, tmp_path)
    ro = await w.tcp("a-ro")
    try:
        assert (await call(ro, "GetJob", id=w.job_a))["job"]["id"] == w.job_a
        assert (await call(ro, "SubscribeEvents", queue="q"))["ok"] is True
        for cmd, fields in (
            ("PUSH", {"queue": "q", "name": "x", "data": {}}),
            ("PULL", {"queue": "q", "timeout": 0}),
            ("ACK", {"id": w.job_a, "token": "t"}),
            ("Cancel", {"id": w.job_a}),
            ("Obliterate", {"queue": "q"}),
        ):
            answer = await call(ro, cmd, **fields)
            assert answer == {
                "ok": False,
                "error": f"Read-only token: {cmd} changes data and is refused",
            }, cmd
        assert (await call(ro, "GetJobCounts", queue="q"))["counts"]["waiting"] == 1
    finally:
        await ro.close()


async def test_http_requests_see_only_the_tokens_namespace(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    w = await world(brokers, tmp_path)
    async with w.http("a") as a, w.http("a-ro") as ro, w.http("b") as b:
        assert (await a.get(f"/jobs/{w.job_a}")).status_code == 200
        assert (await a.get(f"/jobs/{w.job_b}")).status_code == 404
        inspected = (await a.get(f"/jobs/{w.job_b}/inspect")).json()  # as for an unknown id
        assert (inspected["lease"], inspected["timeline"]) == (None, [])
        assert (await a.delete(f"/jobs/{w.job_b}")).status_code == 404
        pushed = await b.post("/queues/only-b/jobs", json={"name": "x", "data": {}}, headers=JSON)
        assert pushed.status_code == 200
        assert "only-b" not in json.dumps((await a.get("/queues")).json())
        assert "only-b" in json.dumps((await b.get("/queues")).json())
        # Write with a read-only token: 403, nothing admitted.
        refused = await ro.post("/queues/q/jobs", json={"name": "x", "data": {}}, headers=JSON)
        assert refused.status_code == 403
        assert refused.json()["error"] == "Read-only token: PUSH changes data and is refused"
        assert (await ro.get("/queues/q/jobs", params={"timeout": 0})).status_code == 403
        assert (await ro.get("/queues/q/counts")).json()["counts"]["waiting"] == 1
        # A header may choose only among the token's namespaces.
        other = await a.get(f"/jobs/{w.job_b}", headers={"x-pgqueue-namespace": w.b})
        assert other.status_code == 401
        assert (await a.get(f"/jobs/{w.job_a}", headers={"x-pgqueue-namespace": w.a})).is_success
        # The dashboard: static files open, its data routes scoped like any other.
        async with http_client(w.broker) as anonymous:
            assert (await anonymous.get("/ui/")).status_code == 200
            assert (await anonymous.get("/cluster")).status_code == 401
        assert w.b not in json.dumps((await a.get("/cluster")).json())
        assert "only-b" not in json.dumps((await a.get("/dashboard/queues")).json())
        assert "only-b" not in (await a.get("/metrics")).text
        assert "only-b" in (await b.get("/metrics")).text


async def test_event_streams_carry_only_the_tokens_namespace(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    w = await world(brokers, tmp_path)
    async with w.http("a") as a, w.http("b") as b:
        async with (
            a.stream("GET", "/events/queues/q") as bunqueue_stream,
            a.stream("GET", "/pgqueue/events/queues/q") as pgqueue_stream,
        ):
            assert bunqueue_stream.status_code == pgqueue_stream.status_code == 200
            frames, messages = sse_frames(bunqueue_stream), sse_messages(pgqueue_stream)
            leaked = (await b.post("/queues/q/jobs", json={"name": "b", "data": {}})).json()["id"]
            mine = (await a.post("/queues/q/jobs", json={"name": "a", "data": {}})).json()["id"]
            seen: list[str] = []
            async with asyncio.timeout(WAIT):
                async for frame in frames:
                    if not isinstance(frame, str) and isinstance(frame.data, dict):
                        seen.append(str(frame.data.get("jobId")))
                        if mine in seen:
                            break
            assert leaked not in seen
            ids: list[str] = []
            async with asyncio.timeout(WAIT):
                async for message in messages:
                    if message.data is not None:
                        ids.append(str(message.data["event"]["jobId"]))
                        if mine in ids:
                            break
            assert leaked not in ids


async def test_a_websocket_serves_only_the_tokens_namespace(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    w = await world(brokers, tmp_path)
    url = f"ws://127.0.0.1:{w.broker.http_port}/ws"

    def bearer(which: str) -> dict[str, str]:
        return {"authorization": f"Bearer {w.tokens[which].secret}"}

    async def until(ws: Any, **wanted: Any) -> dict[str, Any]:
        while True:
            message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
            if all(message.get(k) == v for k, v in wanted.items()):
                return message

    async with (
        connect(url, additional_headers=bearer("a")) as a,
        connect(url, additional_headers=bearer("a-ro")) as ro,
        w.http("b") as b,
    ):
        await a.send(json.dumps({"cmd": "GetJob", "id": w.job_b, "reqId": "1"}))
        assert (await until(a, reqId="1")).get("job") is None
        await ro.send(json.dumps({"cmd": "PUSH", "queue": "q", "data": {}, "reqId": "2"}))
        refused = await until(ro, reqId="2")
        assert refused["error"] == "Read-only token: PUSH changes data and is refused"
        leaked = (await b.post("/queues/q/jobs", json={"name": "b", "data": {}})).json()["id"]
        await a.send(json.dumps({"cmd": "PUSH", "queue": "q", "data": {}, "reqId": "3"}))
        mine = (await until(a, reqId="3"))["id"]
        seen: list[str] = []
        while mine not in seen:
            message = json.loads(await asyncio.wait_for(a.recv(), WAIT))
            seen.append(str(message.get("jobId")))
        assert leaked not in seen


async def test_a_token_of_every_namespace_picks_one_with_the_sdk(
    brokers: BrokerFactory, tmp_path: Path
) -> None:
    from pgqueue import Queue

    b = unique("ns-b")
    bound = make_token("b-rw", b)
    path = write_tokens(tmp_path / "tokens", bound)
    broker = brokers.start("a", "--tokens-file", str(path), "--auth-token", "ops=ops-secret-123")
    base = f"pgqueue://127.0.0.1:{broker.tcp_port}"
    async with Queue("q", f"{base}?token={bound.secret}") as in_b:
        job = await in_b.add("x", {"in": "b"})
    async with Queue("q", f"{base}?token=ops-secret-123&namespace={b}") as ops_in_b:
        assert (await ops_in_b.get_job(job.id)) is not None
    async with Queue("q", f"{base}?token=ops-secret-123") as ops_own:
        assert (await ops_own.get_job(job.id)) is None  # the broker's own namespace
    from tests.acceptance.cli_support import run_cli

    listed = await run_cli(
        "queues", "--token", "ops-secret-123", "--namespace", b, "--json", connection=base
    )
    assert listed.code == 0, listed.err
    assert "q" in [queue["name"] for queue in listed.json()]
    own = await run_cli("queues", "--token", "ops-secret-123", "--json", connection=base)
    assert "q" not in [queue["name"] for queue in own.json()]
