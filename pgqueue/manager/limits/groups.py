"""Job groups: per-group pause, concurrency and rate limits, a manual deadline.

A group is the jobs of one queue that share a ``groupId``.  The claim serves
groups round robin (ungrouped jobs first, then the head job of each group,
least recently served group first, one per group per round) and holds a group
back while it is paused, before its manual deadline (:func:`rate_limit_group`)
or when its concurrency or rate budget is spent.  A group's own limits win
over the defaults a worker sends with PULL (``group``).  Every setting is a
row of ``pgqueue_groups``, read by the claim under the queue row's lock.
"""

from __future__ import annotations

from typing import Any

from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext
from pgqueue.vocabulary.checks import INT4_MAX, check_integer
from pgqueue.vocabulary.names import validate_group_id, validate_queue_name

__all__ = [
    "get_group_active_count",
    "get_group_concurrency",
    "get_group_jobs_count",
    "get_group_rate_limit",
    "get_group_rate_limit_ttl",
    "get_groups_jobs_count",
    "is_group_paused",
    "pause_group",
    "rate_limit_group",
    "remove_group_concurrency",
    "remove_group_rate_limit",
    "resume_group",
    "set_group_concurrency",
    "set_group_rate_limit",
]

MAX_DEADLINE_MS = 10 * 365 * 86_400_000


def _names(queue: str, group_id: str) -> None:
    validate_queue_name(queue)
    validate_group_id(group_id)


def _positive(value: int, name: str, hi: int = INT4_MAX) -> None:
    check_integer(value, name, 1, hi, floats=False)


async def _state(ctx: EngineContext, queue: str, group_id: str, max_jobs: int | None = None) -> Any:
    return await ctx.scoped.fetchrow(Q.group_get, queue=queue, group_id=group_id, max_jobs=max_jobs)


async def get_group_jobs_count(ctx: EngineContext, queue: str, group_id: str) -> int:
    """Waiting, prioritized and delayed jobs of the group."""
    _names(queue, group_id)
    return int(await ctx.scoped.fetchval(Q.group_jobs_count, queue=queue, group_id=group_id))


async def get_groups_jobs_count(ctx: EngineContext, queue: str) -> int:
    """Waiting, prioritized and delayed jobs of the queue that belong to a group."""
    validate_queue_name(queue)
    return int(await ctx.scoped.fetchval(Q.group_jobs_count, queue=queue, group_id=None))


async def get_group_active_count(ctx: EngineContext, queue: str, group_id: str) -> int:
    _names(queue, group_id)
    return int(await ctx.scoped.fetchval(Q.group_active_count, queue=queue, group_id=group_id))


async def set_group_rate_limit(
    ctx: EngineContext, queue: str, group_id: str, max_jobs: int, duration_ms: int
) -> None:
    """At most ``max_jobs`` claims of the group per ``duration_ms`` window."""
    _names(queue, group_id)
    _positive(max_jobs, "max")
    _positive(duration_ms, "duration")
    ctx.session.check()
    await ctx.scoped.execute(
        Q.group_set_rate_limit,
        queue=queue,
        group_id=group_id,
        max_jobs=max_jobs,
        duration_ms=duration_ms,
    )


async def get_group_rate_limit(
    ctx: EngineContext, queue: str, group_id: str
) -> tuple[int, int] | None:
    """The group's own rate limit as ``(max, duration_ms)``, or None."""
    _names(queue, group_id)
    row = await _state(ctx, queue, group_id)
    if row is None or row["rate_limit"] is None:
        return None
    return int(row["rate_limit"]), int(row["rate_duration_ms"])


async def remove_group_rate_limit(ctx: EngineContext, queue: str, group_id: str) -> int:
    """1 when the group had a rate limit of its own, else 0."""
    _names(queue, group_id)
    ctx.session.check()
    rows = await ctx.scoped.fetch(Q.group_remove_rate_limit, queue=queue, group_id=group_id)
    return len(rows)


async def get_group_rate_limit_ttl(
    ctx: EngineContext, queue: str, group_id: str, max_jobs: int | None = None
) -> int:
    """Ms until the group may be claimed from again: its manual deadline, else
    the rest of its full rate window; with ``max_jobs``, 0 while fewer claims
    were counted in the window; -2 when nothing holds it back (bunqueue's
    answer for "no such limit")."""
    _names(queue, group_id)
    if max_jobs is not None:
        _positive(max_jobs, "maxJobs")
    row = await _state(ctx, queue, group_id, max_jobs)
    if row is None or row["rate_ttl_ms"] is None:
        return -2
    return int(row["rate_ttl_ms"])


async def set_group_concurrency(
    ctx: EngineContext, queue: str, group_id: str, concurrency: int
) -> None:
    """At most ``concurrency`` active jobs of the group across every broker."""
    _names(queue, group_id)
    _positive(concurrency, "concurrency")
    ctx.session.check()
    await ctx.scoped.execute(
        Q.group_set_concurrency, queue=queue, group_id=group_id, concurrency=concurrency
    )


async def get_group_concurrency(ctx: EngineContext, queue: str, group_id: str) -> int | None:
    _names(queue, group_id)
    row = await _state(ctx, queue, group_id)
    if row is None or row["concurrency_limit"] is None:
        return None
    return int(row["concurrency_limit"])


async def remove_group_concurrency(ctx: EngineContext, queue: str, group_id: str) -> int:
    """1 when the group had a concurrency limit of its own, else 0."""
    _names(queue, group_id)
    ctx.session.check()
    rows = await ctx.scoped.fetch(Q.group_remove_concurrency, queue=queue, group_id=group_id)
    return len(rows)


async def _set_paused(ctx: EngineContext, queue: str, group_id: str, paused: bool) -> bool:
    _names(queue, group_id)
    ctx.session.check()
    rows = await ctx.scoped.fetch(Q.group_set_paused, queue=queue, group_id=group_id, paused=paused)
    return bool(rows)


async def pause_group(ctx: EngineContext, queue: str, group_id: str) -> bool:
    """Stop claims of the group on every broker; True when it was not paused."""
    return await _set_paused(ctx, queue, group_id, True)


async def resume_group(ctx: EngineContext, queue: str, group_id: str) -> bool:
    """True when the group was paused."""
    return await _set_paused(ctx, queue, group_id, False)


async def is_group_paused(ctx: EngineContext, queue: str, group_id: str) -> bool:
    _names(queue, group_id)
    row = await _state(ctx, queue, group_id)
    return bool(row is not None and row["paused"])


async def rate_limit_group(ctx: EngineContext, queue: str, group_id: str, duration_ms: int) -> None:
    """Hold the group back for ``duration_ms`` from now (database clock)."""
    _names(queue, group_id)
    _positive(duration_ms, "duration", MAX_DEADLINE_MS)
    ctx.session.check()
    await ctx.scoped.execute(
        Q.group_rate_limit_until, queue=queue, group_id=group_id, duration_ms=duration_ms
    )
