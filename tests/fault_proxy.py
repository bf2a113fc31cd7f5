"""A TCP proxy in front of PostgreSQL that can cut connections at chosen moments.

Real sockets, real server: the proxy forwards bytes both ways and, when armed,
lets one client message through and then drops the server's answer and closes
the connection, so the client knows the request was sent but never learns its
outcome (the indeterminate-commit case of G1).  It can also hold a server's answer
back (and everything after it on that connection) until told to let it through:
an answer that arrives after its client gave up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit, urlunsplit

Predicate = Callable[[bytes], bool]


def upstream_of(dsn: str) -> tuple[str, int | str]:
    """(host, port) of a TCP DSN, or ("unix", socket path) of a socket DSN."""
    parts = urlsplit(dsn)
    host_param = parse_qs(parts.query).get("host", [None])[0]
    port = parts.port or 5432
    if host_param and host_param.startswith("/"):
        return "unix", f"{host_param}/.s.PGSQL.{port}"
    return parts.hostname or "127.0.0.1", port


class FaultProxy:
    """Forward ``127.0.0.1:<port>`` to the database of ``dsn``; cut on demand."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._upstream = upstream_of(dsn)
        self._server: asyncio.Server | None = None
        self._links: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._trigger: Predicate | None = None
        self.cut = asyncio.Event()
        self._hold: Predicate | None = None
        self.holding = asyncio.Event()
        self._let_through = asyncio.Event()
        self.port = 0
        self.blackholed = False  # while set, bytes in both directions vanish
        self.delay = 0.0  # seconds added before each chunk is forwarded

    @property
    def dsn(self) -> str:
        """The DSN that goes through the proxy (same database, user and options)."""
        parts = urlsplit(self._dsn)
        query = "&".join(f"{k}={v[0]}" for k, v in parse_qs(parts.query).items() if k != "host")
        user = parts.username or "postgres"
        netloc = f"{user}@127.0.0.1:{self.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, query or "sslmode=disable", ""))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def arm(self, when: Predicate) -> None:
        """On the next client message matching ``when``: forward it, then drop the
        server's reply and close that connection."""
        self.cut.clear()
        self._trigger = when

    def hold(self, when: Predicate) -> None:
        """Hold back the next server message matching ``when`` (and what follows it on
        that connection) until :meth:`let_through`; :attr:`holding` is set once it is held."""
        self.holding.clear()
        self._let_through.clear()
        self._hold = when

    def let_through(self) -> None:
        self._let_through.set()

    def cut_all(self) -> None:
        """Reset every connection through the proxy now (new ones are accepted)."""
        for writer in list(self._writers):
            writer.close()

    def blackhole(self, on: bool) -> None:
        """Swallow every byte while ``on`` (no error, no answer: silent loss); when
        turned off, the connections that lost bytes are reset, as a timeout would."""
        self.blackholed = on
        if not on:
            self.cut_all()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._links):
            task.cancel()
        for task in list(self._links):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _connect_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        host, target = self._upstream
        if host == "unix":
            return await asyncio.open_unix_connection(str(target))
        return await asyncio.open_connection(host, int(target))

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await self._connect_upstream()
        except OSError:  # the database is down (restarting): refuse this client
            writer.close()
            return
        self._writers.update((writer, up_writer))
        doomed = asyncio.Event()

        async def client_to_server() -> None:
            while data := await reader.read(65536):
                if self._trigger is not None and self._trigger(data):
                    self._trigger = None
                    doomed.set()
                if self.blackholed:
                    continue
                if self.delay:
                    await asyncio.sleep(self.delay)
                up_writer.write(data)
                await up_writer.drain()

        async def server_to_client() -> None:
            while data := await up_reader.read(65536):
                if doomed.is_set():
                    break
                if self._hold is not None and self._hold(data):
                    self._hold = None
                    self.holding.set()
                    await self._let_through.wait()
                if self.blackholed:
                    continue
                if self.delay:
                    await asyncio.sleep(self.delay)
                writer.write(data)
                await writer.drain()

        tasks = [
            asyncio.create_task(client_to_server()),
            asyncio.create_task(server_to_client()),
        ]
        self._links.update(tasks)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
                self._links.discard(task)
            for w in (writer, up_writer):
                w.close()
                self._writers.discard(w)
            if doomed.is_set():
                self.cut.set()
