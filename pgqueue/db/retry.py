"""Run a transaction again when PostgreSQL rolled it back for a conflict.

Only serialization failures, deadlocks and lock timeouts are retried: they
guarantee a rollback, so a retry cannot apply anything twice.  Connection
errors and indeterminate commits are never retried here.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from pgqueue.db.errormap import TransientConflict
from pgqueue.db.executor import Database, Executor

__all__ = ["in_transaction"]

T = TypeVar("T")


async def in_transaction(
    db: Database, body: Callable[[Executor], Awaitable[T]], *, attempts: int = 3
) -> T:
    """Run ``body(tx)`` in a transaction; retry it on a transient conflict."""
    for attempt in range(1, attempts + 1):
        try:
            async with db.transaction() as tx:
                return await body(tx)
        except TransientConflict:
            if attempt == attempts:
                raise
            await asyncio.sleep(0.01 * 2 ** (attempt - 1) * (0.5 + random.random()))
    raise AssertionError("unreachable")
