"""A queue's rate limit and concurrency limit, for every broker at once.

The rate limit counts claims in fixed windows of ``duration`` ms on the
database clock (a window opens at the first claim after the previous one
closed); with ``ttl`` it lifts itself after that many ms.  The concurrency
limit caps the queue's active jobs across all brokers.  Both are read by the
claim (``job_claim_planned``) under the queue row's lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext
from pgqueue.vocabulary.checks import INT4_MAX, check_integer
from pgqueue.vocabulary.names import validate_queue_name

__all__ = [
    "DEFAULT_RATE_DURATION_MS",
    "QueueLimits",
    "clear_concurrency",
    "clear_rate_limit",
    "get_queue_limits",
    "set_concurrency",
    "set_rate_limit",
]

DEFAULT_RATE_DURATION_MS = 1000
MAX_TTL_MS = 10 * 365 * 86_400_000


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """What GetQueueLimits reports: ``rate_limit`` is ``(max, duration_ms)``."""

    rate_limit: tuple[int, int] | None
    rate_limit_ttl_ms: int
    concurrency_limit: int | None
    maxed: bool

    def as_dict(self) -> dict[str, Any]:
        """bunqueue's shape: ``{rateLimit: {max, duration}|null, rateLimitTtl,
        concurrencyLimit, maxed}``."""
        rate = self.rate_limit
        return {
            "rateLimit": None if rate is None else {"max": rate[0], "duration": rate[1]},
            "rateLimitTtl": self.rate_limit_ttl_ms,
            "concurrencyLimit": self.concurrency_limit,
            "maxed": self.maxed,
        }


async def set_rate_limit(
    ctx: EngineContext,
    queue: str,
    limit: int,
    duration_ms: int = DEFAULT_RATE_DURATION_MS,
    ttl_ms: int | None = None,
) -> None:
    """At most ``limit`` claims of ``queue`` per ``duration_ms`` window, across
    every broker; lifted after ``ttl_ms`` when given."""
    validate_queue_name(queue)
    check_integer(limit, "limit", 1, INT4_MAX, floats=False)
    check_integer(duration_ms, "duration", 1, INT4_MAX, floats=False)
    if ttl_ms is not None:
        check_integer(ttl_ms, "ttl", 1, MAX_TTL_MS, floats=False)
    ctx.session.check()
    await ctx.scoped.execute(
        Q.queue_set_rate_limit, queue=queue, limit=limit, duration_ms=duration_ms, ttl_ms=ttl_ms
    )


async def clear_rate_limit(ctx: EngineContext, queue: str) -> None:
    validate_queue_name(queue)
    ctx.session.check()
    await ctx.scoped.execute(Q.queue_clear_rate_limit, queue=queue)


async def set_concurrency(ctx: EngineContext, queue: str, limit: int) -> None:
    """At most ``limit`` active jobs of ``queue`` across every broker."""
    validate_queue_name(queue)
    check_integer(limit, "limit", 1, INT4_MAX, floats=False)
    ctx.session.check()
    await ctx.scoped.execute(Q.queue_set_concurrency, queue=queue, limit=limit)


async def clear_concurrency(ctx: EngineContext, queue: str) -> None:
    validate_queue_name(queue)
    ctx.session.check()
    await ctx.scoped.execute(Q.queue_clear_concurrency, queue=queue)


async def get_queue_limits(
    ctx: EngineContext, queue: str, max_jobs: int | None = None
) -> QueueLimits:
    """The queue's limits, the ms left in its rate window (``rateLimitTtl``: 0
    when none is open, or, with ``max_jobs``, while fewer claims were counted in
    it) and whether its active jobs reach the concurrency limit (``maxed``)."""
    validate_queue_name(queue)
    if max_jobs is not None:
        check_integer(max_jobs, "maxJobs", 1, INT4_MAX, floats=False)
    row = await ctx.scoped.fetchrow(Q.queue_limits_get, queue=queue, max_jobs=max_jobs)
    assert row is not None
    rate = row["rate_limit"]
    concurrency = row["concurrency_limit"]
    return QueueLimits(
        rate_limit=None if rate is None else (int(rate), int(row["rate_duration_ms"])),
        rate_limit_ttl_ms=int(row["rate_ttl_ms"]),
        concurrency_limit=None if concurrency is None else int(concurrency),
        maxed=concurrency is not None and int(row["active"]) >= int(concurrency),
    )
