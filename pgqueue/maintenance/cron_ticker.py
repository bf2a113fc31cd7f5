"""The cron ticker: every broker admits due scheduler ticks, each exactly once (G8).

Every ``cron_interval_ms`` each live broker locks the due schedulers with
``FOR UPDATE SKIP LOCKED`` (brokers ticking at once share them out), and for
each one, in one transaction:

1. decides the ticks to fire now on the database clock
   (:func:`~pgqueue.manager.cron.schedule.plan_ticks`: the latest due tick
   with ``skipMissedOnRestart``, else every missed tick oldest first, at most
   ``cron_catch_up_max``; never beyond ``maxLimit`` or ``endDate``);
2. records them in ``pgqueue_scheduler_ticks``, whose primary key
   ``(namespace, scheduler, tick_at)`` admits a tick once whatever broker or
   transaction tries again (``ON CONFLICT DO NOTHING``: a tick already
   recorded is skipped);
3. admits the tick's job through the engine's admission
   (:func:`~pgqueue.manager.admission.admit_in`, with its outbox event, in
   the same transaction): every job option of the template applies, and
   ``preventOverlap``'s unique key ``cron:<name>`` returns the live job
   instead of a new one (the tick is then recorded as ``overlap``);
4. advances ``next_run_at`` and ``executions`` with a compare-and-set on the
   next run it read.

It is not the maintenance leader's job: a dead leader would stop every
schedule until its seat expired.  A fenced broker does not tick.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, replace
from datetime import datetime

from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.errors import ValidationError
from pgqueue.ids import uuid7_many
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.periodic import Periodic
from pgqueue.manager.admission import admit_in
from pgqueue.manager.context import EngineContext
from pgqueue.manager.cron.models import Scheduler
from pgqueue.manager.cron.schedule import Timing, plan_ticks
from pgqueue.manager.cron.spec import template_spec
from pgqueue.manager.options import JobSpec

__all__ = ["CronTicker", "TickReport", "tick_once"]

log = logging.getLogger("pgqueue.cron")

BATCH = 100
TICKS_KEPT_MS = 86_400_000
PRUNE_BATCH = 5_000


@dataclass(slots=True)
class TickReport:
    """What one pass did."""

    admitted: int = 0
    overlapped: int = 0
    no_worker: int = 0
    dropped: int = 0  # schedulers whose older missed ticks were left out
    schedulers: int = 0


def _timing(s: Scheduler) -> Timing:
    return Timing(s.pattern, s.every_ms, s.timezone, s.start_at, s.end_at)


@dataclass(slots=True)
class _Fired:
    """One locked scheduler in a pass: its plan, the ticks it recorded, their jobs."""

    scheduler: Scheduler
    last_tick: datetime | None
    next_run: datetime | None
    claimed: list[Row]
    template: JobSpec | None = None
    admitted: int = 0


def _template(ctx: EngineContext, s: Scheduler, data_json: str | None) -> JobSpec | None:
    try:
        return template_spec(
            s, data_json=data_json or "null", max_payload_bytes=ctx.config.max_payload_bytes
        )
    except ValidationError as exc:  # a template that no longer passes (settings changed)
        log.warning("scheduler %s: its job template is refused, tick skipped: %s", s.name, exc)
        return None


async def _claim_in(tx: Executor, ctx: EngineContext, row: Row, report: TickReport) -> _Fired:
    """Plan one scheduler's ticks and record them (the unique step)."""
    s = Scheduler.from_row(row)
    assert s.next_run_at is not None
    remaining = None if s.max_limit is None else s.max_limit - s.executions
    plan = plan_ticks(
        _timing(s),
        s.next_run_at,
        row["now"],
        skip_missed=s.skip_missed_on_restart,
        remaining=remaining,
        catch_up_max=ctx.config.cron_catch_up_max,
    )
    report.schedulers += 1
    report.dropped += int(plan.dropped)
    fired = _Fired(s, plan.fire[-1] if plan.fire else None, plan.next_run, [])
    if not plan.fire:
        return fired
    skip = s.skip_if_no_worker and not row["has_worker"]
    template = None if skip else _template(ctx, s, row["data"])
    if template is None and not skip:
        return fired  # a refused template: its ticks pass, nothing is recorded
    claimed = await tx.fetch(
        Q.scheduler_ticks_claim,
        namespace=ctx.namespace,
        scheduler=s.name,
        ticks=plan.fire,
        job_ids=[None] * len(plan.fire) if template is None else uuid7_many(len(plan.fire)),
        outcome="admitted" if template is not None else "no-worker",
        broker_id=ctx.broker_id,
    )
    if template is None:
        report.no_worker += len(claimed)
    else:
        fired.claimed, fired.template = list(claimed), template
    return fired


