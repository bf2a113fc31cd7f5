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
import contextlib
import logging
import uuid
from collections.abc import Callable

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from pgqueue.errors import PgQueueError
from pgqueue.server.http.feed import Feed, Frame
from pgqueue.server.http.jsonio import dumps

__all__ = ["BunqueueStreamResponse", "format_frame"]

log = logging.getLogger("pgqueue.http")

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


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class BunqueueStreamResponse(Response):
    """Streams ``feed`` until the client leaves or ``closing`` is set."""

    media_type = "text/event-stream"

    def __init__(
        self,
        feed: Feed,
        *,
        closing: asyncio.Event,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.feed = feed
        self.closing = closing
        self.on_close = on_close
        self.client_id = str(uuid.uuid4())
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.create_task(_disconnected(receive), name="pgqueue:bq-sse-disconnect")
        closing = asyncio.create_task(self.closing.wait(), name="pgqueue:bq-sse-closing")
        upcoming: asyncio.Task[Frame] | None = None
        try:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            body = opening(self.client_id)
            await send({"type": "http.response.body", "body": body, "more_body": True})
            while True:
                if upcoming is None:
                    upcoming = asyncio.create_task(self.feed.next(), name="pgqueue:bq-sse-next")
                done, _ = await asyncio.wait(
                    {upcoming, gone, closing}, return_when=asyncio.FIRST_COMPLETED
                )
                if gone in done or closing in done:
                    break
                frame = upcoming.result()
                upcoming = None
                message = format_frame(frame)
                await send({"type": "http.response.body", "body": message, "more_body": True})
        except PgQueueError as exc:
            log.info("bunqueue event stream ended: %s", exc)
        except OSError:
            pass
        finally:
            tasks = [task for task in (upcoming, gone, closing) if task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.feed.close()
            if self.on_close is not None:
                self.on_close()
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
