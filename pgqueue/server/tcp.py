"""bunqueue's TCP transport: length-prefixed msgpack frames, served concurrently.

Per connection: frames are decoded and served concurrently up to
``max_inflight_per_connection``; as many again are read and wait for a slot, in
order (then reading pauses: backpressure); answers go back as they finish,
matched by ``reqId``.  A ``Ping`` takes no slot: it is answered at once however
full the window, so a client's liveness check hears from a broker that is slow
but alive (a connection it drops gives back the jobs pulled on it).  A frame that declares more than
``max_frame_bytes`` is refused from its header, before its body is read; a
frame still incomplete ``idle_partial_frame_ms`` after its first byte arrived
ends the connection, however its bytes trickle in (slowloris); a client that
does not read its answers ends it when the write buffer passes
``max_write_buffer_bytes``; a client address holding
``max_connections_per_address`` connections has the next one refused.  Each
limit logs a line and counts in ``pgqueue_tcp_limit_hits_total{limit}``.
Garbage gets an error frame; every other connection is unaffected.

A request is served only while its connection is alive and it is younger than
its deadline (:mod:`pgqueue.server.freshness`): a stale one is refused with
``Request expired ...`` (or, its connection gone, not answered at all) and
changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl as ssl_module
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from pgqueue.errors import FrameTooLarge, ProtocolError
from pgqueue.protocol import (
    FrameReader,
    encode_frame,
    pack,
    request_id_of_undecodable,
    unpack,
)
from pgqueue.server.dispatch import dispatch, error_response
from pgqueue.server.freshness import LoopWatch, peer_closed, peer_closed_fd, request_deadline_ms
from pgqueue.server.request import ClientState

if TYPE_CHECKING:
    from pgqueue.server.host import BrokerHost
    from pgqueue.server.tokens import TokenBook

__all__ = ["TcpConnection", "TcpServer"]

log = logging.getLogger("pgqueue.tcp")

# Served at once, without a slot of the in-flight window: the SDK's liveness check
# (pgqueue/client/pool.py) must hear from a broker that is slow but alive.
UNQUEUED = frozenset({"Ping"})


def _socket_kind(sock: Any) -> tuple[Any, tuple[int, int, int] | None]:
    """A transport's socket and its (family, type, proto), read once (None: not a socket
    whose descriptor can be peeked, e.g. none at all)."""
    try:
        return sock, (int(sock.family), int(sock.type), int(sock.proto))
    except (AttributeError, OSError, TypeError, ValueError):
        return sock, None


class TcpConnection:
    """One client connection."""

    def __init__(
        self, broker: BrokerHost, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.broker = broker
        self.reader = reader
        self.writer = writer
        settings = broker.settings
        self.client = ClientState(transport="tcp", authenticated=not broker.auth_required)
        self.client.send = self.send
        self._frames = FrameReader(settings.max_frame_bytes)
        self._slots = asyncio.Semaphore(settings.max_inflight_per_connection)
        # Frames read and not answered: in flight, or waiting for a slot (at most
        # as many again; then reading pauses).  A Ping reads past a full window.
        self._tasks: set[asyncio.Task[None]] = set()
        self._windowed = 0  # of those, the frames that take (or wait for) a slot
        self._waiting = 0  # of those, the frames still waiting for one
        self._room = asyncio.Event()
        self.peer = writer.get_extra_info("peername")
        self._loop = asyncio.get_running_loop()
        self._last_read = self._loop.time()
        self._sock, self._sock_kind = _socket_kind(writer.get_extra_info("socket"))
        self._partial_since: float | None = None  # when the incomplete frame began
        self._paused_once = False

    def _limit_hit(self, limit: str) -> None:
        self.broker.metrics.tcp_limit_hits.labels(limit).inc()

    def send(self, message: dict[str, Any]) -> None:
        """Write one frame (answers and event frames); drop a client that does not read."""
        if self.client.closed or self.writer.is_closing():
            return
        try:
            body = pack(message, int64=self.client.int64)
        except ValueError as exc:  # an integer beyond 64 bits, say: the client learns where
            body = pack(error_response(f"Cannot encode the answer: {exc}", message.get("reqId")))
        except (TypeError, OverflowError):
            log.exception("cannot encode an answer")
            body = pack(error_response("Internal server error", message.get("reqId")))
        self.writer.write(encode_frame(body, max_frame_size=2**32 - 1))
        transport = self.writer.transport
        if transport.get_write_buffer_size() > self.broker.settings.max_write_buffer_bytes:
            log.warning("closing %s: it does not read its answers", self.peer)
            self._limit_hit("slow_reader")
            self.client.closed = True
            transport.abort()

    async def serve(self) -> None:
        settings = self.broker.settings
        idle = settings.idle_partial_frame_ms / 1000 or None
        loop = asyncio.get_running_loop()
        try:
            while not self.client.closed:
                try:
                    if self._partial_since is not None and idle:
                        left = self._partial_since + idle - loop.time()
                        data = await asyncio.wait_for(self.reader.read(65536), max(left, 0))
                    else:
                        data = await self.reader.read(65536)
                except TimeoutError:
                    log.warning(
                        "closing %s: a partial frame was still incomplete after %d ms",
                        self.peer,
                        settings.idle_partial_frame_ms,
                    )
                    self._limit_hit("slow_frame")
                    break
                if not data:
                    break
                try:
                    bodies = self._frames.feed(data)
                except FrameTooLarge as exc:
                    log.warning("closing %s: %s", self.peer, exc.message)
                    self._limit_hit("frame_size")
                    self.send(error_response(exc.message, None))
                    with contextlib.suppress(ConnectionError):
                        await self.writer.drain()
                    break
                now = loop.time()
                if not self._frames.has_partial:
                    self._partial_since = None
                elif bodies or self._partial_since is None:
                    self._partial_since = now  # a new frame began in this read
                arrived = self.broker.tcp.loop_watch.earliest_arrival(now, self._last_read)
                self._last_read = now
                gone = bool(bodies) and self._peer_gone()
                for body in bodies:
                    await self._admit(body, arrived, gone)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            # Frames read before the end were answered before it when reading
            # waited for their slots: they still are (the end is not their client's).
            while self._waiting:
                self._room.clear()
                await self._room.wait()
            await self._close()

    def _inflight_full(self) -> None:
        """Reading pauses: the connection has its maximum of requests in flight."""
        self._limit_hit("inflight")
        if not self._paused_once:
            self._paused_once = True
            log.info(
                "%s has %d requests in flight: reading pauses until one finishes",
                self.peer,
                self.broker.settings.max_inflight_per_connection,
            )

    def _start(self, serving: Coroutine[Any, Any, None], *, windowed: bool) -> None:
        task = self._loop.create_task(serving)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if windowed:
            self._windowed += 1
            task.add_done_callback(self._left_window)

    def _left_window(self, task: asyncio.Task[None]) -> None:
        self._windowed -= 1
        self._room.set()

    def _peer_gone(self) -> bool:
        """The client closed (or reset) its end: nobody waits for these answers."""
        if self.reader.at_eof():
            return True
        if self._sock_kind is None:
            return peer_closed(self._sock)
        try:
            fd = self._sock.fileno()
        except OSError:
            return True
        return peer_closed_fd(fd, *self._sock_kind)

    async def _admit(self, body: bytes, arrived: float, gone: bool) -> None:
        """Start serving one frame: a Ping at once, anything else in the window
        (reading pauses while as many again wait for a slot)."""
        try:
            msg = unpack(body)
        except ProtocolError as exc:
            self.send(error_response(exc.message, request_id_of_undecodable(body)))
            return
        window = self.broker.settings.max_inflight_per_connection
        if self._windowed >= window:
            self._inflight_full()
        cmd = msg.get("cmd")
        if isinstance(cmd, str) and cmd in UNQUEUED:  # (a fuzzed cmd may be unhashable)
            self._start(self._serve(msg, arrived, gone), windowed=False)
            return
        while self._windowed >= 2 * window:
            self._room.clear()
            await self._room.wait()
        self._waiting += 1
        self._start(self._serve_in_window(msg, arrived, gone), windowed=True)

    async def _serve_in_window(self, msg: dict[str, Any], arrived: float, gone: bool) -> None:
        try:
            await self._slots.acquire()
        finally:
            self._waiting -= 1
            self._room.set()
        try:
            await self._serve(msg, arrived, gone)
        finally:
            self._slots.release()

    async def _serve(self, msg: dict[str, Any], arrived: float, gone: bool) -> None:
        if self._fresh(msg, arrived, gone):
            self.send(await dispatch(self.broker, self.client, msg))

    def _fresh(self, msg: dict[str, Any], arrived: float, gone: bool) -> bool:
        """Whether to serve ``msg``; answers (or drops) a stale one."""
        cmd = msg.get("cmd")
        if gone or self.client.closed:
            log.warning("not executed: %s from %s, whose connection is gone", cmd, self.peer)
            return False
        req_id = msg.get("reqId") if isinstance(msg.get("reqId"), str) else None
        try:
            deadline = request_deadline_ms(msg, self.broker.settings.max_request_age_ms)
        except ValueError as exc:
            self.send(error_response(str(exc), req_id))
            return False
        age = (self._loop.time() - arrived) * 1000
        if deadline is None or age <= deadline:
            return True
        log.warning(
            "not executed: %s from %s expired (%.0f ms old, deadline %.0f ms)",
            cmd,
            self.peer,
            age,
            deadline,
        )
        self.send(
            error_response(
                f"Request expired: {age:.0f} ms old, past its {deadline:.0f} ms deadline;"
                " nothing was done",
                req_id,
            )
        )
        return False

    async def wait_idle(self) -> None:
        """Wait until no request of this connection is being served."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def _close(self) -> None:
        self.client.closed = True
        await self.wait_idle()
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()
        await self.broker.client_closed(self.client)


