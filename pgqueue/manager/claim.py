"""Claims: one statement per batch, long-polling on NOTIFY with a polling fallback.

The claim locks due jobs in claim order with ``FOR UPDATE SKIP LOCKED``,
leases them on the database clock and bumps each job's fence, in one
statement.  The transaction commits before any job runs: no lock is held
while a handler works.

A queue with a rate or concurrency limit, or with grouped jobs, is claimed by
the planned claim instead (``job_claim_planned``, one round trip; see
:mod:`pgqueue.manager.limits`): the plain statement says so (``plan_needed``)
without claiming, and the context remembers the queue so that its next claim
goes straight to the plan.  A claim held back by a rate window reports when
the window reopens (:attr:`Claims.retry_after_ms`); a long poll then waits for
it instead of re-polling on every push.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pgqueue.db.queries import Q
from pgqueue.errors import ValidationError
from pgqueue.manager.context import EngineContext
from pgqueue.manager.models import ClaimedJob
from pgqueue.manager.rows import claimed_from_row
from pgqueue.vocabulary.checks import check_integer
from pgqueue.vocabulary.names import validate_queue_name

__all__ = [
    "MAX_PULL_COUNT",
    "MAX_PULL_TIMEOUT_MS",
    "Claims",
    "GroupDefaults",
    "claim_once",
    "pull_batch",
]

MAX_PULL_COUNT = 1000
MAX_PULL_TIMEOUT_MS = 60_000


@dataclass(frozen=True, slots=True)
class GroupDefaults:
    """A puller's limits for groups that have none of their own (PULL's ``group``)."""

    concurrency: int | None = None
    max: int | None = None
    duration_ms: int | None = None

    def check(self) -> None:
        for name, value in (
            ("group.concurrency", self.concurrency),
            ("group.limit.max", self.max),
            ("group.limit.duration", self.duration_ms),
        ):
            if value is not None:
                check_integer(value, name, 1, 2_147_483_647, floats=False)
        if (self.max is None) != (self.duration_ms is None):
            raise ValidationError("group.limit needs both max and duration", field="group")


class Claims(list[ClaimedJob]):
    """Claimed jobs; ``retry_after_ms`` is set when none were claimed because a
    rate window (the queue's or its groups') is full: the ms until it reopens."""

    retry_after_ms: int | None = None
    held_back: bool = False
    """None claimed by the planned claim: a limit or a group may hold work back, so
    a completion (a freed slot) can make some claimable."""


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
    ctx: EngineContext,
    queue: str,
    count: int,
    owner: str,
    lock_ttl_ms: int | None,
    group: GroupDefaults | None = None,
    now: datetime | None = None,
) -> Claims:
    """One claim: up to ``count`` due jobs, leased to ``owner`` (one round trip,
    two when a queue first turns out to need the planned claim).  ``now``: the
    instant due-ness is judged at (None: the database clock; tests move time
    with it); the planned claim has no such clock, so a queue that needs it
    refuses a moved one."""
    ctx.session.check()
    args: dict[str, Any] = {
        "namespace": ctx.namespace,
        "queue": queue,
        "count": count,
        "owner": owner,
        "broker_id": ctx.broker_id,
        "session_id": ctx.session_id,
        "lease_ms": lock_ttl_ms,
        "default_lease_ms": ctx.config.lease_ms,
    }
    if queue not in ctx.planned_queues:
        rows = await ctx.db.fetch(Q.job_claim_batch, **args, now=now)
        if rows:
            ctx.session.confirm_live(rows[0]["session_live"])
        if not rows or not rows[0]["plan_needed"]:
            return Claims(claimed_from_row(row) for row in rows if row["id"] is not None)
        ctx.planned_queues.add(queue)
    if now is not None:
        raise ValidationError(
            f"queue {queue!r} needs the planned claim, which judges on the database clock",
            field="now",
        )
    group = group or GroupDefaults()
    rows = await ctx.db.fetch(
        Q.job_claim_planned,
        **args,
        group_concurrency=group.concurrency,
        group_max=group.max,
        group_duration_ms=group.duration_ms,
    )
    if rows:
        ctx.session.confirm_live(rows[0]["session_live"])
    claims = Claims(claimed_from_row(row) for row in rows if row["id"] is not None)
    if not claims:
        # Nothing to claim: let the plain statement judge the next claim again
        # (the limit may be gone, the groups drained).
        ctx.planned_queues.discard(queue)
        claims.held_back = True
        if rows and rows[0]["retry_ms"] is not None:
            claims.retry_after_ms = int(rows[0]["retry_ms"])
            ctx.rate_throttled[queue] = ctx.rate_throttled.get(queue, 0) + 1
    return claims


async def pull_batch(
    ctx: EngineContext,
    queue: str,
    count: int,
    *,
    owner: str,
    lock_ttl_ms: int | None,
    timeout_ms: int,
    group: GroupDefaults | None = None,
    now: datetime | None = None,
) -> Claims:
    """Claim up to ``count`` jobs, waiting up to ``timeout_ms`` for the first ones.

    The wait registers for the queue's NOTIFY hint *before* each claim, so a
    job pushed in between is not missed; without hints it re-polls every
    ``poll_interval_ms``.  A claim held back by a rate window sleeps until the
    window reopens (or the timeout ends), not woken by pushes.  After an empty
    claim of a plain queue only a hint of new work wakes it (an ack's completion
    makes nothing claimable there); after one held back by a concurrency limit or
    a group, any event of the queue does (a completion frees a slot).
    """
    _check(queue, count, lock_ttl_ms, timeout_ms)
    if group is not None:
        group.check()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    poll = ctx.config.poll_interval_ms / 1000
    while True:
        if ctx.notifier.draining:
            return Claims()
        with ctx.notifier.claim_waiter(queue) as wakeup:
            jobs = await claim_once(ctx, queue, count, owner, lock_ttl_ms, group, now)
            remaining = deadline - loop.time()
            if jobs or remaining <= 0:
                return jobs
            if jobs.retry_after_ms is not None:
                await asyncio.sleep(min(remaining, jobs.retry_after_ms / 1000))
                continue
            woken = wakeup.event if jobs.held_back else wakeup.work
            wakeup.idle = True
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(remaining, poll)):
                    await asyncio.shield(woken)
