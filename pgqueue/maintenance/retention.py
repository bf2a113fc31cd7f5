"""Retention: finished jobs, outbox events, logs and dead workers do not pile up.

Runs on the leader every ``retention_interval_ms``, each step in batches of its
own transaction (short locks, no long transaction holding the xmin horizon):

* finished jobs beyond what their ``removeOnComplete`` / ``removeOnFail``
  count or ``{age, count}`` keeps are hidden (as if removed at once: a
  completion proof stays for dependents), failed ones leave the DLQ;
* completed jobs (and completion proofs of removed ones) older than
  ``retention_completed_ms``; failed jobs without a DLQ entry older than
  ``retention_failed_ms`` (dead-lettered ones follow their queue's DLQ
  ``maxAge``), with their logs and the edges that dead dependents kept
  towards the failed ones;
* outbox events older than ``retention_events_ms``, and beyond the newest
  ``retention_events_per_queue`` of each queue: only of transactions below
  the commit-safe horizon of the previous pass (no reader is left behind),
  as a prefix of each queue in ``(xid, id)`` order, raising the queue's prune
  mark in the same statement (a reader that had not reached them gets a
  ``gap`` event, see :mod:`pgqueue.manager.outbox`);
* workers not seen for ``worker_stale_ms``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from pgqueue.db.executor import Executor
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.errors import ValidationError
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.periodic import Periodic
from pgqueue.manager.context import EngineContext
from pgqueue.manager.lost_dependencies import drop_dangling_edges
from pgqueue.vocabulary.names import validate_queue_name

__all__ = ["Retention", "RetentionReport", "retain_once", "trim_events", "trim_queue_events"]

log = logging.getLogger("pgqueue.retention")

BATCH = 5_000


@dataclass(slots=True)
class RetentionReport:
    finished: int = 0
    hidden: int = 0
    events: int = 0
    workers: int = 0


async def _prune_finished_batch(tx: Executor, ctx: EngineContext, now: datetime | None) -> int:
    row = await tx.fetchrow(
        Q.finished_prune,
        namespace=ctx.namespace,
        completed_ms=ctx.config.retention_completed_ms,
        failed_ms=ctx.config.retention_failed_ms,
        limit=BATCH,
        now=now,
    )
    assert row is not None
    await drop_dangling_edges(tx, ctx, list(row["failed_ids"]))
    return int(row["pruned"])


async def _prune_finished(ctx: EngineContext, now: datetime | None) -> int:
    total = 0
    while True:
        done = await in_transaction(ctx.db, partial(_prune_finished_batch, ctx=ctx, now=now))
        total += done
        if done < BATCH:
            return total


async def _apply_keep(ctx: EngineContext, now: datetime | None) -> int:
    """Hide the finished jobs their count / age removal policy no longer keeps."""
    total = 0
    while True:
        done = int(
            await ctx.db.fetchval(
                Q.finished_keep_trim, namespace=ctx.namespace, limit=BATCH, now=now
            )
        )
        total += done
        if done < BATCH:
            return total


async def trim_events(ctx: EngineContext, queue: str, max_length: int) -> int:
    """A caller's trim of ``queue`` to its newest ``max_length`` events (checked)."""
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 0:
        raise ValidationError("maxLength must be a non-negative integer", field="maxLength")
    return await trim_queue_events(ctx, validate_queue_name(queue), max_length)


async def trim_queue_events(
    ctx: EngineContext, queue: str, keep: int, horizon: int | None = None
) -> int:
    """Keep only the newest ``keep`` events of ``queue`` (whole transactions, and
    never past the commit-safe horizon); returns how many went."""
    removed = 0
    while True:
        rows = await ctx.scoped.fetch(
            Q.event_trim_queue_returning, queue=queue, keep=keep, limit=BATCH, horizon=horizon
        )
        removed += len(rows)
        if len(rows) < BATCH:
            return removed


async def retain_once(
    ctx: EngineContext, horizon: int | None = None, now: datetime | None = None
) -> RetentionReport:
    """One retention pass (see the module docstring).  Events are deleted only
    below the commit-safe horizon, and below ``horizon`` when given.

    ``now`` is the instant the ages of finished jobs, events and workers are
    measured against: ``None`` (every production pass) is the database clock;
    a test passes a later instant to move time instead of rewriting rows."""
    config = ctx.config
    report = RetentionReport()
    await ctx.db.execute(Q.queue_register_held, namespace=ctx.namespace)
    report.hidden = await _apply_keep(ctx, now)
    report.finished = await _prune_finished(ctx, now)
    while True:
        row = await ctx.db.fetchrow(
            Q.event_prune_old_returning,
            namespace=ctx.namespace,
            max_age_ms=config.retention_events_ms,
            window=BATCH,
            horizon=horizon,
            now=now,
        )
        assert row is not None
        report.events += row["pruned"]
        if row["scanned"] < BATCH or row["pruned"] < row["scanned"]:
            break  # the window held the newest events, or events still to keep
    for row in await ctx.db.fetch(Q.event_queues, namespace=ctx.namespace):
        report.events += await trim_queue_events(
            ctx, row["queue"], config.retention_events_per_queue, horizon
        )
    report.workers = len(
        await ctx.db.fetch(
            Q.worker_prune_stale,
            namespace=ctx.namespace,
            worker_stale_ms=config.worker_stale_ms,
            now=now,
        )
    )
    return report


class Retention(Periodic[RetentionReport]):
    """Runs :func:`retain_once` every ``retention_interval_ms`` while this broker leads."""

    name = "retention"
    what = "retention pass"
    log = log

    def __init__(self, ctx: EngineContext, elector: LeaderElector) -> None:
        super().__init__(ctx, elector, ctx.config.retention_interval_ms, RetentionReport())
        self._horizon: int | None = None

    async def pass_once(self) -> RetentionReport:
        # Events go only below the horizon of the previous pass: every reader
        # (polling at least every poll interval) has passed it.
        upcoming = int(await self._ctx.db.fetchval(Q.event_retention_horizon))
        report = await retain_once(self._ctx, self._horizon)
        self._horizon = upcoming
        return report
