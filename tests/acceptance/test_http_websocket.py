"""bunqueue's WebSocket API on /ws with a real WebSocket client: commands, legacy events,
Subscribe / Unsubscribe frames, the per-queue socket, auth, cleanup on close."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.http_support import http_client

WAIT = 20


def url(broker: BrokerProcess, path: str = "/ws") -> str:
    return f"ws://127.0.0.1:{broker.http_port}{path}"


async def send(ws: ClientConnection, **message: Any) -> None:
    await ws.send(json.dumps(message))


async def receive(ws: ClientConnection) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
    return answer


async def until(ws: ClientConnection, **wanted: Any) -> dict[str, Any]:
    """The next message holding every key/value of ``wanted``."""
    while True:
        message = await receive(ws)
        if all(message.get(key) == value for key, value in wanted.items()):
            return message


async def test_commands_answer_with_their_req_id_and_unsubscribed_sockets_get_raw_events(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("a")
    async with connect(url(broker)) as ws:
        await send(ws, cmd="PUSH", queue="emails", data={"to": "x", "n": 2**70}, reqId="1")
        answer = await until(ws, reqId="1")
        assert answer["ok"] is True
        job = answer["id"]
        event = await until(ws, eventType="pushed")
        assert (event["queue"], event["jobId"]) == ("emails", job)
        await send(ws, cmd="GetJob", id=job, reqId="2")
        got = await until(ws, reqId="2")
        assert got["job"]["data"] == {"to": "x", "n": 2**70}
        await send(ws, cmd="Nope", reqId="3")
        assert (await until(ws, reqId="3"))["error"] == "Unknown command: Nope"
        await ws.send("{not json")
        assert (await until(ws, ok=False))["error"] == "Invalid JSON"


async def test_subscribed_sockets_get_named_frames_of_their_patterns(
    brokers: BrokerFactory,
) -> None:
    a, b = brokers.start("a"), brokers.start("b")
    async with connect(url(a)) as ws, http_client(b) as other:
        await send(ws, cmd="Subscribe", events=["job:*", "queue:counts"], reqId="s")
        subscribed = await until(ws, reqId="s")
        assert subscribed == {"ok": True, "subscribed": ["job:*", "queue:counts"], "reqId": "s"}
        job = (await other.post("/queues/emails/jobs", json={"data": 1})).json()["id"]
        pushed = await until(ws, event="job:pushed")
        assert pushed["data"]["jobId"] == job and pushed["data"]["queue"] == "emails"
        assert isinstance(pushed["ts"], float)
        counts = await until(ws, event="queue:counts")
        assert counts["data"]["queue"] == "emails" and counts["data"]["waiting"] == 1

        await send(ws, cmd="Subscribe", events=["job:pushed", "cron:nope"], reqId="bad")
        refused = await until(ws, reqId="bad")
        assert refused == {"ok": False, "error": "Invalid: cron:nope", "reqId": "bad"}
        await send(ws, cmd="Subscribe", events=[], reqId="empty")
        assert (await until(ws, reqId="empty"))["error"] == "events must be a non-empty array"

        await send(ws, cmd="Unsubscribe", events=["job:*"], reqId="u")
        assert (await until(ws, reqId="u"))["subscribed"] == ["queue:counts"]
        await send(ws, cmd="Subscribe", events=["stats:*", "health:status"], reqId="s2")
        await until(ws, reqId="s2")
        await other.post("/queues/emails/jobs", json={"data": 2})
        message = await until(ws, event="queue:counts")  # job:* is off: no job:pushed
        assert message["data"]["waiting"] == 2


async def test_a_queue_socket_carries_only_that_queues_events(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with connect(url(broker, "/ws/queues/one")) as ws, http_client(broker) as http:
        await http.post("/queues/two/jobs", json={"data": 1})
        mine = (await http.post("/queues/one/jobs", json={"data": 1})).json()["id"]
        event = await until(ws, eventType="pushed")
        assert event["jobId"] == mine


async def test_jobs_pulled_on_a_socket_go_back_when_it_closes(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        job = (await http.post("/queues/q/jobs", json={"data": 1})).json()["id"]
        async with connect(url(broker)) as ws:
            await send(ws, cmd="PULL", queue="q", reqId="p")
            pulled = await until(ws, reqId="p")
            assert pulled["job"]["id"] == job
            health = (await http.get("/health")).json()
            assert health["connections"]["ws"] == 1

        async def waiting_again() -> bool:
            state = (await http.get(f"/jobs/{job}/state")).json()["state"]
            return bool(state == "waiting")

        await eventually(waiting_again, timeout=WAIT, message="job back to waiting")
        health = (await http.get("/health")).json()
        assert health["connections"]["ws"] == 0


async def test_the_socket_needs_the_token(brokers: BrokerFactory) -> None:
    broker = brokers.start("a", "--auth-token", "ops=s3cret")
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url(broker)):
            pass
    assert refused.value.response.status_code == 401
    headers = {"Authorization": "Bearer s3cret"}
    async with connect(url(broker), additional_headers=headers) as ws:
        await send(ws, cmd="Ping", reqId="1")
        assert (await until(ws, reqId="1"))["ok"] is True
