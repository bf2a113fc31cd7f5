"""Schedulers: create or replace, read, list and remove (bunqueue's Cron commands).

A scheduler lives in ``pgqueue_schedulers``, shared by every broker of the
namespace; the ticker (:mod:`pgqueue.maintenance.cron_ticker`), running on
every broker, admits its ticks.  Its next run is computed here from the
database clock, in the transaction that writes it.

    s = await m.upsert_scheduler("nightly", "reports", pattern="0 3 * * *",
                                 timezone="Europe/Rome", data={"kind": "daily"})
    s = await m.get_scheduler("nightly")      # None when unknown
    await m.remove_scheduler("nightly")       # False when unknown

An update keeps the executions counted so far and computes the next run
again from now (``immediately`` applies to a new scheduler only, as in
bunqueue); one whose limit is already reached is spent (``next_run_at``
NULL).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pgqueue.db.executor import Executor
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.manager.arguments import check_int
from pgqueue.manager.context import EngineContext
from pgqueue.manager.cron.models import Scheduler
from pgqueue.manager.cron.schedule import first_run
from pgqueue.manager.cron.spec import SchedulerSpec, build_scheduler_spec, check_scheduler_name
from pgqueue.vocabulary.names import validate_queue_name

__all__ = [
    "MAX_LISTED_SCHEDULERS",
    "get_scheduler",
    "list_schedulers",
    "remove_scheduler",
    "upsert_scheduler",
    "upsert_spec_in",
]

MAX_LISTED_SCHEDULERS = 10_000


def _next_run(spec: SchedulerSpec, now: datetime, executions: int, *, new: bool) -> datetime | None:
    if spec.max_limit is not None and executions >= spec.max_limit:
        return None
    return first_run(spec.timing, now, immediately=spec.immediately and new)


async def upsert_spec_in(
    tx: Executor, ctx: EngineContext, spec: SchedulerSpec
) -> tuple[Scheduler, datetime, bool]:
    """Write ``spec`` on ``tx``; return the row, the database clock it was computed
    on, and whether the scheduler is new."""
    locked = await ctx.scope(tx).fetchrow(Q.scheduler_lock, name=spec.name)
    if locked is None:
        now = await tx.fetchval(Q.scheduler_clock)
        executions, new = spec.executions_from, True
    else:
        now, executions, new = locked["now"], locked["executions"], False
    timing = spec.timing
    row = await ctx.scope(tx).fetchrow(
        Q.scheduler_upsert,
        name=spec.name,
        queue=spec.queue,
        job_name=spec.job_name,
        data=spec.data_json,
        pattern=timing.pattern,
        every_ms=timing.every_ms,
        timezone=timing.timezone,
        immediately=spec.immediately,
        max_limit=spec.max_limit,
        start_at=timing.start_at,
        end_at=timing.end_at,
        prevent_overlap=spec.prevent_overlap,
        skip_missed_on_restart=spec.skip_missed_on_restart,
        skip_if_no_worker=spec.skip_if_no_worker,
        priority=spec.priority,
        unique_key=spec.unique_key,
        dedup=spec.dedup_json,
        job_options=spec.job_options_json,
        source=spec.source,
        executions=executions,
        next_run_at=_next_run(spec, now, executions, new=new),
    )
    assert row is not None
    return Scheduler.from_row(row), now, new


async def upsert_scheduler(
    ctx: EngineContext,
    name: str,
    queue: str,
    *,
    pattern: str | None = None,
    every_ms: int | None = None,
    timezone: str | None = None,
    job_name: str = "default",
    data: Any = None,
    immediately: bool = False,
    limit: int | None = None,
    start_date: datetime | float | str | None = None,
    end_date: datetime | float | str | None = None,
    prevent_overlap: bool = True,
    skip_missed_on_restart: bool = True,
    skip_if_no_worker: bool = False,
    priority: int = 0,
    unique_key: str | None = None,
    dedup: Mapping[str, Any] | None = None,
    job_options: Mapping[str, Any] | None = None,
) -> Scheduler:
    """Create scheduler ``name`` pushing ``job_name`` jobs to ``queue``, or replace
    what it does.

    ``pattern`` (a cron pattern: 5 fields, or 6 with leading seconds, or
    ``@daily`` ...; read in ``timezone``, an IANA name, UTC by default) wins
    over ``every_ms``.  ``limit``: at most that many executions (≤ 0 or None:
    unlimited); ``start_date`` / ``end_date`` (ms since the epoch, ISO 8601 or
    an aware datetime) bound the ticks; ``immediately`` fires a new scheduler
    at once.  ``prevent_overlap`` (default true): no new tick job while the
    previous one is live (unique key ``cron:<name>``).
    ``skip_missed_on_restart`` (default true): ticks missed while no broker
    ran collapse into one; false catches each one up (at most
    ``cron_catch_up_max``).  ``skip_if_no_worker``: a tick with no live
    worker on ``queue`` admits nothing.  ``job_options``: the engine's job
    options of every tick's job (``attempts``, ``backoff``, ``timeout``,
    ``delay``, ``remove_on_complete``, ...).  Raises :class:`ValidationError`
    naming the field; nothing is written then.
    """
    spec = build_scheduler_spec(
        name,
        queue,
        data=data,
        job_name=job_name,
        pattern=pattern,
        every_ms=every_ms,
        timezone=timezone,
        immediately=immediately,
        limit=limit,
        start_date=start_date,
        end_date=end_date,
        prevent_overlap=prevent_overlap,
        skip_missed_on_restart=skip_missed_on_restart,
        skip_if_no_worker=skip_if_no_worker,
        priority=priority,
        unique_key=unique_key,
        dedup=dedup,
        job_options=job_options,
        max_payload_bytes=ctx.config.max_payload_bytes,
    )
    scheduler, _, _ = await in_transaction(ctx.db, lambda tx: upsert_spec_in(tx, ctx, spec))
    return scheduler


async def get_scheduler(ctx: EngineContext, name: str) -> Scheduler | None:
    """Scheduler ``name``, or None when there is none."""
    row = await ctx.scoped.fetchrow(Q.scheduler_get, name=check_scheduler_name(name))
    return None if row is None else Scheduler.from_row(row)


async def list_schedulers(
    ctx: EngineContext, queue: str | None = None, *, limit: int = MAX_LISTED_SCHEDULERS
) -> list[Scheduler]:
    """Every scheduler (of ``queue``), by name."""
    if queue is not None:
        validate_queue_name(queue)
    limit = check_int(limit, "limit", 1, MAX_LISTED_SCHEDULERS)
    rows = await ctx.scoped.fetch(Q.scheduler_list, queue=queue, limit=limit)
    return [Scheduler.from_row(row) for row in rows]


async def remove_scheduler(ctx: EngineContext, name: str) -> bool:
    """Remove scheduler ``name`` (its jobs already admitted stay); False when unknown."""
    row = await ctx.scoped.fetchrow(Q.scheduler_delete, name=check_scheduler_name(name))
    return row is not None