class TcpServer:
    """Accepts connections; stops accepting first when the broker drains."""

    def __init__(self, broker: BrokerHost) -> None:
        self.broker = broker
        self._server: asyncio.Server | None = None
        self.connections: set[TcpConnection] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self.port = 0
        self.loop_watch = LoopWatch()
        self._per_address: dict[str, int] = {}

    async def start(self, host: str, port: int, *, ssl: ssl_module.SSLContext | None = None) -> int:
        """Listen on ``host:port`` (TLS only, on the same port, when ``ssl`` is given)."""
        tls: dict[str, Any] = {} if ssl is None else {"ssl": ssl, "ssl_handshake_timeout": 10}
        self._server = await asyncio.start_server(self._accept, host, port, limit=2**20, **tls)
        self.port = self._server.sockets[0].getsockname()[1]
        self.loop_watch.start()
        return self.port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) and peer else str(peer)
        if not self._admit(address):
            await self._refuse(writer, address)
            return
        connection = TcpConnection(self.broker, reader, writer)
        self.connections.add(connection)
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            await connection.serve()
        finally:
            self.connections.discard(connection)
            self._per_address[address] -= 1
            if not self._per_address[address]:
                del self._per_address[address]
            if task is not None:
                self._handlers.discard(task)

    def revoke(self, book: TokenBook) -> int:
        """Close the connections whose token ``book`` no longer grants (a reload):
        as a dropped connection, their pulled jobs go back to waiting."""
        closed = 0
        for connection in list(self.connections):
            credential = connection.client.credential
            if credential is None:
                continue
            entry = book.current(credential.digest)
            if entry is None or not entry.allows(credential.namespace):
                log.info("closing %s: its token was revoked", connection.peer)
                connection.client.closed = True
                connection.writer.close()
                closed += 1
        return closed

    def _admit(self, address: str) -> bool:
        """Count a new connection of ``address``; False past the per-address limit."""
        limit = self.broker.settings.max_connections_per_address
        held = self._per_address.get(address, 0)
        if limit and held >= limit:
            return False
        self._per_address[address] = held + 1
        return True

    async def _refuse(self, writer: asyncio.StreamWriter, address: str) -> None:
        limit = self.broker.settings.max_connections_per_address
        log.warning("refusing a connection from %s: it holds %d already", address, limit)
        self.broker.metrics.tcp_limit_hits.labels("connections_per_address").inc()
        message = (
            f"Too many connections from {address}: at most {limit} per client address"
            " (--max-connections-per-address)"
        )
        writer.write(encode_frame(pack(error_response(message, None))))
        with contextlib.suppress(Exception):
            await writer.drain()
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()

    async def stop_accepting(self) -> None:
        if self._server is not None:
            self._server.close()

    async def wait_idle(self, timeout: float) -> None:
        """Let requests in flight finish (bounded)."""
        waits = [c.wait_idle() for c in list(self.connections)]
        if waits:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*waits), timeout)

    async def close_all(self) -> None:
        for connection in list(self.connections):
            connection.client.closed = True
            connection.writer.close()
        if self._handlers:
            await asyncio.wait(set(self._handlers), timeout=10)
        if self._server is not None:
            await self._server.wait_closed()
        await self.loop_watch.stop()