async def _admit_in(
    tx: Executor, ctx: EngineContext, batch: list[_Fired], report: TickReport
) -> None:
    """Admit the jobs of every recorded tick of the pass in one admission."""
    specs = [
        replace(f.template, id=tick["job_id"])
        for f in batch
        if f.template is not None
        for tick in f.claimed
    ]
    if not specs:
        return
    ids = iter(await admit_in(ctx, tx, specs))
    for fired in batch:
        overlapped = [
            (tick["tick_at"], got) for tick in fired.claimed if (got := next(ids)) != tick["job_id"]
        ]
        if overlapped:
            await tx.execute(
                Q.scheduler_ticks_overlapped,
                namespace=ctx.namespace,
                name=fired.scheduler.name,
                tick_ats=[tick for tick, _ in overlapped],
                job_ids=[job for _, job in overlapped],
            )
        fired.admitted = len(fired.claimed) - len(overlapped)
        report.overlapped += len(overlapped)
        report.admitted += fired.admitted


async def _tick_in(
    tx: Executor, *, ctx: EngineContext, report: TickReport, now: datetime | None
) -> int:
    rows = await tx.fetch(
        Q.scheduler_lock_due,
        namespace=ctx.namespace,
        limit=BATCH,
        now=now,
        worker_stale_ms=ctx.config.worker_stale_ms,
    )
    batch = [await _claim_in(tx, ctx, row, report) for row in rows]
    await _admit_in(tx, ctx, batch, report)
    for fired in batch:
        await tx.fetchrow(
            Q.scheduler_advance,
            namespace=ctx.namespace,
            name=fired.scheduler.name,
            executions=fired.admitted,
            last_run_at=fired.last_tick,
            next_run_at=fired.next_run,
            expected_next_run_at=fired.scheduler.next_run_at,
        )
    return len(rows)


async def tick_once(ctx: EngineContext, now: datetime | None = None) -> TickReport:
    """Admit every due tick now (batches of :data:`BATCH` schedulers, each its own
    transaction).  ``now``: the instant schedules are judged against (``None``,
    every production pass, is the database clock; a test moves time with it)."""
    report = TickReport()
    while True:
        locked = await in_transaction(
            ctx.db, functools.partial(_tick_in, ctx=ctx, report=report, now=now)
        )
        if locked < BATCH:
            return report


class CronTicker(Periodic[TickReport]):
    """Runs :func:`tick_once` every ``cron_interval_ms`` on every live broker; the
    leader also forgets tick records older than a day (once a minute)."""

    name = "cron"
    leader_only = False
    what = "cron tick"
    log = log

    def __init__(self, ctx: EngineContext, elector: LeaderElector) -> None:
        super().__init__(ctx, elector, ctx.config.cron_interval_ms, TickReport())

    async def pass_once(self) -> TickReport:
        report = await tick_once(self._ctx)
        if self.leaders_minute():
            await self._ctx.db.execute(
                Q.scheduler_ticks_prune,
                namespace=self._ctx.namespace,
                kept_ms=TICKS_KEPT_MS,
                limit=PRUNE_BATCH,
            )
        return report
