"""``QueueEvents``: what happens to a queue's jobs, as it happens.

Events come from the outbox, written in the same transaction as the change
they describe: the embedded transport reads it with LISTEN plus polling, the
TCP transport through ``SubscribeEvents``.  Each event carries a resume
cursor; after a dropped connection the subscription resumes from the last
cursor delivered, so nothing is skipped or repeated.  Pass
``last_event_id=<cursor>`` to pick up where an earlier process stopped.

Event names: ``pushed``, ``active``, ``progress``, ``completed``, ``failed``
(also for attempts that will be retried: ``event.data["terminal"]``),
``dlq``, ``stalled``, ``retried``, ``waiting``, ``delayed``, ``removed``,
``redriven``, ``paused``, ``resumed``, ``drained``, ``cleaned``, ...; and
``gap`` (no job): events that retention deleted before this subscriber reached
them, ``event.data["from"]`` to ``event.data["to"]`` (resume tokens).

    events = QueueEvents("emails", connection="postgresql://localhost/app")
    events.on("completed", lambda e: print(e.job_id, e.returnvalue))
    # or: async for event in events: ...
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from pgqueue.client._shared import TransportOwner
from pgqueue.client.transport import Transport, TransportEvent
from pgqueue.errors import PgQueueError
from pgqueue.vocabulary.names import validate_queue_name

__all__ = ["EventStream", "QueueEvent", "QueueEvents"]

RETRY_DELAYS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
SUBSCRIBED = "subscribed"  # a transport's marker: the subscription exists from here on


@dataclass(frozen=True, slots=True)
class QueueEvent:
    """One event of a queue."""

    event: str
    job_id: str
    queue: str
    timestamp: float
    data: dict[str, Any] = field(default_factory=dict)
    cursor: str = ""

    @property
    def returnvalue(self) -> Any:
        return self.data.get("returnvalue")

    @property
    def failed_reason(self) -> str | None:
        return self.data.get("failedReason")

    @property
    def progress(self) -> Any:
        return self.data.get("progress")

    @classmethod
    def from_transport(cls, event: TransportEvent) -> QueueEvent:
        return cls(
            event.event_type, event.job_id, event.queue, event.timestamp, event.body, event.cursor
        )


class QueueEvents(TransportOwner):
    """Events of one queue: callbacks (``on``) and ``async for``."""

    def __init__(
        self,
        name: str,
        connection: str | Transport,
        *,
        last_event_id: str | None = None,
        autorun: bool = True,
        **transport_options: Any,
    ) -> None:
        super().__init__(connection, transport_options)
        self.name = validate_queue_name(name)
        self.cursor = last_event_id
        self.confirmed = asyncio.Event()
        """Set once the current subscription is known to be live (see :meth:`wait_until_ready`)."""
        self._sinks: set[asyncio.Queue[QueueEvent | None]] = set()
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        if autorun:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop()
                self.start()

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        """Start delivering (done at creation when inside a running event loop)."""
        if self._task is None:
            if self.closed:
                raise PgQueueError("these QueueEvents are closed")
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"pgqueue:events:{self.name}"
            )

    async def wait_until_ready(self, timeout: float | None = None) -> None:
        """Return once the subscription is live: every event from then on is delivered.

        A transport announces its subscription; with one that does not, the
        first event shows it.  ``TimeoutError`` after ``timeout`` seconds.
        """
        self.start()
        async with asyncio.timeout(timeout):
            await self.confirmed.wait()

    async def run(self) -> None:
        """Start (if needed) and deliver until :meth:`close`."""
        self.start()
        assert self._task is not None
        await asyncio.shield(self._task)

    async def close(self) -> None:
        """Stop delivering; end every ``async for`` over these events."""
        self._stopping.set()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for sink in list(self._sinks):
            sink.put_nowait(None)
        await self.close_transport()
        self.emit("closed")

    async def _enter(self) -> None:
        self.start()

    # -- delivery ------------------------------------------------------------------

    async def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            self.confirmed.clear()
            try:
                transport = await self.transport()
                async for raw in transport.events(self.name, self.cursor):
                    failures = 0
                    self._deliver(QueueEvent.from_transport(raw))
                return
            except Exception as exc:  # resubscribe after any transport error
                self.emit("error", exc)
            delay = RETRY_DELAYS[min(failures, len(RETRY_DELAYS) - 1)]
            failures += 1
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stopping.wait()

    def _deliver(self, event: QueueEvent) -> None:
        if event.cursor:
            self.cursor = event.cursor
        self.confirmed.set()
        if event.event == SUBSCRIBED:
            self.emit("ready")
            return
        for sink in self._sinks:
            sink.put_nowait(event)
        self.emit(event.event, event)

    def __aiter__(self) -> EventStream:
        """Events from this call on (``async for event in queue_events``)."""
        self.start()
        return EventStream(self)


class EventStream:
    """One consumer's stream of events; it sees every event from its creation on."""

    def __init__(self, source: QueueEvents) -> None:
        self._source = source
        self._sink: asyncio.Queue[QueueEvent | None] = asyncio.Queue()
        source._sinks.add(self._sink)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> QueueEvent:
        event = await self._sink.get()
        if event is None:
            self._source._sinks.discard(self._sink)
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        """Stop receiving events."""
        self._source._sinks.discard(self._sink)
