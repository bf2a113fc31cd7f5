"""An application's own transaction, the same way on every driver the SDK joins.

``open_business(mode, dsn)`` gives a :class:`Business`: ``handle`` is what the
application passes as ``connection=`` (an asyncpg or psycopg connection, a
SQLAlchemy session or connection), ``write(order_id)`` is the business write
(through the ORM unit of work for the SQLAlchemy sessions: added, not
flushed), ``commit()`` / ``rollback()`` end the transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import asyncpg
import psycopg
from sqlalchemy import String, create_engine, text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

MODES = [
    "asyncpg",
    "psycopg-async",
    "psycopg-sync",
    "sqlalchemy-async-asyncpg",
    "sqlalchemy-async-psycopg",
    "sqlalchemy-sync",
]
ORDERS = "app_orders"
ENQUEUE_DOLLAR = "SELECT pgqueue.enqueue($1, 'orders', 'sql', $2::json, $3::jsonb)"
ENQUEUE_PERCENT = "SELECT pgqueue.enqueue(%s, 'orders', 'sql', %s::json, %s::jsonb)"
ENQUEUE_NAMED = text(
    "SELECT pgqueue.enqueue(:ns, 'orders', 'sql', CAST(:data AS json), CAST(:opts AS jsonb))"
)
CREATE_ORDERS = f"CREATE TABLE IF NOT EXISTS {ORDERS} (id text PRIMARY KEY, note text)"


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = ORDERS
    id: Mapped[str] = mapped_column(String, primary_key=True)
    note: Mapped[str] = mapped_column(String)


def sqlalchemy_url(dsn: str, driver: str) -> str:
    _scheme, rest = dsn.split("://", 1)
    return f"postgresql+{driver}://{rest}"


@dataclass
class Business:
    handle: Any
    write: Callable[[str], Awaitable[None]]
    commit: Callable[[], Awaitable[None]]
    rollback: Callable[[], Awaitable[None]]
    enqueue: Callable[[str, str, str], Awaitable[str]]
    """``pgqueue.enqueue(namespace, 'orders', name, data, opts)`` in this transaction."""


@contextlib.asynccontextmanager
async def open_business(mode: str, dsn: str) -> AsyncIterator[Business]:
    insert = f"INSERT INTO {ORDERS} VALUES ($1, 'placed')"
    if mode == "asyncpg":
        conn = await asyncpg.connect(dsn)
        tx = conn.transaction()
        await tx.start()

        async def write_asyncpg(order_id: str) -> None:
            await conn.execute(insert, order_id)

        async def enqueue_asyncpg(ns: str, data: str, opts: str) -> str:
            result: str = await conn.fetchval(ENQUEUE_DOLLAR, ns, data, opts)
            return result

        try:
            yield Business(conn, write_asyncpg, tx.commit, tx.rollback, enqueue_asyncpg)
        finally:
            await conn.close()
    elif mode == "psycopg-async":
        aconn = await psycopg.AsyncConnection.connect(dsn)

        async def write_psycopg_async(order_id: str) -> None:
            await aconn.execute(f"INSERT INTO {ORDERS} VALUES (%s, 'placed')", (order_id,))

        async def enqueue_psycopg_async(ns: str, data: str, opts: str) -> str:
            cur = await aconn.execute(ENQUEUE_PERCENT, (ns, data, opts))
            row = await cur.fetchone()
            assert row is not None
            return str(row[0])

        try:
            yield Business(
                aconn, write_psycopg_async, aconn.commit, aconn.rollback, enqueue_psycopg_async
            )
        finally:
            await aconn.close()
    elif mode == "psycopg-sync":
        sconn = await asyncio.to_thread(psycopg.connect, dsn)

        async def write_psycopg_sync(order_id: str) -> None:
            await asyncio.to_thread(
                sconn.execute, f"INSERT INTO {ORDERS} VALUES (%s, 'placed')", (order_id,)
            )

        def enqueue_psycopg_sync(ns: str, data: str, opts: str) -> str:
            row = sconn.execute(ENQUEUE_PERCENT, (ns, data, opts)).fetchone()
            assert row is not None
            return str(row[0])

        try:
            yield Business(
                sconn,
                write_psycopg_sync,
                lambda: asyncio.to_thread(sconn.commit),
                lambda: asyncio.to_thread(sconn.rollback),
                lambda *args: asyncio.to_thread(enqueue_psycopg_sync, *args),
            )
        finally:
            await asyncio.to_thread(sconn.close)
    elif mode.startswith("sqlalchemy-async"):
        engine = create_async_engine(sqlalchemy_url(dsn, mode.rsplit("-", 1)[1]))
        session = AsyncSession(engine)

        async def write_orm_async(order_id: str) -> None:
            session.add(Order(id=order_id, note="placed"))  # flushed at commit

        async def enqueue_orm_async(ns: str, data: str, opts: str) -> str:
            params = {"ns": ns, "data": data, "opts": opts}
            return str(await session.scalar(ENQUEUE_NAMED, params))

        try:
            yield Business(
                session, write_orm_async, session.commit, session.rollback, enqueue_orm_async
            )
        finally:
            await session.close()
            await engine.dispose()
    elif mode == "sqlalchemy-sync":
        sync_engine = create_engine(sqlalchemy_url(dsn, "psycopg"))
        sync_session = Session(sync_engine)

        async def write_orm_sync(order_id: str) -> None:
            sync_session.add(Order(id=order_id, note="placed"))

        def enqueue_orm_sync(ns: str, data: str, opts: str) -> str:
            params = {"ns": ns, "data": data, "opts": opts}
            return str(sync_session.scalar(ENQUEUE_NAMED, params))

        try:
            yield Business(
                sync_session,
                write_orm_sync,
                lambda: asyncio.to_thread(sync_session.commit),
                lambda: asyncio.to_thread(sync_session.rollback),
                lambda *args: asyncio.to_thread(enqueue_orm_sync, *args),
            )
        finally:
            await asyncio.to_thread(sync_session.close)
            await asyncio.to_thread(sync_engine.dispose)
    else:  # pragma: no cover
        raise ValueError(mode)
