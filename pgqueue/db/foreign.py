"""Executors over a connection the application owns (transactional enqueue/complete).

The statements then run in the caller's open transaction and commit or roll
back with it; pgqueue neither begins nor ends that transaction.
"""

from __future__ import annotations

from typing import Any

from pgqueue.db.executor import Executor
from pgqueue.errors import PgQueueError

__all__ = ["executor_for_connection"]


def executor_for_connection(connection: Any) -> Executor:
    """An executor for an asyncpg ``Connection`` or a psycopg ``AsyncConnection``."""
    module = type(connection).__module__
    if module.startswith("asyncpg"):
        from pgqueue.db.asyncpg_db import ConnectionExecutor as AsyncpgExecutor

        return AsyncpgExecutor(connection)
    if module.startswith("psycopg"):
        from pgqueue.db.psycopg_db import ConnectionExecutor as PsycopgExecutor

        return PsycopgExecutor(connection, autocommit=False)
    raise PgQueueError(
        "connection must be an asyncpg Connection or a psycopg AsyncConnection, "
        f"not {type(connection).__name__}"
    )
