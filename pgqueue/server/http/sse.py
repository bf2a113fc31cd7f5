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

__all__ = ["EventStreamResponse", "format_event"]

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


class EventStreamResponse(Response):
    """Streams ``subscription`` until the client leaves or ``closing`` is set."""

    media_type = "text/event-stream"

    def __init__(
        self,
        subscription: Subscription,
        *,
        closing: asyncio.Event,
        keepalive: float,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.subscription = subscription
        self.closing = closing
        self.keepalive = keepalive
        self.on_close = on_close
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.create_task(_disconnected(receive), name="pgqueue:sse-disconnect")
        closing = asyncio.create_task(self.closing.wait(), name="pgqueue:sse-closing")
        upcoming: asyncio.Task[Event] | None = None
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            await send({"type": "http.response.body", "body": OPENING, "more_body": True})
            while True:
                if upcoming is None:
                    upcoming = asyncio.create_task(self.subscription.get(), name="pgqueue:sse-next")
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
                event = upcoming.result()
                upcoming = None
                message = format_event(event)
                if message is not None:
                    await send({"type": "http.response.body", "body": message, "more_body": True})
        except PgQueueError as exc:
            log.info("event stream ended: %s (the client resumes with Last-Event-ID)", exc)
        except OSError:
            pass
        finally:
            self.subscription.close()
            tasks = [task for task in (upcoming, gone, closing) if task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.on_close is not None:
                self.on_close()
        with contextlib.suppress(Exception):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
