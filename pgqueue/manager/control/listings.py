"""Queries over many jobs and queues, and waiting for one job to finish.

Listings read live and finished jobs in one statement (one snapshot) in a
stable order, ``(created_at, id)``; each requested state reads its own range
of the listing indexes.  :func:`wait_for_job` is event-driven: it registers
for the job's queue hints *before* each look at the job, so a completion
between the look and the wait still wakes it; without hints it looks again
every poll interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any

from pgqueue import jsontext
from pgqueue.db.queries import Q
from pgqueue.errors import JobNotFound, ValidationError
from pgqueue.manager import reads
from pgqueue.manager.arguments import check_bool, check_int
from pgqueue.manager.context import EngineContext
from pgqueue.manager.models import JOB_STATES, Job
from pgqueue.manager.rows import job_from_row
from pgqueue.vocabulary.names import validate_job_id, validate_queue_name

__all__ = [
    "MAX_LIST_LIMIT",
    "MAX_LIST_OFFSET",
    "MAX_WAIT_MS",
    "count",
    "get_counts_per_priority",
    "get_job_by_custom_id",
    "get_jobs",
    "list_queues",
    "parse_states",
    "wait_for_job",
]

MAX_LIST_LIMIT = 10_000
MAX_LIST_OFFSET = 1_000_000
MAX_WAIT_MS = 600_000
MAX_SERIES_MINUTES = 7 * 24 * 60  # a week of per-minute points, as BullMQ's ONE_WEEK


def parse_states(states: str | Sequence[str] | None) -> list[str]:
    """The reported states asked for (all of them when None), validated."""
    if states is None:
        return list(JOB_STATES)
    wanted = [states] if isinstance(states, str) else list(states)
    if not wanted:
        return list(JOB_STATES)
    for state in wanted:
        if state not in JOB_STATES:
            raise ValidationError(
                f"state must be one of {', '.join(JOB_STATES)} (got {state!r})", field="state"
            )
    return list(dict.fromkeys(wanted))


async def get_jobs(
    ctx: EngineContext,
    queue: str,
    states: str | Sequence[str] | None = None,
    offset: int = 0,
    limit: int = 100,
    asc: bool = True,
) -> list[Job]:
    """One page of a queue's jobs in ``states``, ordered by ``(created_at, id)``."""
    validate_queue_name(queue)
    wanted = parse_states(states)
    start = check_int(offset, "offset", 0, MAX_LIST_OFFSET)
    size = check_int(limit, "limit", 1, MAX_LIST_LIMIT)
    query = Q.job_list_asc if check_bool(asc, "asc") else Q.job_list_desc
    rows = await ctx.scoped.fetch(query, queue=queue, states=wanted, offset=start, limit=size)
    return [job_from_row(row) for row in rows]


async def get_job_by_custom_id(ctx: EngineContext, custom_id: str) -> Job | None:
    """The job pushed with ``custom_id`` (a custom id is the job's id), or None."""
    validate_job_id(custom_id, "customId")
    job = await reads.get_job(ctx, custom_id)
    return job if job is not None and job.custom_id == custom_id else None


async def count(ctx: EngineContext, queue: str) -> int:
    """Pending jobs of ``queue``: waiting + prioritized + delayed."""
    validate_queue_name(queue)
    return int(await ctx.scoped.fetchval(Q.job_count_pending, queue=queue))


async def get_counts_per_priority(ctx: EngineContext, queue: str) -> dict[int, int]:
    """Pending jobs of ``queue`` per priority."""
    validate_queue_name(queue)
    rows = await ctx.scoped.fetch(Q.job_counts_per_priority, queue=queue)
    return {int(row["priority"]): int(row["n"]) for row in rows}


async def finished_per_minute(
    ctx: EngineContext, queue: str, state: str, minutes: int = MAX_SERIES_MINUTES
) -> tuple[int, list[int]]:
    """Jobs of ``queue`` that finished in ``state`` per wall-clock minute, newest first.

    Returns ``(start of the current minute in epoch ms, counts)``; ``counts[0]`` is the
    current minute and the list reaches back to the oldest minute, within ``minutes``,
    that has any.  Counts the finished jobs retention keeps (``removeOnComplete`` /
    ``removeOnFail`` jobs are gone at once and not counted).
    """
    validate_queue_name(queue)
    if state not in ("completed", "failed"):
        raise ValidationError("state must be 'completed' or 'failed'", field="state")
    window = check_int(minutes, "minutes", 1, MAX_SERIES_MINUTES)
    rows = await ctx.scoped.fetch(
        Q.queue_finished_per_minute, queue=queue, state=state, window=window
    )
    if not rows:
        return int(time.time() // 60 * 60_000), []
    counts = [0] * (int(rows[-1]["minutes_ago"]) + 1)
    for row in rows:
        counts[int(row["minutes_ago"])] = int(row["n"])
    return int(rows[0]["now_minute_ms"]), counts


async def list_queues(ctx: EngineContext) -> list[str]:
    """Every queue of the namespace: registered ones and any that holds jobs."""
    return [str(row["queue"]) for row in await ctx.scoped.fetch(Q.queue_list)]


async def wait_for_job(ctx: EngineContext, job_id: str, timeout_ms: int) -> tuple[bool, Any]:
    """Wait until ``job_id`` finishes: ``(True, result)`` once completed.

    ``(False, None)`` when it failed or ``timeout_ms`` passed first; raises
    :class:`JobNotFound` for an unknown id.
    """
    validate_job_id(job_id, "id")
    timeout = check_int(timeout_ms, "timeout", 0, MAX_WAIT_MS)
    row = await ctx.scoped.fetchrow(Q.job_wait_probe, job_id=job_id)
    if row is None:
        raise JobNotFound(job_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout / 1000
    poll = ctx.config.poll_interval_ms / 1000
    queue = str(row["queue"])
    while True:
        with ctx.notifier.waiter(queue) as woken:
            row = await ctx.scoped.fetchrow(Q.job_wait_probe, job_id=job_id)
            if row is None:
                raise JobNotFound(job_id)
            if row["state"] == "completed":
                return True, None if row["result"] is None else jsontext.loads(row["result"])
            if row["state"] == "failed":
                return False, None
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False, None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, poll)):
                    await asyncio.shield(woken)
