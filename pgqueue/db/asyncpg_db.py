"""The asyncpg implementation of :class:`~pgqueue.db.executor.Database`.

Brokers and the async SDK use it: binary protocol, prepared statements cached
per connection (asyncpg's statement cache), ``jsonb`` passed through as text so
that JSON is encoded and decoded exactly once, by pgqueue.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, cast

import asyncpg

from pgqueue.db.errormap import translating
from pgqueue.db.executor import Executor, Listener, Notification, Row
from pgqueue.db.inbox import NotificationInbox
from pgqueue.db.queries import Query
from pgqueue.errors import DatabaseUnavailable

__all__ = ["AsyncpgDatabase", "connect_asyncpg"]


async def _init_connection(conn: asyncpg.Connection) -> None:
    for type_name in ("jsonb", "json"):
        await conn.set_type_codec(
            type_name,
            encoder=_identity,
            decoder=_identity,
            schema="pg_catalog",
            format="text",
        )


def _identity(value: str) -> str:
    return value


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool reset: nothing to send.

    pgqueue never leaves session state on a pooled connection (no SET, LISTEN,
    advisory lock or cursor; transactions always end in their block, and
    asyncpg rolls back a stray one before calling this).  asyncpg's default reset
    would send ``RESET ALL; UNLISTEN *; ...`` on every release: one more round
    trip for every statement.
    """


