"""Server-sent events: one outbox subscription as a ``text/event-stream``.

Each message is one event: ``id:`` is its resume token and ``data:`` the JSON
of the TCP event frame (``{"type": "event", "event": {...}}``, see
:func:`pgqueue.server.wire.event_to_wire`).  A client that reconnects with
``Last-Event-ID`` (any broker of the namespace) gets exactly the events after
it: no gap, no duplicate.  A comment every ``keepalive`` seconds keeps proxies
from closing an idle stream.  The stream ends, and its subscription is closed,
when the client disconnects, the subscription fails (the client reconnects and
resumes), or the broker drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from pgqueue.errors import PgQueueError
from pgqueue.manager.outbox import Event, Subscription
from pgqueue.server.http.jsonio import dumps
from pgqueue.server.wire import event_to_wire

__all__ = ["EventStreamResponse", "StreamResponse", "format_event"]

log = logging.getLogger("pgqueue.http")

OPENING = b"retry: 1000\n: stream open\n\n"
KEEPALIVE = b": keep-alive\n\n"


def format_event(event: Event) -> bytes | None:
    """The SSE message of one event (None for events clients do not see)."""
    frame = event_to_wire(event)
    if frame is None:
        return None
    return b"id: " + event.resume.encode() + b"\ndata: " + dumps(frame) + b"\n\n"


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class StreamResponse(Response):
    """A ``text/event-stream`` of :meth:`next_message` until the client leaves or
    ``closing`` is set; a subclass gives the messages and :meth:`release`.

    It opens with ``opening``; with ``keepalive`` (seconds), a quiet stream gets
    ``KEEPALIVE`` after that long.  A failed source (a
    :class:`~pgqueue.errors.PgQueueError`) ends the stream; the client resumes."""

    media_type = "text/event-stream"
    ended = "event stream ended: %s (the client resumes with Last-Event-ID)"
    """The log line of a stream whose source failed."""

    def __init__(
        self,
        *,
        closing: asyncio.Event,
        opening: bytes,
        keepalive: float | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.closing = closing
        self.opening = opening
        self.keepalive = keepalive
        self.on_close = on_close
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no"})

    async def next_message(self) -> bytes | None:
        """The next message (None: one the client does not see)."""
        raise NotImplementedError

    async def release(self) -> None:
        """Close the source of the messages."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.create_task(_disconnected(receive), name="pgqueue:sse-disconnect")
        closing = asyncio.create_task(self.closing.wait(), name="pgqueue:sse-closing")
        upcoming: asyncio.Task[bytes | None] | None = None
        try:
            start = {"type": "http.response.start", "status": 200, "headers": self.raw_headers}
            await send(start)
            await send({"type": "http.response.body", "body": self.opening, "more_body": True})
            while True:
                if upcoming is None:
                    upcoming = asyncio.create_task(self.next_message(), name="pgqueue:sse-next")
                done, _ = await asyncio.wait(
                    {upcoming, gone, closing},
                    timeout=self.keepalive,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if gone in done or closing in done:
                    break
                if upcoming not in done:
                    await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
                    continue
                message = upcoming.result()
                upcoming = None
                if message is not None:
                    await send({"type": "http.response.body", "body": message, "more_body": True})
        except PgQueueError as exc:
            log.info(self.ended, exc)
        except OSError:
            pass
        finally:
            tasks = [task for task in (upcoming, gone, closing) if task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.release()
            if self.on_close is not None:
                self.on_close()
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class EventStreamResponse(StreamResponse):
    """Streams ``subscription`` until the client leaves or ``closing`` is set."""

    def __init__(
        self,
        subscription: Subscription,
        *,
        closing: asyncio.Event,
        keepalive: float,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(closing=closing, opening=OPENING, keepalive=keepalive, on_close=on_close)
        self.subscription = subscription

    async def next_message(self) -> bytes | None:
        return format_event(await self.subscription.get())

    async def release(self) -> None:
        self.subscription.close()
