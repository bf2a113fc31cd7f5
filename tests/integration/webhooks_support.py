"""Webhook test kit: a tiny HTTP receiver, a manager with the webhook operations.

``Receiver`` is an asyncio HTTP/1.1 server on 127.0.0.1 that records every
request (headers, exact body bytes) and answers what its ``answer`` callback
says: a status code, or an awaitable of one (to hold a request open).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pgqueue.config import Config
from pgqueue.maintenance.webhook_delivery import DeliverySettings, WebhookDelivery
from pgqueue.maintenance.webhook_sender import WebhookSender
from pgqueue.manager.webhooks.ops import WebhookOps
from pgqueue.runtime import PostgresQueueManager
from pgqueue.ssrf import AddressGuard
from tests.conftest import MANAGER_DEFAULTS


@dataclass(frozen=True)
class Received:
    """One request as the receiver got it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def delivery_id(self) -> str:
        return self.headers["x-webhook-delivery"]


Answer = Callable[[Received], "int | Awaitable[int]"]


@dataclass(eq=False)
class Receiver:
    answer: Answer = field(default=lambda request: 200)
    requests: list[Received] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    _server: asyncio.Server | None = None
    _handlers: set[asyncio.Task[Any]] = field(default_factory=set)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def __aenter__(self) -> Receiver:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            while True:
                request = await self._read(reader)
                if request is None:
                    return
                self.requests.append(request)
                self.arrived.set()
                status = self.answer(request)
                if inspect.isawaitable(status):
                    status = await status
                writer.write(f"HTTP/1.1 {status} X\r\nContent-Length: 2\r\n\r\nok".encode())
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._handlers.discard(task)
            writer.close()

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> Received | None:
        line = await reader.readline()
        if not line:
            return None
        method, path, _ = line.decode().split(" ", 2)
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return Received(method, path, headers, body, asyncio.get_running_loop().time())

    def events(self) -> list[tuple[str, str | None]]:
        return [(r.json["event"], r.json["jobId"]) for r in self.requests]


class WebhookManager(PostgresQueueManager, WebhookOps):
    """A manager with the webhook operations (whether or not PostgresQueueManager
    has them yet); its registrations may point at 127.0.0.1 unless
    ``allow_private`` is False, and ``resolver`` replaces DNS."""

    allow_private = True
    resolver: Any = None

    def webhook_guard(self) -> AddressGuard:
        if self.resolver is not None:
            return AddressGuard(self.allow_private, self.resolver)
        return AddressGuard(allow_private=self.allow_private)


def webhook_config(dsn: str, namespace: str, *, allow_private: bool, **settings: Any) -> Config:
    """A Config, with ``webhook_allow_private`` once Config has the setting."""
    if "webhook_allow_private" in Config.__dataclass_fields__:
        settings["webhook_allow_private"] = allow_private
    return Config(dsn=dsn, namespace=namespace, **settings)


async def take_over_delivery(manager: PostgresQueueManager) -> None:
    """Stop the manager's own delivery service (when the engine runs one), so
    that the test's service, with its short timeouts, is the only one."""
    own = getattr(manager, "webhook_delivery", None)
    if own is not None:
        await own.stop()


@contextlib.asynccontextmanager
async def webhook_manager(
    dsn: str, namespace: str, *, allow_private: bool = True, **settings: Any
) -> AsyncIterator[WebhookManager]:
    options = {**MANAGER_DEFAULTS, "broker_id": "broker-a", **settings}
    manager = WebhookManager(webhook_config(dsn, namespace, allow_private=allow_private, **options))
    manager.allow_private = allow_private
    await manager.start()
    try:
        yield manager
    finally:
        await manager.close()


FAST = DeliverySettings(
    timeout_ms=2_000, lease_ms=3_000, retry_base_ms=1_000, max_attempts=5, interval_ms=20
)


@contextlib.asynccontextmanager
async def sender(
    allow_private: bool = True, timeout_ms: int = 2_000
) -> AsyncIterator[WebhookSender]:
    client = WebhookSender(AddressGuard(allow_private=allow_private), timeout_ms=timeout_ms)
    try:
        yield client
    finally:
        await client.aclose()


@contextlib.asynccontextmanager
async def delivery_service(
    manager: PostgresQueueManager, settings: DeliverySettings = FAST, *, allow_private: bool = True
) -> AsyncIterator[WebhookDelivery]:
    """The leader's delivery service of ``manager`` (started with run_maintenance)."""
    assert manager.elector is not None, "start the manager with run_maintenance=True"
    await take_over_delivery(manager)
    service = WebhookDelivery(
        manager.ctx, manager.elector, settings=settings, guard=AddressGuard(allow_private)
    )
    await service.start()
    try:
        yield service
    finally:
        await service.stop()
