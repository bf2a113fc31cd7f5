"""One TCP connection to a broker: frames out, answers matched by ``reqId``.

Requests are pipelined: many may be in flight at once; each waits for the
answer with its ``reqId``.  Frames without a ``reqId`` are server-pushed
events (``{type: "event"}``) and go to :attr:`events` (:meth:`next_event`);
an answer that comes after its request gave up (timeout, cancellation) goes to
the request's ``on_late`` callback if it gave one (a pull gives back the jobs
it claimed), else it is dropped.  When
the connection breaks, every request in flight fails with
:class:`ConnectionLost` — for a write that means its outcome is unknown, so
callers retry writes only with a custom id.  A request refused because the
connection was already closed was never sent.  Every request carries its
timeout as ``reqTimeout`` (ms): a broker that reads it later than that (it was
paused, say) refuses it unexecuted, since by then this side has given up.
:meth:`Connection.silent_for` says how long the requests in flight have heard
nothing (the pool's liveness check).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import ssl as ssl_module
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, SupportsIndex

from pgqueue.errors import (
    AuthError,
    CommandTimeout,
    ConnectionLost,
    PgQueueError,
    ProtocolError,
    RemoteError,
    ValidationError,
)
from pgqueue.protocol import FrameReader, encode_frame, pack, unpack

__all__ = ["Connection"]

log = logging.getLogger("pgqueue.client")

LateAnswer = Callable[[dict[str, Any]], None]
MAX_LATE = 1024  # requests given up on whose answer may still come (oldest forgotten)

CAPABILITIES = ("pipelining", "separate-job-name", "int64")
HELLO = {"protocolVersion": 3, "capabilities": list(CAPABILITIES)}
"""What the SDK says on every connection: bunqueue v3, and 64-bit integers exactly."""
JOB_ROWS = "job-rows"
"""The capability that asks for PULLB's jobs as rows (``TcpTransport`` reads them)."""


class _FrameFeed(asyncio.StreamReader):
    """A stream reader that hands each read to its connection as it arrives (in the
    transport's callback) instead of buffering it for a reading task: an answer
    reaches its request's future without a wake-up of the read loop in between.
    Nothing is buffered, so reading never pauses; ``read`` only sees the end of the
    stream (b"") or its error."""

    on_data: Callable[[bytes], None] | None = None

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        if self.on_data is None:
            super().feed_data(data)
        elif data:
            self.on_data(data if type(data) is bytes else bytes(data))


