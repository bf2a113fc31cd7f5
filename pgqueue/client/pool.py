"""The TCP transport's connection pool: a few pipelined connections over the brokers.

``size`` slots (4 by default) each keep one :class:`~pgqueue.client.connection.Connection`
open.  Slots start on the listed brokers in turn, so the load spreads over
them; a request goes to the least loaded live connection (fewest requests in
flight).  A slot whose connection drops reconnects at once to the next broker
in the rotation; a broker that refused a connection is skipped for a while
(its own capped backoff), so a dead broker costs nothing once noticed.  When
a whole round fails, the slot waits with capped exponential backoff and jitter
(100 ms doubling to 5 s, each wait drawn from its upper half) and tries again,
forever: the pool recovers by itself when a broker returns.

What a request that lost its connection raises (:meth:`ConnectionPool.request`):

- ``retry=True`` (idempotent reads, and pushes whose every job has a custom id):
  sent once more on another connection (to another broker when one is
  connected), transparently;
- ``commit_unknown=True`` (pushes): :class:`~pgqueue.errors.IndeterminateCommit`
  — the broker may have committed it; also on a timeout;
- otherwise :class:`~pgqueue.errors.ConnectionLost` (retryable by the caller).

When no broker is reachable, a request waits up to its timeout for a
connection, then fails with :class:`~pgqueue.errors.ConnectionLost` (it was
never sent).  A request that times out makes the pool ping that connection;
one that does not answer the ping is dropped and replaced.

**Liveness.**  A broker that is paused (SIGSTOP), hung or cut off behind a
black hole keeps the connection open, so only silence tells.  When the
requests in flight on a connection have heard nothing for half of
``liveness_timeout`` (10 s by default), the pool pings it; a ping without an
answer in the other half drops the connection.  Its requests then end as
above, well before their own timeout: sent again on another broker's
connection when retrying is safe, indeterminate pushes, lost otherwise.  A
broker that is merely slow answers the ping (the broker serves the frames of
one connection concurrently, and a Ping takes no slot of its in-flight window),
so a long poll or a slow command is left alone.

:attr:`ConnectionPool.frames` counts the frames sent per command.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pgqueue.client.connection import Connection, LateAnswer
from pgqueue.errors import (
    AuthError,
    CommandTimeout,
    ConnectionLost,
    IndeterminateCommit,
    PgQueueError,
)

__all__ = ["Address", "Backoff", "ConnectionPool", "Opener"]

log = logging.getLogger("pgqueue.client")

Address = tuple[str, int]
Opener = Callable[..., Awaitable[Connection]]

PROBE_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class Backoff:
    """Capped exponential backoff with jitter: ``initial * 2^(n-1)`` up to ``maximum``,
    each wait drawn uniformly from the upper half of that value."""

    initial: float = 0.1
    maximum: float = 5.0

    def delay(self, failures: int, rand: Callable[[], float] = random.random) -> float:
        """The wait after ``failures`` (>= 1) consecutive failures, in seconds."""
        base = min(self.maximum, self.initial * 2.0 ** max(0, min(failures - 1, 30)))
        return base * (0.5 + rand() / 2)


def _name(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ConnectionPool:
    """Pipelined connections to a set of brokers (see the module docstring)."""

    def __init__(
        self,
        addresses: Sequence[Address],
        *,
        token: str | None = None,
        size: int = 4,
        request_timeout: float = 30.0,
        connect_timeout: float = 5.0,
        liveness_timeout: float = 10.0,
        backoff: Backoff = Backoff(),
        opener: Opener = Connection.open,
    ) -> None:
        if not addresses:
            raise ValueError("a pool needs at least one broker address")
        self.addresses = tuple(addresses)
        self.token = token
        self.size = size
        self.request_timeout = request_timeout
        self.connect_timeout = connect_timeout
        self.liveness_timeout = liveness_timeout
        self.backoff = backoff
        self.frames: Counter[str] = Counter()
        self.last_error: PgQueueError | None = None
        self._opener = opener
        self._slots: list[Connection | None] = [None] * size
        self._keepers: list[asyncio.Task[None]] = []
        self._probes: set[asyncio.Task[None]] = set()
        self._live = asyncio.Event()
        self._rotation = itertools.count()
        self._pick = itertools.count()
        self._down_until: dict[Address, float] = {}
        self._failures: Counter[Address] = Counter()
        self._closing = False

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Connect the first slot (raise if no broker answers), then the others."""
        self._slots[0] = await self.connect_any()
        self._refresh_live()
        self._keepers = [
            asyncio.create_task(self._keep(i), name=f"pgqueue:pool:{i}") for i in range(self.size)
        ]

    async def close(self) -> None:
        self._closing = True
        tasks = [*self._keepers, *self._probes]
        while pending := [task for task in tasks if not task.done()]:
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=1.0)
        self._keepers.clear()
        for i, conn in enumerate(self._slots):
            if conn is not None:
                await conn.close()
            self._slots[i] = None
        self._live.clear()

    @property
    def connections(self) -> list[Connection]:
        """The live connections."""
        return [c for c in self._slots if c is not None and not c.closed.is_set()]

    # -- connecting -------------------------------------------------------------

    async def connect_any(self) -> Connection:
        """A new connection to the next reachable broker in the rotation.

        Brokers that refused recently are tried last; raises the last
        :class:`ConnectionLost` when none answers, :class:`AuthError` at once
        when a broker refuses the token.
        """
        loop = asyncio.get_running_loop()
        start = next(self._rotation)
        ordered = [
            self.addresses[(start + i) % len(self.addresses)] for i in range(len(self.addresses))
        ]
        now = loop.time()
        ordered.sort(key=lambda a: self._down_until.get(a, 0.0) > now)
        error: PgQueueError = ConnectionLost("no broker address to try")
        for address in ordered:
            host, port = address
            try:
                conn = await self._opener(
                    host, port, token=self.token, timeout=self.connect_timeout, probe=True
                )
            except AuthError as exc:
                self.last_error = exc
                raise
            except ConnectionLost as exc:
                self._failures[address] += 1
                self._down_until[address] = loop.time() + self.backoff.delay(
                    self._failures[address]
                )
                error = exc
                continue
            self._failures.pop(address, None)
            self._down_until.pop(address, None)
            return conn
        self.last_error = error
        raise error

    async def _keep(self, slot: int) -> None:
        """Keep one slot connected, forever (until the pool closes)."""
        failures = 0
        while not self._closing:
            conn = self._slots[slot]
            if conn is None or conn.closed.is_set():
                try:
                    conn = await self.connect_any()
                except PgQueueError:  # none reachable, or a token refused: keep trying
                    failures += 1
                    await asyncio.sleep(self.backoff.delay(failures))
                    continue
                failures = 0
                if self._closing:  # closed meanwhile
                    await conn.close()
                    return
                self._slots[slot] = conn
                self._refresh_live()
            watchdog = asyncio.create_task(self._watch(conn), name=f"pgqueue:pool:watch:{slot}")
            try:
                await conn.closed.wait()
            finally:
                watchdog.cancel()
                await asyncio.wait([watchdog])
            self._slots[slot] = None
            self._refresh_live()
            if not self._closing:
                log.warning("connection to broker %s lost; reconnecting", conn.address)
                await conn.close()

    async def _watch(self, conn: Connection) -> None:
        """The liveness check of one connection (see the module docstring)."""
        half = self.liveness_timeout / 2
        while not conn.closed.is_set():
            silent = conn.silent_for()
            if silent < half:
                await asyncio.sleep(max(0.01, half - silent) if conn.in_flight else half / 2)
                continue
            self.frames["Ping"] += 1
            try:
                await conn.request({"cmd": "Ping"}, timeout=half)
            except CommandTimeout:
                log.warning(
                    "broker %s has not answered for %.1fs; dropping the connection",
                    conn.address,
                    silent + half,
                )
                conn.abort()
                return
            except PgQueueError:  # closed meanwhile
                return

    def _refresh_live(self) -> None:
        if self.connections:
            self._live.set()
        else:
            self._live.clear()

    # -- requests ---------------------------------------------------------------

    async def _acquire(self, deadline: float, avoid: str | None = None) -> Connection:
        """The least loaded live connection (ties taken in turn), one to another broker
        than ``avoid`` when there is one; waits for one until ``deadline``."""
        loop = asyncio.get_running_loop()
        while True:
            live = self.connections
            elsewhere = [c for c in live if c.address != avoid]
            live = elsewhere or live
            if live:
                shift = next(self._pick) % len(live)
                return min(live[shift:] + live[:shift], key=lambda c: c.in_flight)
            remaining = deadline - loop.time()
            if remaining <= 0 or self._closing:
                raise ConnectionLost(self._unreachable())
            self._refresh_live()
            try:
                async with asyncio.timeout(remaining):
                    await self._live.wait()
            except TimeoutError:
                raise ConnectionLost(self._unreachable()) from None

    def _unreachable(self) -> str:
        brokers = ", ".join(_name(a) for a in self.addresses)
        last = f" (last error: {self.last_error.message})" if self.last_error else ""
        return f"no broker reachable ({brokers}){last}; the request was not sent"

    async def request(
        self,
        message: dict[str, Any],
        *,
        timeout: float | None = None,
        retry: bool = False,
        commit_unknown: bool = False,
        on_late: LateAnswer | None = None,
    ) -> dict[str, Any]:
        """Send one command map on the least loaded connection; return the raw answer
        (``on_late`` gets an answer that comes after this call gave up)."""
        loop = asyncio.get_running_loop()
        cmd = str(message.get("cmd"))
        deadline = loop.time() + (self.request_timeout if timeout is None else timeout)
        conn = await self._acquire(deadline)
        lost: ConnectionLost | None = None
        for attempt in range(2 if retry else 1):
            if attempt:
                log.info("%s lost with %s; sending it again", cmd, conn.address)
                try:
                    # the lost one is closed; its broker's other connections may be
                    # as mute as it was: another broker's, if there is one
                    conn = await self._acquire(deadline, avoid=conn.address)
                except ConnectionLost as exc:  # the first one was sent, though
                    raise self._lost(cmd, conn, commit_unknown) from exc
            self.frames[cmd] += 1
            try:
                return await conn.request(
                    message, timeout=max(0.001, deadline - loop.time()), on_late=on_late
                )
            except ConnectionLost as exc:
                lost = exc
                continue
            except CommandTimeout as exc:
                self._probe(conn)
                if commit_unknown:
                    raise IndeterminateCommit(
                        f"{cmd} got no answer from broker {conn.address} in time; the jobs may "
                        "have been committed (re-push with the same custom id to be safe)"
                    ) from exc
                raise
        raise self._lost(cmd, conn, commit_unknown) from lost

    @staticmethod
    def _lost(cmd: str, conn: Connection, commit_unknown: bool) -> PgQueueError:
        """The error for a request whose connection broke after it was sent."""
        if commit_unknown:
            return IndeterminateCommit(
                f"the connection to broker {conn.address} broke after {cmd} was sent; "
                "the jobs may have been committed (re-push with the same custom id to be safe)"
            )
        return ConnectionLost(f"connection to {conn.address} lost before the answer to {cmd}")

    def _probe(self, conn: Connection) -> None:
        """Ping a connection that let a request time out; drop it if it is mute."""

        async def probe() -> None:
            try:
                await conn.request(
                    {"cmd": "Ping"}, timeout=min(PROBE_TIMEOUT, self.connect_timeout)
                )
            except CommandTimeout:
                log.warning("broker %s does not answer; dropping the connection", conn.address)
                conn.abort()
            except PgQueueError:
                pass

        self.frames["Ping"] += 1
        task = asyncio.create_task(probe(), name="pgqueue:pool:probe")
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)
