"""The narrow storage seam: what the engine needs from a PostgreSQL driver.

Two implementations exist, :mod:`pgqueue.db.asyncpg_db` (brokers, the async
SDK) and :mod:`pgqueue.db.psycopg_db` (tooling, the sync SDK); one
conformance suite runs against both.  Internal API: it may change at any
time, do not implement it outside pgqueue.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from pgqueue.db.queries import Query

__all__ = ["Database", "Executor", "Listener", "Notification", "Row"]


class Row(Protocol):
    """One result row: columns by name (and ``values()`` in the statement's order)."""

    def __getitem__(self, key: str) -> Any: ...

    def values(self) -> Iterable[Any]: ...

    def get(self, key: str, default: Any = None) -> Any: ...

    def keys(self) -> Iterable[str]: ...


class Executor(Protocol):
    """Runs named queries on one connection (inside a transaction) or on a pool."""

    async def fetch(self, query: Query, /, *args: Any, **params: Any) -> list[Row]: ...

    async def fetchrow(self, query: Query, /, *args: Any, **params: Any) -> Row | None: ...

    async def fetchval(self, query: Query, /, *args: Any, **params: Any) -> Any: ...

    async def execute(self, query: Query, /, *args: Any, **params: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class Notification:
    """One NOTIFY delivered to a listener."""

    channel: str
    payload: str


class Listener(Protocol):
    """A dedicated LISTEN connection."""

    async def get(self) -> Notification:
        """The next notification (cancel-safe); raise
        :class:`~pgqueue.errors.DatabaseUnavailable` once the connection broke."""
        ...

    async def ping(self) -> None:
        """Raise :class:`~pgqueue.errors.DatabaseUnavailable` when the connection is dead."""
        ...


class Database(Executor, Protocol):
    """A pool of connections: autocommit statements, transactions, listeners."""

    dsn: str

    def transaction(self) -> AbstractAsyncContextManager[Executor]:
        """A transaction on one pooled connection; commits when the block ends."""
        ...

    def listen(self, channels: Sequence[str]) -> AbstractAsyncContextManager[Listener]:
        """A dedicated connection that LISTENs on ``channels``."""
        ...

    async def close(self) -> None: ...