async def _open_stream(
    host: str, port: int, ssl: ssl_module.SSLContext | None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """``asyncio.open_connection`` with a :class:`_FrameFeed` for its reader."""
    loop = asyncio.get_running_loop()
    reader = _FrameFeed(limit=2**16, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    transport, _ = await loop.create_connection(lambda: protocol, host, port, ssl=ssl)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


class Connection:
    """A pipelined protocol connection (use :meth:`open`)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.address = address
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._late: OrderedDict[str, LateAnswer] = OrderedDict()
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.closed = asyncio.Event()
        self.failure: BaseException | None = None
        self.int64 = False  # the broker carries 64-bit integers exactly (its Hello says so)
        self._loop = asyncio.get_running_loop()
        now = self._loop.time()
        self.last_heard = now  # loop time of the last bytes received
        self._busy_since = now  # loop time the requests in flight began (none: meaningless)
        self._frames = FrameReader(2**32 - 1)
        if isinstance(reader, _FrameFeed):
            reader.on_data = self._received
        self._pump = asyncio.create_task(self._read_loop(), name=f"pgqueue:conn:{address}")

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        probe: bool = False,
        ssl: ssl_module.SSLContext | None = None,
        namespace: str | None = None,
        job_rows: bool = False,
    ) -> Connection:
        """Connect, authenticate when ``token`` is given, and say ``Hello``.

        ``ssl``: speak TLS (a broker with ``--tls-cert``).  ``namespace``: the
        one of the token's namespaces to work in (sent with ``Auth``).

        The ``Hello`` asks for 64-bit integers (capability ``int64``); a broker that
        answers with the same capability gets and sends them exactly, others get
        bunqueue's float64.  ``job_rows`` also asks for PULLB's jobs as rows of one
        ``columns`` list (capability ``job-rows``; a broker that does not know it
        answers ``jobs`` as before).  A broker that accepts connections but does not serve
        them (stopped, overloaded) fails here, within ``timeout``.  ``probe`` is
        kept for callers that ask for it; every connection is probed now.
        """
        try:
            async with asyncio.timeout(timeout):  # (wait_for can lose a cancellation)
                reader, writer = await _open_stream(host, port, ssl)
        except (OSError, TimeoutError) as exc:
            raise ConnectionLost(f"cannot connect to {host}:{port}: {exc}") from exc
        connection = cls(reader, writer, f"{host}:{port}")
        try:
            if token is not None:
                auth = {"token": token, **({} if namespace is None else {"namespace": namespace})}
                await connection.call("Auth", auth, timeout=timeout)
            said = dict(HELLO)
            if job_rows:
                said["capabilities"] = [*CAPABILITIES, JOB_ROWS]
            hello = await connection.call("Hello", said, timeout=timeout)
            capabilities = hello.get("capabilities")
            connection.int64 = isinstance(capabilities, list) and "int64" in capabilities
        except RemoteError as exc:
            await connection.close()
            if token is None:  # the Ping was refused: "Not authenticated"
                raise AuthError(f"{exc.message}: this broker wants a token") from exc
            raise AuthError(exc.message) from exc
        except CommandTimeout as exc:
            await connection.close()
            raise ConnectionLost(f"broker {host}:{port} accepted but did not answer") from exc
        except BaseException:
            await connection.close()
            raise
        return connection

    @property
    def in_flight(self) -> int:
        return len(self._waiting)

    def silent_for(self) -> float:
        """Seconds the requests in flight have heard nothing from the broker (0 when
        none is in flight): since the last bytes received, or since they began."""
        if not self._waiting:
            return 0.0
        now = asyncio.get_running_loop().time()
        return now - max(self.last_heard, self._busy_since)

    async def call(
        self, cmd: str, fields: dict[str, Any] | None = None, *, timeout: float | None = 30.0
    ) -> dict[str, Any]:
        """Send one command; return the answer map or raise :class:`RemoteError`."""
        answer = await self.request({"cmd": cmd, **(fields or {})}, timeout=timeout)
        if not answer.get("ok"):
            raise RemoteError(str(answer.get("error", "unknown error")))
        return answer

    async def request(
        self,
        message: dict[str, Any],
        *,
        timeout: float | None = 30.0,
        on_late: LateAnswer | None = None,
    ) -> dict[str, Any]:
        """Send a raw command map; return the raw answer (ok or not).

        ``on_late`` gets the answer if it comes after this call gave up."""
        if self.closed.is_set():
            raise ConnectionLost(f"connection to {self.address} is closed")
        req_id = str(next(self._ids) & 0x7FFFFFFF)
        envelope: dict[str, Any] = {"reqId": req_id}
        if timeout is not None:
            envelope["reqTimeout"] = max(1, round(timeout * 1000))
        try:
            frame = encode_frame(pack({**message, **envelope}, int64=self.int64))
        except (TypeError, ValueError, OverflowError) as exc:
            field = str(exc).split(":", 1)[0].split(".", 1)[0].split("[", 1)[0]
            raise ValidationError(
                f"{message.get('cmd')}: a value cannot be sent: {exc}",
                field=field if field in message else None,
            ) from exc
        loop = self._loop
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        if not self._waiting:
            self._busy_since = loop.time()
        self._waiting[req_id] = future
        answered = False
        try:
            self._writer.write(frame)
            async with asyncio.timeout(timeout):
                answer = await future
            answered = True
            return answer
        except TimeoutError as exc:
            raise CommandTimeout(
                f"{message.get('cmd')} got no answer from {self.address} in {timeout}s"
            ) from exc
        finally:
            self._waiting.pop(req_id, None)
            if on_late is not None and not answered:
                self._gave_up(req_id, future, on_late)

    def _gave_up(
        self, req_id: str, future: asyncio.Future[dict[str, Any]], on_late: LateAnswer
    ) -> None:
        """The request stopped waiting: its answer, now or later, goes to ``on_late``."""
        if future.done() and not future.cancelled():
            if future.exception() is None:  # it came just as the wait ended
                self._late_answer(on_late, future.result())
            return
        if self.closed.is_set():
            return
        self._late[req_id] = on_late
        while len(self._late) > MAX_LATE:
            self._late.popitem(last=False)

    def _late_answer(self, on_late: LateAnswer, answer: dict[str, Any]) -> None:
        try:
            on_late(answer)
        except Exception:
            log.exception("%s: handling a late answer failed", self.address)

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (tests of the broker's handling of bad input)."""
        self._writer.write(data)

    async def next_raw_answer(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next frame that matched no request (answers without a reqId)."""
        return await asyncio.wait_for(self.events.get(), timeout)

    def _received(self, data: bytes) -> None:
        """Bytes from the broker (a :class:`_FrameFeed` reader, in its transport's
        callback): their frames go to their requests at once."""
        if self.failure is not None:
            return
        self.last_heard = self._loop.time()
        try:
            for body in self._frames.feed(data):
                self._deliver(unpack(body))
        except (ProtocolError, PgQueueError) as exc:
            self.failure = exc
            self._fail_all()

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self._reader.read(65536)  # a _FrameFeed: only the end
                if not data or self.failure is not None:
                    break
                self._received(data)
        except (OSError, ProtocolError, PgQueueError) as exc:
            if self.failure is None:
                self.failure = exc
        except asyncio.CancelledError:
            raise
        finally:
            self._fail_all()

    def _deliver(self, message: dict[str, Any]) -> None:
        req_id = message.get("reqId")
        if not isinstance(req_id, str):
            self.events.put_nowait(message)
            return
        future = self._waiting.get(req_id)
        late = self._late.pop(req_id, None)
        if future is not None and not future.done():
            future.set_result(message)
        elif late is not None:
            self._late_answer(late, message)
        else:
            log.debug("%s: dropped a late answer (reqId %s)", self.address, req_id)

    async def next_event(self) -> dict[str, Any] | None:
        """The next frame without a reqId (events); None once the connection closed
        and every frame received before was read."""
        while self.events.empty():
            if self.closed.is_set():
                return None
            getter = asyncio.ensure_future(self.events.get())
            closer = asyncio.ensure_future(self.closed.wait())
            try:
                await asyncio.wait({getter, closer}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                closer.cancel()
                if not getter.done():
                    getter.cancel()
            if getter.done() and not getter.cancelled():
                return getter.result()
        return self.events.get_nowait()

    def _fail_all(self) -> None:
        self.closed.set()
        self._late.clear()
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(
                    ConnectionLost(f"connection to {self.address} lost before the answer")
                )

    def abort(self) -> None:
        """Drop the connection at once (a broker that stopped answering)."""
        transport = self._writer.transport
        if not transport.is_closing():
            transport.abort()

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
        self._pump.cancel()
        await asyncio.wait([self._pump])  # its end, not its outcome; a cancel of ours passes
        self._fail_all()
