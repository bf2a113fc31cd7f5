"""Executors over a connection the application owns (transactional enqueue/complete).

The statements then run in the caller's open transaction and commit or roll
back with it; pgqueue neither begins nor ends that transaction.  Accepted:

- an asyncpg ``Connection`` (or pool connection) inside ``conn.transaction()``;
- a psycopg ``AsyncConnection`` or ``Connection`` (not in autocommit, or
  inside ``conn.transaction()``); a sync connection runs in a worker thread,
  so the event loop is not blocked;
- a SQLAlchemy ``AsyncSession`` / ``AsyncConnection`` (asyncpg or psycopg
  dialect) or ``Session`` / ``Connection`` (psycopg dialect): the statements
  run on the session's own connection, in its transaction (begun if it was
  not yet), so they commit with ``session.commit()`` and vanish on rollback.

A connection with no transaction to join (autocommit) is refused: the
admission's statements would each commit on their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, cast

from pgqueue.db.errormap import translating
from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Query
from pgqueue.errors import ConfigError

__all__ = ["SyncPsycopgExecutor", "executor_for_connection"]

NO_TRANSACTION = (
    "connection= needs an open transaction to join (asyncpg: inside "
    "conn.transaction(); psycopg: not in autocommit, or inside conn.transaction(); "
    "SQLAlchemy: not with isolation_level='AUTOCOMMIT')"
)


def _refused(connection: object) -> ConfigError:
    return ConfigError(
        "connection must be an asyncpg Connection, a psycopg Connection or "
        "AsyncConnection, or a SQLAlchemy Session, AsyncSession, Connection or "
        f"AsyncConnection on one of them, not {type(connection).__name__}"
    )


async def executor_for_connection(connection: Any) -> Executor:
    """An executor that runs in ``connection``'s open transaction."""
    module = type(connection).__module__
    if module.startswith("sqlalchemy"):
        return await _sqlalchemy_executor(connection)
    return _driver_executor(connection)


def _driver_executor(connection: Any) -> Executor:
    module = type(connection).__module__
    if module.startswith("asyncpg"):
        from pgqueue.db.asyncpg_db import ConnectionExecutor as AsyncpgExecutor

        if not connection.is_in_transaction():
            raise ConfigError(NO_TRANSACTION)
        return AsyncpgExecutor(connection)
    if module.startswith("psycopg"):
        import psycopg

        if connection.autocommit and (
            connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        ):
            raise ConfigError(NO_TRANSACTION)
        if isinstance(connection, psycopg.AsyncConnection):
            from pgqueue.db.psycopg_db import ConnectionExecutor as PsycopgExecutor

            return PsycopgExecutor(connection, autocommit=False)
        if isinstance(connection, psycopg.Connection):
            return SyncPsycopgExecutor(connection)
    raise _refused(connection)


async def _sqlalchemy_executor(connection: Any) -> Executor:
    from sqlalchemy.engine import Connection
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
    from sqlalchemy.orm import Session

    if isinstance(connection, AsyncSession):
        connection = await connection.connection()
    if isinstance(connection, AsyncConnection):
        if not connection.in_transaction():
            await connection.begin()
        raw = await connection.get_raw_connection()
        driver = raw.driver_connection
        if not _driver_in_transaction(driver):
            # The asyncpg dialect sends BEGIN with the first statement it runs.
            await connection.exec_driver_sql("SELECT 1")
        return _driver_executor(driver)
    if isinstance(connection, Session | Connection):
        driver = await asyncio.to_thread(_sync_driver, connection)
        return _driver_executor(driver)
    raise _refused(connection)


def _sync_driver(connection: Any) -> Any:
    from sqlalchemy.orm import Session

    if isinstance(connection, Session):
        connection = connection.connection()
    if not connection.in_transaction():
        connection.begin()
    return connection.connection.driver_connection


def _driver_in_transaction(driver: Any) -> bool:
    is_in_transaction = getattr(driver, "is_in_transaction", None)  # asyncpg
    if is_in_transaction is not None:
        return bool(is_in_transaction())
    return True  # psycopg begins by itself unless in autocommit (checked next)


class SyncPsycopgExecutor:
    """Named queries on a sync psycopg ``Connection``, each run in a worker thread."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def _run(self, query: Query, args: tuple[Any, ...], params: dict[str, Any]) -> list[Row]:
        from psycopg.rows import dict_row
        from psycopg.types.string import TextLoader

        values = query.arguments(args, params)
        with translating(write_sent=False):
            cur = self._conn.cursor(row_factory=dict_row)
            cur.adapters.register_loader("jsonb", TextLoader)
            cur.adapters.register_loader("json", TextLoader)
            cur.execute(query.psycopg_sql, {f"p{i}": v for i, v in enumerate(values, start=1)})
            if cur.description is None:
                return []
            return cast(list[Row], cur.fetchall())

    async def fetch(self, query: Query, /, *args: Any, **params: Any) -> list[Row]:
        return await asyncio.to_thread(self._run, query, args, params)

    async def fetchrow(self, query: Query, /, *args: Any, **params: Any) -> Row | None:
        rows = await self.fetch(query, *args, **params)
        return rows[0] if rows else None

    async def fetchval(self, query: Query, /, *args: Any, **params: Any) -> Any:
        row = await self.fetchrow(query, *args, **params)
        return None if row is None else next(iter(cast(Mapping[str, Any], row).values()))

    async def execute(self, query: Query, /, *args: Any, **params: Any) -> None:
        await self.fetch(query, *args, **params)
