"""The psycopg 3 implementation of :class:`~pgqueue.db.executor.Database`.

Used by tooling and by code that already lives on psycopg; it runs the same
named queries (rewritten once to ``%(pN)s`` placeholders) and passes the same
conformance suite as the asyncpg implementation.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, cast

import psycopg
from psycopg.rows import dict_row
from psycopg.types.string import TextLoader
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from pgqueue.db.errormap import translating
from pgqueue.db.executor import Executor, Listener, Notification, Row
from pgqueue.db.inbox import NotificationInbox
from pgqueue.db.queries import Query
from pgqueue.errors import DatabaseUnavailable

__all__ = ["PsycopgDatabase", "connect_psycopg"]


def _params(args: tuple[Any, ...]) -> dict[str, Any]:
    return {f"p{i}": value for i, value in enumerate(args, start=1)}


def _configure_adapters(conn: psycopg.AsyncConnection[Any] | psycopg.AsyncCursor[Any]) -> None:
    conn.adapters.register_loader("jsonb", TextLoader)
    conn.adapters.register_loader("json", TextLoader)


class ConnectionExecutor:
    __slots__ = ("_conn", "_write_sent")

    def __init__(self, conn: psycopg.AsyncConnection[Any], *, autocommit: bool) -> None:
        self._conn = conn
        self._write_sent = autocommit

    async def fetch(self, query: Query, /, *args: Any, **params: Any) -> list[Row]:
        with translating(write_sent=self._write_sent and query.writes):
            # Dict rows and JSON as text whatever the connection's own settings
            # (it may be an application's connection: transactional enqueue).
            cur = self._conn.cursor(row_factory=dict_row)
            _configure_adapters(cur)
            await cur.execute(query.psycopg_sql, _params(query.arguments(args, params)))
            if cur.description is None:
                return []
            return cast(list[Row], await cur.fetchall())

    async def fetchrow(self, query: Query, /, *args: Any, **params: Any) -> Row | None:
        rows = await self.fetch(query, *args, **params)
        return rows[0] if rows else None

    async def fetchval(self, query: Query, /, *args: Any, **params: Any) -> Any:
        row = await self.fetchrow(query, *args, **params)
        if row is None:
            return None
        return next(iter(cast(Mapping[str, Any], row).values()))

    async def execute(self, query: Query, /, *args: Any, **params: Any) -> None:
        with translating(write_sent=self._write_sent and query.writes):
            await self._conn.execute(query.psycopg_sql, _params(query.arguments(args, params)))


class _PsycopgListener:
    """Reads ``conn.notifies()`` in a task of its own into a queue (cancel-safe ``get``)."""

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._conn = conn
        self._inbox = NotificationInbox()
        self._reader = asyncio.create_task(self._read(), name="pgqueue:psycopg-listen")

    async def _read(self) -> None:
        try:
            async for notify in self._conn.notifies():
                self._inbox.put(notify.channel, notify.payload)
        except Exception:  # the connection broke: get() reports it
            pass
        finally:
            self._inbox.close()

    async def get(self) -> Notification:
        return await self._inbox.get()

    async def ping(self) -> None:
        if self._conn.closed or self._reader.done():
            raise DatabaseUnavailable("the LISTEN connection closed")

    async def aclose(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader


class PsycopgDatabase:
    """A pool of psycopg async connections in autocommit mode."""

    def __init__(self, dsn: str, pool: AsyncConnectionPool[Any], settings: Mapping[str, str]):
        self.dsn = dsn
        self._pool = pool
        self._settings = dict(settings)

    async def fetch(self, query: Query, /, *args: Any, **params: Any) -> list[Row]:
        async with self._connection() as conn:
            return await ConnectionExecutor(conn, autocommit=True).fetch(query, *args, **params)

    async def fetchrow(self, query: Query, /, *args: Any, **params: Any) -> Row | None:
        async with self._connection() as conn:
            return await ConnectionExecutor(conn, autocommit=True).fetchrow(query, *args, **params)

    async def fetchval(self, query: Query, /, *args: Any, **params: Any) -> Any:
        async with self._connection() as conn:
            return await ConnectionExecutor(conn, autocommit=True).fetchval(query, *args, **params)

    async def execute(self, query: Query, /, *args: Any, **params: Any) -> None:
        async with self._connection() as conn:
            await ConnectionExecutor(conn, autocommit=True).execute(query, *args, **params)

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        with translating(write_sent=False):
            async with self._pool.connection() as conn:
                yield conn

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Executor]:
        async with self._connection() as conn:
            with translating(write_sent=False):
                await conn.execute("BEGIN")
            try:
                yield ConnectionExecutor(conn, autocommit=False)
            except BaseException:
                with contextlib.suppress(Exception):
                    await conn.execute("ROLLBACK")
                raise
            with translating(write_sent=True):
                await conn.execute("COMMIT")

    @contextlib.asynccontextmanager
    async def listen(self, channels: Sequence[str]) -> AsyncIterator[Listener]:
        with translating(write_sent=False):
            conn = await psycopg.AsyncConnection.connect(
                self.dsn, autocommit=True, options=_options(self._settings)
            )
        try:
            with translating(write_sent=False):
                for channel in channels:
                    await conn.execute(f'LISTEN "{channel}"')
            listener = _PsycopgListener(conn)
            try:
                yield listener
            finally:
                await listener.aclose()
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), timeout=2)

    async def close(self) -> None:
        await self._pool.close(timeout=10)


def _options(settings: Mapping[str, str]) -> str:
    return " ".join(f"-c {key}={value}" for key, value in settings.items())


async def connect_psycopg(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    application_name: str = "pgqueue",
    server_settings: Mapping[str, str] | None = None,
) -> PsycopgDatabase:
    """Open a pool of psycopg connections (autocommit, dict rows, jsonb as text)."""
    settings = {"synchronous_commit": "on"}
    settings.update(server_settings or {})

    async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
        _configure_adapters(conn)

    try:  # fail at once when the server refuses, as connect_asyncpg does
        probe = await psycopg.AsyncConnection.connect(dsn, connect_timeout=15)
    except (psycopg.Error, OSError) as exc:
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
    await probe.close()
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        open=False,
        configure=configure,
        kwargs={
            "autocommit": True,
            "row_factory": dict_row,
            "application_name": application_name[:63],
            "options": _options(settings),
        },
    )
    try:
        await pool.open(wait=True, timeout=15)
    except BaseException as exc:  # a timeout, or the caller cancelled: never leak the pool
        await pool.close()
        if isinstance(exc, PoolTimeout):
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
        raise
    return PsycopgDatabase(dsn, pool, settings)
