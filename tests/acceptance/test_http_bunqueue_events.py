"""bunqueue's event stream on /events: the connected frame, job:<type> frames with flat
data, queue:counts, stats:snapshot, health:status; events of every broker."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.acceptance.conftest import BrokerFactory
from tests.acceptance.http_support import SseFrame, frame_named, http_client, sse_frames

WAIT = 20


async def push(http: httpx.AsyncClient, queue: str, **job: Any) -> str:
    answer = await http.post(f"/queues/{queue}/jobs", json={"data": job.pop("data", None), **job})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


async def first_frames(frames: Any, count: int) -> list[SseFrame]:
    found: list[SseFrame] = []
    async for frame in frames:
        if isinstance(frame, SseFrame):
            found.append(frame)
            if len(found) == count:
                return found
    raise AssertionError("the stream ended")


async def test_the_stream_opens_as_bunqueues_and_names_every_frame(brokers: BrokerFactory) -> None:
    a, b = brokers.start("a"), brokers.start("b")
    async with http_client(a) as on_a, http_client(b) as on_b:
        async with on_a.stream("GET", "/events") as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            raw = stream.aiter_raw()
            opening = b""
            while b"\n\n" not in opening:
                opening += await asyncio.wait_for(raw.__anext__(), WAIT)
            head = opening.split(b"\n\n", 1)[0].decode()
            assert head.startswith("retry: 3000\ndata: {")
            assert '"connected":true' in head and "event:" not in head
    async with http_client(a) as on_a, http_client(b) as on_b:
        async with on_a.stream("GET", "/events") as stream:
            frames = sse_frames(stream)
            connected, *snapshots = await asyncio.wait_for(first_frames(frames, 3), WAIT)
            assert connected.event == "message" and connected.data["connected"] is True
            assert isinstance(connected.data["clientId"], str)
            named = {frame.event: frame.data for frame in snapshots}
            assert set(named) == {"stats:snapshot", "health:status"}
            assert {"waiting", "active", "queues", "workers", "cronJobs"} <= set(
                named["stats:snapshot"]
            )
            assert named["health:status"]["connections"] == {"sse": 1}

            job = await push(on_b, "emails", data={"to": "x"})  # through the other broker
            pushed = await asyncio.wait_for(frame_named(frames, "job:pushed"), WAIT)
            assert pushed.data["jobId"] == job and pushed.data["queue"] == "emails"
            assert isinstance(pushed.data["timestamp"], float)
            assert pushed.id  # the resume token
            counts = await asyncio.wait_for(frame_named(frames, "queue:counts"), WAIT)
            assert counts.data == {
                "queue": "emails",
                "waiting": 1,
                "prioritized": 0,
                "active": 0,
                "completed": 0,
                "failed": 0,
                "delayed": 0,
            }

            pulled = (await on_b.get("/queues/emails/jobs", params={"owner": "w"})).json()
            active = await asyncio.wait_for(frame_named(frames, "job:active"), WAIT)
            assert active.data["jobId"] == job
            token = pulled["token"]
            await on_b.post(f"/jobs/{job}/fail", json={"token": token, "error": "smtp down"})
            failed = await asyncio.wait_for(frame_named(frames, "job:failed"), WAIT)
            assert failed.data["error"] == "smtp down" and failed.data["jobId"] == job

            await on_b.post("/queues/emails/pause")
            paused = await asyncio.wait_for(frame_named(frames, "queue:paused"), WAIT)
            assert paused.data["queue"] == "emails" and "jobId" not in paused.data


async def test_a_job_entering_the_dlq_is_a_dlq_added_frame(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http, http.stream("GET", "/events") as stream:
        frames = sse_frames(stream)
        await asyncio.wait_for(first_frames(frames, 1), WAIT)
        job = await push(http, "dead", maxAttempts=1)
        pulled = (await http.get("/queues/dead/jobs", params={"owner": "w"})).json()
        await http.post(f"/jobs/{job}/fail", json={"token": pulled["token"], "error": "x"})
        added = await asyncio.wait_for(frame_named(frames, "dlq:added", jobId=job), WAIT)
        assert added.data["queue"] == "dead" and added.data["reason"]


async def test_the_queue_stream_carries_that_queues_job_events(brokers: BrokerFactory) -> None:
    broker = brokers.start("a")
    async with http_client(broker) as http, http.stream("GET", "/events/queues/one") as stream:
        frames = sse_frames(stream)
        await asyncio.wait_for(first_frames(frames, 1), WAIT)
        await push(http, "two")
        mine = await push(http, "one")
        pushed = await asyncio.wait_for(frame_named(frames, "job:pushed"), WAIT)
        assert pushed.data["jobId"] == mine


async def test_the_stream_resumes_after_its_last_event_id_on_another_broker(
    brokers: BrokerFactory,
) -> None:
    a, b = brokers.start("a"), brokers.start("b")
    async with http_client(a) as on_a, http_client(b) as on_b:
        async with on_a.stream("GET", "/events") as stream:
            frames = sse_frames(stream)
            await push(on_a, "q")
            seen = await asyncio.wait_for(frame_named(frames, "job:pushed"), WAIT)
        missed = await push(on_a, "q")
        headers = {"last-event-id": seen.id or ""}
        async with on_b.stream("GET", "/events", headers=headers) as stream:
            frames = sse_frames(stream)
            resumed = await asyncio.wait_for(frame_named(frames, "job:pushed"), WAIT)
            assert resumed.data["jobId"] == missed
        async with on_b.stream("GET", "/events", headers={"last-event-id": "42"}) as stream:
            assert stream.status_code == 200  # bunqueue's counter ids start from now
            frames = sse_frames(stream)
            fresh = await push(on_a, "q")
            found = await asyncio.wait_for(frame_named(frames, "job:pushed"), WAIT)
            assert found.data["jobId"] == fresh


async def test_the_stream_needs_the_token_and_counts_as_a_connection(
    brokers: BrokerFactory,
) -> None:
    broker = brokers.start("a", "--auth-token", "ops=s3cret")
    async with http_client(broker) as anonymous, http_client(broker, "s3cret") as ops:
        assert (await anonymous.get("/events")).status_code == 401
        async with ops.stream("GET", "/events") as stream:
            frames = sse_frames(stream)
            await asyncio.wait_for(first_frames(frames, 1), WAIT)
            health = (await anonymous.get("/health")).json()
            assert health["connections"]["sse"] == 1
            metrics = (await ops.get("/prometheus")).text
            assert 'bunqueue_connections{transport="sse"} 1' in metrics
