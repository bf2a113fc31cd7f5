"""bunqueue's event stream (``GET /events``, ``/events/queues/{queue}``) as SSE.

The stream opens as bunqueue's does, with ``retry: 3000`` and a first
message ``data: {"connected":true,"clientId":"…"}`` (no ``event:`` line);
then every frame of the :class:`~pgqueue.server.http.feed.Feed` is one
message with an ``event:`` line and flat JSON data::

    id: 104014:2+3
    event: job:completed
    data: {"queue":"emails","jobId":"0193…","timestamp":1796017676603.1}

Job events carry the event's resume token as ``id:``: a client that
reconnects with ``Last-Event-ID`` (to any broker) continues after it, as on
pgqueue's own stream (``/pgqueue/events``).  An id that is no resume token
(bunqueue's ids are a per-process counter) starts from now.  Heartbeats are
the comment ``:heartbeat``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

from pgqueue.server.http.feed import Feed, Frame
from pgqueue.server.http.jsonio import dumps
from pgqueue.server.http.sse import StreamResponse

__all__ = ["BunqueueStreamResponse", "format_frame"]

RETRY_MS = 3000
HEARTBEAT = b":heartbeat\n\n"


def opening(client_id: str) -> bytes:
    return (
        b"retry: %d\ndata: " % RETRY_MS
        + dumps({"connected": True, "clientId": client_id})
        + (b"\n\n")
    )


def format_frame(frame: Frame) -> bytes:
    """The SSE message of one feed frame."""
    if frame.name == "heartbeat":
        return HEARTBEAT
    head = b"id: " + frame.resume.encode() + b"\n" if frame.resume else b""
    return head + b"event: " + frame.name.encode() + b"\ndata: " + dumps(frame.data) + b"\n\n"


class BunqueueStreamResponse(StreamResponse):
    """Streams ``feed`` until the client leaves or ``closing`` is set (the feed
    makes its own heartbeats)."""

    ended = "bunqueue event stream ended: %s"

    def __init__(
        self,
        feed: Feed,
        *,
        closing: asyncio.Event,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.client_id = str(uuid.uuid4())
        super().__init__(closing=closing, opening=opening(self.client_id), on_close=on_close)
        self.feed = feed

    async def next_message(self) -> bytes | None:
        return format_frame(await self.feed.next())

    async def release(self) -> None:
        await self.feed.close()
