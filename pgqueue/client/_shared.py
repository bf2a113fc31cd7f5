"""What ``Queue``, ``Worker``, ``FlowProducer`` and ``QueueEvents`` share: a
transport opened on first use and closed with the object, and callbacks.

``connection`` is a connection string (``postgresql://...`` runs the engine
in-process, ``pgqueue://host:port,...`` talks to brokers) or a transport the
caller already started and will close itself (to share one among objects).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any, Self, TypeVar

from pgqueue.client.connect import check_connection, open_transport
from pgqueue.client.transport import Transport
from pgqueue.errors import ConfigError, PgQueueError

__all__ = ["Callback", "Emitter", "TransportOwner", "in_transaction_only"]

log = logging.getLogger("pgqueue.client")


def in_transaction_only(call: str) -> ConfigError:
    """The error for a transactional call on a transport that cannot join the
    application's transaction (TCP: the broker has its own connections)."""
    return ConfigError(
        f"{call} runs in your database transaction, which a broker over TCP cannot "
        "join: use the embedded transport (connection='postgresql://...'), or enqueue "
        "from your transaction with the SQL function pgqueue.enqueue(namespace, queue, "
        "name, data, opts) (docs/transactions.md)"
    )


Callback = Callable[..., Any]
C = TypeVar("C", bound=Callback)


class Emitter:
    """``on(event, callback)``: plain or async callbacks; a failing callback is logged."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[tuple[Callback, bool]]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def on(self, event: str, callback: C | None = None) -> Any:
        """Call ``callback(*args)`` on every ``event``; usable as a decorator."""
        if callback is None:

            def register(fn: C) -> C:
                self._listeners.setdefault(event, []).append((fn, False))
                return fn

            return register
        self._listeners.setdefault(event, []).append((callback, False))
        return callback

    def once(self, event: str, callback: C) -> C:
        """Call ``callback`` on the next ``event`` only."""
        self._listeners.setdefault(event, []).append((callback, True))
        return callback

    def off(self, event: str, callback: Callback) -> None:
        self._listeners[event] = [
            pair for pair in self._listeners.get(event, []) if pair[0] is not callback
        ]

    def listens(self, event: str) -> bool:
        return bool(self._listeners.get(event))

    def emit(self, event: str, *args: Any) -> None:
        listeners = self._listeners.get(event)
        if not listeners:
            if event == "error" and args:
                log.warning("%s: %s", type(self).__name__, args[0])
            return
        self._listeners[event] = [pair for pair in listeners if not pair[1]]
        for callback, _ in listeners:
            try:
                outcome = callback(*args)
            except Exception:
                log.exception("a %r callback failed", event)
                continue
            if inspect.isawaitable(outcome):
                task = asyncio.ensure_future(outcome)
                self._tasks.add(task)
                task.add_done_callback(self._callback_done)

    def _callback_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("an async callback failed", exc_info=task.exception())

    async def wait_callbacks(self) -> None:
        """Let async callbacks already started finish."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))


class TransportOwner(Emitter):
    """Opens its transport on first use; :meth:`close` closes what it opened."""

    def __init__(self, connection: str | Transport, transport_options: dict[str, Any]) -> None:
        super().__init__()
        if not isinstance(connection, str) and not hasattr(connection, "push"):
            raise PgQueueError(
                "connection must be a connection string (postgresql://... or pgqueue://...) "
                "or a started transport"
            )
        if isinstance(connection, str):
            check_connection(connection)
        self._connection = connection
        self._transport_options = transport_options
        self._transport: Transport | None = None if isinstance(connection, str) else connection
        self._owns_transport = isinstance(connection, str)
        self._opening: asyncio.Lock | None = None
        self.closed = False

    async def transport(self) -> Transport:
        """The transport, started on the first call."""
        if self._transport is not None:
            return self._transport
        if self.closed:
            raise PgQueueError(f"this {type(self).__name__} is closed")
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._transport is None:
                transport = open_transport(self._connection, **self._transport_options)
                await transport.start()
                self._transport = transport
        return self._transport

    async def __aenter__(self) -> Self:
        await self._enter()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _enter(self) -> None:
        """What ``async with`` does first: open the transport (a worker starts)."""
        await self.transport()

    async def close(self) -> None:
        """Close what this object opened."""
        await self.close_transport()

    async def close_transport(self) -> None:
        self.closed = True
        transport, self._transport = self._transport, None
        if transport is not None and self._owns_transport:
            await transport.close()
        await self.wait_callbacks()
