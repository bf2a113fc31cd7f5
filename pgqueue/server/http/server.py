"""The HTTP listener: uvicorn serving the API on the broker's event loop.

``start`` binds the socket itself (so port 0 works and a taken port fails the
broker's start with an ``OSError``), then runs ``uvicorn.Server`` in a task.
uvicorn installs no signal handlers here: SIGTERM belongs to the broker,
which calls ``stop_accepting`` (close the listener, end the event streams,
answer 503 on kept-alive connections) and later ``stop`` (let requests in
flight finish, bounded by the drain timeout, then close every connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Iterator
from typing import TYPE_CHECKING

import uvicorn

from pgqueue.server.http.app import HttpState, build_app
from pgqueue.server.http.telemetry import HttpMetrics

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost
    from pgqueue.server.tokens import TokenBook

__all__ = ["HttpServer"]

log = logging.getLogger("pgqueue.http")

MAX_HEADER_BYTES = 64 * 1024  # a Last-Event-ID resume token can be long


class _Uvicorn(uvicorn.Server):
    """uvicorn without signal handling, telling when it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


class HttpServer:
    """The broker's HTTP API (see :mod:`pgqueue.server.http`)."""

    def __init__(self, broker: BrokerHost, *, tls: ssl.SSLContext | None = None) -> None:
        self.broker = broker
        self.tls = tls
        self.state = HttpState(broker)
        self.port = 0
        self._server: _Uvicorn | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, host: str, port: int) -> None:
        """Listen on ``host:port`` (0: any free port; ``self.port`` tells which)."""
        broker, tls = self.broker, self.tls
        if self.state.metrics is None:
            self.state.metrics = HttpMetrics(broker.metrics.registry)
        sock = _bind(host, port)
        config = uvicorn.Config(
            build_app(self.state),
            lifespan="off",
            log_config=None,
            access_log=False,
            http="h11",
            ws="websockets-sansio",
            server_header=False,
            proxy_headers=False,
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            timeout_graceful_shutdown=max(1, broker.settings.drain_timeout_ms // 1000),
            # The broker's context, loaded once for both listeners.
            ssl_context_factory=None if tls is None else (lambda _config, _default: tls),
        )
        server = _Uvicorn(config)
        task = asyncio.create_task(server.serve(sockets=[sock]), name="pgqueue:http")
        listening = asyncio.create_task(server.listening.wait())
        await asyncio.wait({task, listening}, return_when=asyncio.FIRST_COMPLETED)
        if not server.listening.is_set():
            listening.cancel()
            sock.close()
            try:
                task.result()
            except SystemExit as exc:  # uvicorn exits on a startup failure
                raise OSError(f"the HTTP server could not start on {host}:{port}") from exc
            raise OSError(f"the HTTP server stopped while starting on {host}:{port}")
        self._server, self._task = server, task
        self.port = int(sock.getsockname()[1])

    def revoke(self, book: TokenBook) -> int:
        """End the event streams and WebSockets whose token ``book`` no longer grants."""
        return self.state.end_streams(book)

    async def stop_accepting(self) -> None:
        """Close the listener and end the event streams (clients resume elsewhere)."""
        self.state.closing.set()
        self.state.end_streams()
        if self._server is not None:
            for listener in getattr(self._server, "servers", []):
                listener.close()

    async def stop(self) -> None:
        """Finish the requests in flight (bounded), close every connection."""
        self.state.closing.set()
        self.state.end_streams()
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        timeout = self.broker.settings.drain_timeout_ms / 1000 + 5
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout)
        except TimeoutError:
            log.warning("the HTTP server did not stop in %.0f s; closing it", timeout)
            self._server.force_exit = True
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._server = None
        self._task = None
