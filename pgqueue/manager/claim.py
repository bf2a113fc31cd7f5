"""Claims: one statement per batch, long-polling on NOTIFY with a polling fallback.

The claim locks due jobs in claim order with ``FOR UPDATE SKIP LOCKED``,
leases them on the database clock and bumps each job's fence, in one
statement.  The transaction commits before any job runs: no lock is held
while a handler works.
"""

from __future__ import annotations

import asyncio
import contextlib

from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext
from pgqueue.manager.models import ClaimedJob
from pgqueue.manager.rows import claimed_from_row
from pgqueue.vocabulary.checks import check_integer
from pgqueue.vocabulary.names import validate_queue_name

__all__ = ["MAX_PULL_COUNT", "MAX_PULL_TIMEOUT_MS", "claim_once", "pull_batch"]

MAX_PULL_COUNT = 1000
MAX_PULL_TIMEOUT_MS = 60_000


def _check(queue: str, count: int, lock_ttl_ms: int | None, timeout_ms: int) -> None:
    validate_queue_name(queue)
    checks: list[tuple[str, object, int, int]] = [
        ("count", count, 1, MAX_PULL_COUNT),
        ("timeout", timeout_ms, 0, MAX_PULL_TIMEOUT_MS),
    ]
    if lock_ttl_ms is not None:
        checks.append(("lockTtl", lock_ttl_ms, 1, 86_400_000))
    for name, value, lo, hi in checks:
        check_integer(value, name, lo, hi, floats=False)


async def claim_once(
    ctx: EngineContext, queue: str, count: int, owner: str, lock_ttl_ms: int | None
) -> list[ClaimedJob]:
    """One claim statement: up to ``count`` due jobs, leased to ``owner``."""
    ctx.session.check()
    rows = await ctx.db.fetch(
        Q.job_claim_batch,
        namespace=ctx.namespace,
        queue=queue,
        count=count,
        owner=owner,
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
        lease_ms=lock_ttl_ms,
        default_lease_ms=ctx.config.lease_ms,
    )
    if rows:
        ctx.session.confirm_live(rows[0]["session_live"])
    return [claimed_from_row(row) for row in rows if row["id"] is not None]


async def pull_batch(
    ctx: EngineContext,
    queue: str,
    count: int,
    *,
    owner: str,
    lock_ttl_ms: int | None,
    timeout_ms: int,
) -> list[ClaimedJob]:
    """Claim up to ``count`` jobs, waiting up to ``timeout_ms`` for the first ones.

    The wait registers for the queue's NOTIFY hint *before* each claim, so a
    job pushed in between is not missed; without hints it re-polls every
    ``poll_interval_ms``.
    """
    _check(queue, count, lock_ttl_ms, timeout_ms)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    poll = ctx.config.poll_interval_ms / 1000
    while True:
        if ctx.notifier.draining:
            return []
        with ctx.notifier.waiter(queue) as woken:
            jobs = await claim_once(ctx, queue, count, owner, lock_ttl_ms)
            remaining = deadline - loop.time()
            if jobs or remaining <= 0:
                return jobs
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, poll)):
                    await asyncio.shield(woken)
