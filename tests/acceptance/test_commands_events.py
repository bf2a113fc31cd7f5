"""Event frames of SubscribeEvents: what happens on one broker, in bunqueue's vocabulary
on a connection to the other."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

from pgqueue.client.connection import Connection
from tests.acceptance import command_support as support
from tests.acceptance.command_support import dead_letter, new_queue, pull, push

pair = support.pair
clients = support.clients
Clients = tuple[Connection, Connection]
Frame = dict[str, Any]


async def subscribe(conn: Connection, queue: str) -> None:
    answer = await conn.call("SubscribeEvents", {"queue": queue})
    assert answer["ok"] is True
    assert isinstance(answer["cursor"], str), "where the subscription starts (resumable)"


async def frames_until(
    conn: Connection, done: Callable[[list[Frame]], bool], timeout: float = 15.0
) -> list[Frame]:
    """The event frames received until ``done(frames)`` holds; each checked to be valid."""
    frames: list[Frame] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not done(frames):
        frame = await asyncio.wait_for(conn.events.get(), max(deadline - loop.time(), 0.01))
        assert frame["type"] == "event" and set(frame) == {"type", "event"}, frame
        event = frame["event"]
        assert isinstance(event["eventType"], str) and isinstance(event["queue"], str)
        assert isinstance(event["jobId"], str)
        assert isinstance(event["timestamp"], float) and math.isfinite(event["timestamp"])
        frames.append(event)
    return frames


def seen(frames: list[Frame], event_type: str, job_id: str | None = None) -> list[Frame]:
    return [
        f
        for f in frames
        if f["eventType"] == event_type and (job_id is None or f["jobId"] == job_id)
    ]


async def test_a_jobs_life_on_one_broker_is_told_in_bunqueues_words_on_the_other(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    await subscribe(b, queue)
    job_id = await push(a, queue, {"n": 1})
    _, token = await pull(a, queue)
    await a.call("Progress", {"id": job_id, "progress": 42, "message": "half"})
    await a.call("ACK", {"id": job_id, "token": token, "result": {"done": True}})
    frames = await frames_until(b, lambda fs: bool(seen(fs, "completed", job_id)))
    assert [f["eventType"] for f in frames] == ["pushed", "pulled", "progress", "completed"]
    assert {f["queue"] for f in frames} == {queue} and {f["jobId"] for f in frames} == {job_id}
    [progress] = seen(frames, "progress")
    assert progress["progress"] == 42
    assert progress["data"] == {"progress": 42, "message": "half"}
    [completed] = seen(frames, "completed")
    assert completed["data"] == {"done": True}


async def test_failures_are_failed_events_and_the_dlq_bookkeeping_is_not_sent(
    clients: Clients,
) -> None:
    a, b = clients
    queue = new_queue()
    await subscribe(b, queue)
    job_id = await push(a, queue, maxAttempts=2, backoff={"type": "fixed", "delay": 0})
    _, token = await pull(a, queue)
    await a.call("FAIL", {"id": job_id, "token": token, "error": "first"})
    _, token = await pull(a, queue)
    await a.call("FAIL", {"id": job_id, "token": token, "error": "second"})
    await a.call("Pause", {"queue": queue})  # a marker: everything before it was sent
    frames = await frames_until(b, lambda fs: bool(seen(fs, "paused")))
    retry, final = seen(frames, "failed", job_id)
    assert (retry["error"], retry["terminal"], retry["attemptsMade"]) == ("first", False, 1)
    assert (final["error"], final["terminal"], final["attemptsMade"]) == ("second", True, 2)
    assert not [f for f in frames if f["eventType"] in ("dlq", "dlq_audit")]


async def test_a_redrive_out_of_the_dlq_is_a_retried_event_from_failed(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    job_id = await dead_letter(a, queue)
    await subscribe(b, queue)
    await a.call("RetryDlq", {"queue": queue, "jobId": job_id})
    await a.call("Pause", {"queue": queue})
    frames = await frames_until(b, lambda fs: bool(seen(fs, "paused")))
    assert [(f["eventType"], f["jobId"]) for f in frames] == [
        ("retried", job_id),
        ("paused", ""),
    ]
    assert frames[0]["prev"] == "failed"


async def test_queue_events_have_an_empty_job_id(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    await subscribe(b, queue)
    await push(a, queue)
    await a.call("Pause", {"queue": queue})
    await a.call("Resume", {"queue": queue})
    await a.call("Drain", {"queue": queue})
    frames = await frames_until(b, lambda fs: bool(seen(fs, "drained")))
    queue_level = [f for f in frames if f["eventType"] in ("paused", "resumed", "drained")]
    assert [(f["eventType"], f["jobId"]) for f in queue_level] == [
        ("paused", ""),
        ("resumed", ""),
        ("drained", ""),
    ]
    assert seen(frames, "drained")[0]["count"] == 1


async def test_moves_and_removals_carry_delay_and_prev(clients: Clients) -> None:
    a, b = clients
    queue = new_queue()
    await subscribe(b, queue)
    moved = await push(a, queue)
    _, token = await pull(a, queue)
    await a.call("MoveToDelayed", {"id": moved, "delay": 600_000, "token": token})
    cancelled = await push(a, queue)
    await a.call("Cancel", {"id": cancelled})
    frames = await frames_until(b, lambda fs: bool(seen(fs, "removed", cancelled)))
    [delayed] = seen(frames, "delayed", moved)
    assert delayed["delay"] == 600_000
    [removed] = seen(frames, "removed", cancelled)
    assert removed["prev"] == "waiting"