class ConnectionExecutor:
    """Runs queries on one connection (inside a transaction)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn

    async def fetch(self, query: Query, /, *args: Any, **params: Any) -> list[Row]:
        with translating(write_sent=False):
            rows = await self._conn.fetch(query.sql, *query.arguments(args, params))
            return cast(list[Row], rows)

    async def fetchrow(self, query: Query, /, *args: Any, **params: Any) -> Row | None:
        with translating(write_sent=False):
            row = await self._conn.fetchrow(query.sql, *query.arguments(args, params))
            return cast(Row | None, row)

    async def fetchval(self, query: Query, /, *args: Any, **params: Any) -> Any:
        with translating(write_sent=False):
            return await self._conn.fetchval(query.sql, *query.arguments(args, params))

    async def execute(self, query: Query, /, *args: Any, **params: Any) -> None:
        with translating(write_sent=False):
            await self._conn.execute(query.sql, *query.arguments(args, params))


class _AsyncpgListener:
    def __init__(self, conn: asyncpg.Connection) -> None:
        self._conn = conn
        self._inbox = NotificationInbox()

    def on_notify(self, _conn: object, _pid: int, channel: str, payload: str) -> None:
        self._inbox.put(channel, payload)

    def on_terminate(self, _conn: object) -> None:
        self._inbox.close()

    async def get(self) -> Notification:
        return await self._inbox.get()

    async def ping(self) -> None:
        if self._conn.is_closed():
            self._inbox.close()
            raise DatabaseUnavailable("the LISTEN connection closed")
        try:
            with translating(write_sent=False):
                await asyncio.wait_for(self._conn.fetchval("SELECT 1"), timeout=5)
        except Exception as exc:
            self._inbox.close()
            if isinstance(exc, DatabaseUnavailable):
                raise
            # e.g. asyncpg's InternalClientError when the server killed the connection
            raise DatabaseUnavailable(f"the LISTEN connection failed: {exc!r}") from exc


def _closed(conn: asyncpg.Connection) -> bool:
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:  # the pool took it back when it closed
        return True


EXPRESS_STATEMENTS = 1_000
"""Statements the express connection runs before it goes back through the pool's
release (its checks: the connection's query budget, an expired generation)."""


class AsyncpgDatabase:
    """A pool of asyncpg connections.

    Autocommit statements take the *express* connection when it is free: a pool
    connection kept after a statement while nobody waits for the pool, so that a
    caller issuing one statement after the other (a sequential push) skips the
    pool's acquire and release (their timeout scopes, the inactivity timer, the task
    that shields the release): some 25 µs of client CPU per statement.  It goes back
    to the pool as soon as anyone waits there, on any error or cancellation (exactly
    where ``Pool.fetch`` releases), every :data:`EXPRESS_STATEMENTS` statements, and
    at close; a transaction that finds it free takes it.  A connection that closed
    while kept is handed back (the pool replaces it) before any statement is sent.
    """

    def __init__(self, dsn: str, pool: asyncpg.Pool, connect_kwargs: Mapping[str, Any]) -> None:
        self.dsn = dsn
        self._pool = pool
        self._connect_kwargs = dict(connect_kwargs)
        self._express: asyncpg.Connection | None = None
        self._express_statements = 0
        self._pool_waiters = 0
        self._closing = False

    async def fetch(self, query: Query, /, *args: Any, **params: Any) -> list[Row]:
        with translating(write_sent=query.writes):
            rows = await self._run("fetch", query.sql, query.arguments(args, params))
            return cast(list[Row], rows)

    async def fetchrow(self, query: Query, /, *args: Any, **params: Any) -> Row | None:
        with translating(write_sent=query.writes):
            row = await self._run("fetchrow", query.sql, query.arguments(args, params))
            return cast(Row | None, row)

    async def fetchval(self, query: Query, /, *args: Any, **params: Any) -> Any:
        with translating(write_sent=query.writes):
            return await self._run("fetchval", query.sql, query.arguments(args, params))

    async def execute(self, query: Query, /, *args: Any, **params: Any) -> None:
        with translating(write_sent=query.writes):
            await self._run("execute", query.sql, query.arguments(args, params))

    async def _run(self, method: str, sql: str, args: tuple[Any, ...]) -> Any:
        """One autocommit statement: on the express connection, or on one from the pool."""
        conn = await self._take_express()
        if conn is None:
            conn = await self._acquire()
        try:
            result = await getattr(conn, method)(sql, *args)
        except BaseException:
            await self._pool.release(conn)
            raise
        self._express_statements += 1
        if (
            self._express is None
            and not self._pool_waiters
            and not self._closing
            and self._express_statements < EXPRESS_STATEMENTS
        ):
            self._express = conn  # kept: nobody waits for it
        else:
            self._express_statements = 0
            await self._pool.release(conn)
        return result

    async def _take_express(self) -> asyncpg.Connection | None:
        """The express connection, now the caller's (None: it is in use, or there is none)."""
        conn, self._express = self._express, None
        if conn is not None and _closed(conn):
            await self._pool.release(conn)  # closed while kept: the pool replaces it
            return None
        return conn

    async def _acquire(self) -> asyncpg.Connection:
        self._pool_waiters += 1
        try:
            return await self._pool.acquire()
        finally:
            self._pool_waiters -= 1

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Executor]:
        with translating(write_sent=False):
            conn = await self._take_express() or await self._acquire()
        try:
            tx = conn.transaction()
            with translating(write_sent=False):
                await tx.start()
            try:
                yield ConnectionExecutor(conn)
            except BaseException:
                # A dead connection is detached from its pool proxy: is_closed() raises.
                with contextlib.suppress(Exception):
                    if not conn.is_closed():
                        await tx.rollback()
                raise
            with translating(write_sent=True):
                await tx.commit()
        finally:
            with contextlib.suppress(Exception):
                await self._pool.release(conn)

    @contextlib.asynccontextmanager
    async def listen(self, channels: Sequence[str]) -> AsyncIterator[Listener]:
        with translating(write_sent=False):
            conn = await asyncpg.connect(self.dsn, **self._connect_kwargs)
        listener = _AsyncpgListener(conn)
        try:
            conn.add_termination_listener(listener.on_terminate)
            with translating(write_sent=False):
                for channel in channels:
                    await conn.add_listener(channel, listener.on_notify)
            yield listener
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), timeout=2)
            if not conn.is_closed():
                conn.terminate()

    async def close(self) -> None:
        self._closing = True
        with contextlib.suppress(Exception):
            conn = await self._take_express()
            if conn is not None:
                await self._pool.release(conn)
        try:
            await asyncio.wait_for(self._pool.close(), timeout=10)
        except TimeoutError:
            self._pool.terminate()


async def connect_asyncpg(
    dsn: str,
    *,
    min_size: int = 2,
    max_size: int = 10,
    application_name: str = "pgqueue",
    server_settings: Mapping[str, str] | None = None,
    statement_cache_size: int = 256,
) -> AsyncpgDatabase:
    """Open a pool.  Every connection commits synchronously (G1)."""
    settings = {"application_name": application_name[:63], "synchronous_commit": "on"}
    settings.update(server_settings or {})
    connect_kwargs: dict[str, Any] = {
        "server_settings": settings,
        "statement_cache_size": statement_cache_size,
    }
    with translating(write_sent=False):
        try:
            pool = await asyncpg.create_pool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                init=_init_connection,
                reset=_keep_session,
                **connect_kwargs,
            )
        except (TimeoutError, OSError) as exc:
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
    assert pool is not None
    return AsyncpgDatabase(dsn, pool, connect_kwargs)
