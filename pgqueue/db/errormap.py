"""Driver errors become pgqueue errors here, and only here.

The rule that matters is G1: an error after COMMIT was sent (or after an
autocommit write statement was sent) is *indeterminate*, never a failure.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Final, Literal

import asyncpg
import psycopg
import psycopg.errors

from pgqueue.errors import (
    DatabaseUnavailable,
    IndeterminateCommit,
    PgQueueError,
    StorageError,
    ValidationError,
)

__all__ = [
    "NotifyQueueFull",
    "TransientConflict",
    "is_connection_error",
    "translate",
    "translating",
]

_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "55P03"})


class TransientConflict(StorageError):
    """Serialization failure, deadlock or lock timeout: rolled back, safe to retry."""


class NotifyQueueFull(StorageError):
    """A NOTIFY in the transaction was refused at its commit: PostgreSQL's notification
    queue is full (a listener lags far behind).  Rolled back; safe to retry without it."""


def _sqlstate(exc: BaseException) -> str | None:
    if isinstance(exc, asyncpg.PostgresError):
        return getattr(exc, "sqlstate", None)
    if isinstance(exc, psycopg.Error):
        return exc.sqlstate
    return None


def _primary(exc: BaseException) -> str:
    """The first line of a driver error (PostgreSQL's primary message)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def is_connection_error(exc: BaseException) -> bool:
    """True when ``exc`` means the connection is gone or unusable."""
    state = _sqlstate(exc)
    if state:
        return str(state).startswith(("08", "57P"))
    return isinstance(
        exc,
        asyncpg.exceptions.InternalClientError
        | asyncpg.PostgresConnectionError
        | asyncpg.exceptions.ConnectionDoesNotExistError
        | asyncpg.InterfaceError
        | psycopg.OperationalError
        | psycopg.InterfaceError
        | ConnectionError
        | OSError
        | asyncio.TimeoutError,
    )


def translate(exc: BaseException, *, write_sent: bool) -> PgQueueError:
    """The pgqueue error for a driver error.

    ``write_sent`` is true when a write may have committed: an autocommit write
    statement or a COMMIT had been sent when the connection broke.
    """
    if isinstance(exc, PgQueueError):
        return exc
    state = _sqlstate(exc)
    if state in _RETRYABLE_SQLSTATES:
        return TransientConflict(f"transaction conflict ({state}), rolled back")
    if state and str(state).startswith("22"):
        # A data exception: a value the column or type cannot hold (out of range,
        # bad syntax, too long).  The statement failed, nothing of it was written.
        return ValidationError(f"value refused by the database ({state}): {_primary(exc)}")
    if state == "54000" and "NOTIFY queue" in _primary(exc):
        return NotifyQueueFull(f"notification queue full, rolled back: {_primary(exc)}")
    if state == "57014":
        return StorageError("statement timed out (statement_timeout)")
    if is_connection_error(exc):
        if write_sent:
            return IndeterminateCommit(
                "the database connection broke after the write was sent; it may have "
                "committed (retry with the same custom id to be safe)"
            )
        return DatabaseUnavailable(f"database unavailable: {type(exc).__name__}: {exc}")
    return StorageError(f"database error{f' {state}' if state else ''}: {exc}")


_DRIVER_ERRORS: Final = (
    TimeoutError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    psycopg.Error,
    OSError,
)


class translating:
    """Re-raise driver errors raised in the block as pgqueue errors.

    A class, not a generator context manager: every statement enters one, and
    ``contextlib``'s generator protocol cost ~1.5 us of it (docs/performance.md)."""

    __slots__ = ("write_sent",)

    def __init__(self, *, write_sent: bool) -> None:
        self.write_sent = write_sent

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        if exc is None or isinstance(exc, PgQueueError) or not isinstance(exc, _DRIVER_ERRORS):
            return False
        raise translate(exc, write_sent=self.write_sent) from exc
