"""Helpers of the HTTP API tests: a client per broker and a server-sent events reader."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from tests.acceptance.conftest import BrokerProcess

JSON = {"content-type": "application/json"}


def http_client(broker: BrokerProcess, token: str | None = None) -> httpx.AsyncClient:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{broker.http_port}", headers=headers, timeout=30
    )


@dataclass(frozen=True)
class SseMessage:
    id: str | None
    data: dict[str, Any] | None
    comment: str | None = None


async def sse_messages(response: httpx.Response) -> AsyncIterator[SseMessage]:
    """The messages of an event stream (comments too, as ``comment``), in order."""
    event_id: str | None = None
    data: list[str] = []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield SseMessage(event_id, json.loads("\n".join(data)))
            event_id, data = None, []
        elif line.startswith(":"):
            yield SseMessage(None, None, line[1:].strip())
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


async def next_events(messages: AsyncIterator[SseMessage], count: int) -> list[SseMessage]:
    """The next ``count`` event messages (comments skipped)."""
    found: list[SseMessage] = []
    async for message in messages:
        if message.data is not None:
            found.append(message)
            if len(found) == count:
                break
    return found


@dataclass(frozen=True)
class SseFrame:
    """One message of bunqueue's stream: its ``event:`` name (``message`` when none)."""

    event: str
    data: Any
    id: str | None = None


async def sse_frames(response: httpx.Response) -> AsyncIterator[SseFrame | str]:
    """The messages of a stream with their event names; a comment comes as its text."""
    event, event_id, data = "message", None, []
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield SseFrame(event, json.loads("\n".join(data)), event_id)
            event, event_id, data = "message", None, []
        elif line.startswith(":"):
            yield line[1:]
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


async def frame_named(frames: AsyncIterator[SseFrame | str], name: str, **data: Any) -> SseFrame:
    """The next frame called ``name`` whose data holds ``data`` (others are skipped)."""
    async for frame in frames:
        if (
            isinstance(frame, SseFrame)
            and frame.event == name
            and all(frame.data.get(key) == value for key, value in data.items())
        ):
            return frame
    raise AssertionError(f"the stream ended before a {name} frame")
