"""Server-sent events over HTTP: order, filtering, resumption across brokers, cleanup."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from pgqueue.client.connection import Connection
from pgqueue.testing import eventually
from tests.acceptance.conftest import BrokerFactory, BrokerProcess
from tests.acceptance.http_support import http_client, next_events, sse_messages
from tests.conftest import start_manager
from tests.helpers import trim_until

WAIT = 20


async def push(http: httpx.AsyncClient, queue: str, data: object) -> str:
    answer = await http.post(f"/queues/{queue}/jobs", json={"data": data})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


async def open_streams(http: httpx.AsyncClient) -> int:
    text = (await http.get("/metrics")).text
    found = re.search(r"^pgqueue_http_event_streams (\S+)$", text, re.MULTILINE)
    assert found is not None
    return int(float(found.group(1)))


async def test_a_stream_delivers_its_queues_events_in_order(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http, http.stream("GET", "/queues/q/events") as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        messages = sse_messages(stream)
        ids = [await push(http, "q", i) for i in range(3)]
        await push(http, "elsewhere", "not for this stream")
        ids.append(await push(http, "q", 3))
        events = await asyncio.wait_for(next_events(messages, 4), WAIT)

    assert [m.data["event"]["jobId"] for m in events if m.data] == ids
    for message in events:
        assert message.data is not None
        event = message.data["event"]
        assert message.data["type"] == "event"
        assert event["eventType"] == "pushed" and event["queue"] == "q"
        assert message.id == event["eventId"]


async def test_the_events_route_serves_one_queue_or_all(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        async with http.stream("GET", "/pgqueue/events") as everything:
            messages = sse_messages(everything)
            first = await push(http, "one", 1)
            second = await push(http, "two", 2)
            events = await asyncio.wait_for(next_events(messages, 2), WAIT)
        assert [(m.data or {})["event"]["jobId"] for m in events] == [first, second]
        async with http.stream("GET", "/pgqueue/events", params={"queue": "two"}) as one_queue:
            messages = sse_messages(one_queue)
            await push(http, "one", 3)
            third = await push(http, "two", 4)
            [event] = await asyncio.wait_for(next_events(messages, 1), WAIT)
        assert (event.data or {})["event"]["jobId"] == third


async def test_a_stream_resumes_on_another_broker_without_gaps_or_duplicates(
    brokers: BrokerFactory,
) -> None:
    first = brokers.start("first")
    spare = brokers.start("spare", http=False)
    async with http_client(first) as http:
        stream_cm = http.stream("GET", "/queues/q/events")
        stream = await stream_cm.__aenter__()
        messages = sse_messages(stream)
        seen_ids = [await push(http, "q", i) for i in range(3)]
        seen = await asyncio.wait_for(next_events(messages, 3), WAIT)
        assert [(m.data or {})["event"]["jobId"] for m in seen] == seen_ids
        last_event_id = seen[-1].id
        assert last_event_id
        missed = [await push(http, "q", "while not reading")]

        assert first.terminate() == 0, first.log()  # the drain ends the stream
        rest = [m async for m in messages]
        assert all(m.data is None or m.data["event"]["jobId"] in missed for m in rest)
        await stream_cm.__aexit__(None, None, None)

    tcp = await Connection.open("127.0.0.1", spare.tcp_port)
    try:
        pushed = await tcp.call("PUSH", {"queue": "q", "data": "no broker serves http"})
        missed.append(pushed["id"])
    finally:
        await tcp.close()

    second = brokers.start("second")
    async with http_client(second) as http:
        headers = {"last-event-id": last_event_id}
        async with http.stream("GET", "/queues/q/events", headers=headers) as stream:
            messages = sse_messages(stream)
            caught_up = await asyncio.wait_for(next_events(messages, 2), WAIT)
            live = await push(http, "q", "after the reconnect")
            [fresh] = await asyncio.wait_for(next_events(messages, 1), WAIT)

    assert [(m.data or {})["event"]["jobId"] for m in caught_up] == missed
    assert (fresh.data or {})["event"]["jobId"] == live


async def test_a_stream_resumes_from_the_after_parameter_too(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        async with http.stream("GET", "/queues/q/events") as stream:
            messages = sse_messages(stream)
            await push(http, "q", 1)
            [first] = await asyncio.wait_for(next_events(messages, 1), WAIT)
        missed = await push(http, "q", 2)
        async with http.stream("GET", "/queues/q/events") as stream:  # the broker moves past it
            messages = sse_messages(stream)
            marker = await push(http, "q", "marker")

            async def marker_seen() -> None:
                async for message in messages:
                    if message.data and message.data["event"]["jobId"] == marker:
                        return

            await asyncio.wait_for(marker_seen(), WAIT)
        params = {"after": first.id or ""}
        async with http.stream("GET", "/queues/q/events", params=params) as stream:
            resumed = await asyncio.wait_for(next_events(sse_messages(stream), 2), WAIT)
    assert [(m.data or {})["event"]["jobId"] for m in resumed] == [missed, marker]


async def test_a_bad_resume_token_is_refused_with_400(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http:
        answer = await http.get("/queues/q/events", headers={"last-event-id": "garbage"})
        assert answer.status_code == 400
        assert "invalid event cursor" in answer.json()["error"]
        assert (await http.get("/queues/bad%20name/events")).status_code == 400


async def test_an_idle_stream_gets_keepalive_comments(brokers: BrokerFactory) -> None:
    broker = brokers.start("a", "--sse-keepalive-ms", "200")
    async with http_client(broker) as http, http.stream("GET", "/queues/q/events") as stream:
        messages = sse_messages(stream)

        async def keepalive() -> str | None:
            async for message in messages:
                if message.comment == "keep-alive":
                    return message.comment
            return None

        try:
            comment = await asyncio.wait_for(keepalive(), WAIT)
        except TimeoutError:
            pytest.fail(f"no keep-alive comment within {WAIT} s:\n{broker.log()}")
        assert comment == "keep-alive", broker.log()


async def test_a_client_disconnect_closes_its_subscription(brokers: BrokerFactory) -> None:
    broker: BrokerProcess = brokers.start("a")
    async with http_client(broker) as http:
        assert await open_streams(http) == 0
        async with http_client(broker) as listener:
            async with listener.stream("GET", "/queues/q/events") as stream:
                assert stream.status_code == 200
                assert await open_streams(http) == 1

        async def closed() -> bool:
            return await open_streams(http) == 0

        await eventually(closed, timeout=WAIT, message="the stream's subscription closed")
        # The broker keeps serving streams after one went away.
        async with http.stream("GET", "/queues/q/events") as stream:
            messages = sse_messages(stream)
            job = await push(http, "q", 1)
            [event] = await asyncio.wait_for(next_events(messages, 1), WAIT)
        assert (event.data or {})["event"]["jobId"] == job


@pytest.mark.parametrize("path", ["/queues/q/events", "/pgqueue/events/queues/q"])
async def test_both_per_queue_stream_paths_answer(brokers: BrokerFactory, path: str) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http, http.stream("GET", path) as stream:
        messages = sse_messages(stream)
        job = await push(http, "q", 1)
        [event] = await asyncio.wait_for(next_events(messages, 1), WAIT)
    assert (event.data or {})["event"]["jobId"] == job


async def test_a_stream_resumed_from_a_pruned_position_reports_the_lost_range(
    brokers: BrokerFactory, db_dsn: str, namespace: str
) -> None:
    """Issue 9 item 3: the first message after resuming from a pruned position is
    a ``gap`` event naming the lost range; the events that remain follow."""
    broker = brokers.start("a")
    async with http_client(broker) as http:
        async with http.stream("GET", "/queues/q/events") as stream:
            messages = sse_messages(stream)
            await push(http, "q", "seen")
            [seen] = await asyncio.wait_for(next_events(messages, 1), WAIT)
        for i in range(5):
            await push(http, "q", i)
        kept = await push(http, "q", "kept")
        async with start_manager(db_dsn, namespace, broker_id="trimmer") as engine:
            assert await trim_until(engine, "q", 1) > 0
        assert seen.id is not None
        headers = {"last-event-id": seen.id}
        async with http.stream("GET", "/queues/q/events", headers=headers) as stream:
            messages = sse_messages(stream)
            gap, rest = await asyncio.wait_for(next_events(messages, 2), WAIT)
    event = (gap.data or {})["event"]
    assert event["eventType"] == "gap" and event["from"] == seen.id and event["to"]
    assert (rest.data or {})["event"]["jobId"] == kept
