"""The reaper: expired leases and expired TTLs, on every broker, on the database clock.

An active job whose lease ended was abandoned (its worker or broker died or
froze) or ran past its ``timeout``.  The reaper locks such jobs with ``SKIP
LOCKED`` and applies :func:`pgqueue.manager.policy.decide_stall` with the same
compare-and-set on ``(id, state, fence)`` as every other writer (G3, G6): a
worker acking at the same instant either wins the row or is rejected.

Pending jobs whose TTL passed are dead-lettered with reason ``ttl_expired``
(nothing admitted is silently dropped).

Every live broker sweeps, not only the maintenance leader: lease recovery
(G6) must not wait for a dead leader's seat to expire, and the locking with
``SKIP LOCKED`` plus the compare-and-set make concurrent sweeps safe.  Only
the purge of stale session rows stays with the leader.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.periodic import Periodic
from pgqueue.manager.completion import DeadLetter, RequeueRow, dead_letter_locked, requeue
from pgqueue.manager.context import EngineContext
from pgqueue.manager.policy import decide_stall

__all__ = ["ReapReport", "Reaper", "reap_once"]

log = logging.getLogger("pgqueue.reaper")


@dataclass(slots=True)
class ReapReport:
    """What one sweep did."""

    stalled: int = 0
    retried: int = 0
    dead_lettered: int = 0
    ttl_expired: int = 0

    @property
    def total(self) -> int:
        return self.stalled + self.retried + self.dead_lettered + self.ttl_expired


async def _stall_settings(tx: Executor, ctx: EngineContext, rows: list[Row]) -> dict[str, Any]:
    queues = sorted({row["queue"] for row in rows})
    configs = await tx.fetch(Q.queue_stall_configs, namespace=ctx.namespace, queues=queues)
    return {row["queue"]: orjson.loads(row["stall_config"]) for row in configs}


def _entry(row: Row, reason: str, error: str) -> dict[str, Any]:
    started = row["started_at"]
    return {
        "attempt": row["attempts"] + 1,
        "startedAt": started,
        "failedAt": row["now"],
        "reason": reason,
        "error": error,
        "duration": None if started is None else round(row["now"] - started, 3),
    }


@dataclass(frozen=True, slots=True)
class _Batch:
    """One sweep batch: rows locked, and how many of them were written."""

    locked: int
    applied: int


async def _reap_leases_in(
    tx: Executor, *, ctx: EngineContext, report: ReapReport, now: datetime | None
) -> _Batch:
    rows = await tx.fetch(
        Q.job_lock_expired_leases, namespace=ctx.namespace, limit=ctx.config.reaper_batch, now=now
    )
    if not rows:
        return _Batch(0, 0)
    settings = await _stall_settings(tx, ctx, rows)
    requeues: list[RequeueRow] = []
    retry: list[bool] = []  # per requeue: a failed attempt (True) or a stall
    dead: list[DeadLetter] = []
    for row in rows:
        config = settings.get(row["queue"], {})
        decision = decide_stall(
            timed_out=row["timed_out"],
            stall_count=row["stall_count"],
            max_stalls=int(config.get("maxStalls", ctx.config.max_stalls_default)),
            stall_detection=bool(config.get("enabled", True)),
            attempts_before=row["attempts"],
            max_attempts=row["max_attempts"],
            backoff_type=row["backoff_type"],
            backoff_ms=row["backoff_ms"],
            backoff_max_ms=row["backoff_max_ms"],
        )
        error = (
            f"job timed out after {row['timeout_ms']} ms"
            if decision.reason == "timeout"
            else f"lease expired (owner {row['lease_owner'] or '?'} on broker "
            f"{row['lease_broker'] or '?'} stopped renewing)"
        )
        entry = _entry(row, decision.reason, error)
        if decision.action == "dead_letter":
            dead.append(
                DeadLetter.of_row(
                    row,
                    "active",
                    decision.reason,
                    error,
                    entry,
                    int(decision.counts_attempt),
                )
            )
            continue
        if decision.action == "retry":
            event, payload = (
                "failed",
                {
                    "failedReason": error,
                    "reason": "timeout",
                    "terminal": False,
                    "attemptsMade": row["attempts"] + 1,
                    "delay": decision.delay_ms,
                },
            )
        else:
            event, payload = (
                "stalled",
                {
                    "stallCount": row["stall_count"] + int(decision.counts_stall),
                    "owner": row["lease_owner"],
                    "reason": decision.reason,
                },
            )
        retry.append(decision.action == "retry")
        requeues.append(
            RequeueRow(
                row["id"],
                row["fence"],
                "active",
                event,
                payload,
                delay_ms=decision.delay_ms,
                attempts_inc=int(decision.counts_attempt),
                stall_inc=int(decision.counts_stall),
                error=error,
                attempt_entry=entry,
            )
        )
    applied = 0
    if requeues:
        for done in await requeue(tx, ctx, requeues):
            if retry[done["ord"] - 1]:
                report.retried += 1
            else:
                report.stalled += 1
            applied += 1
    if dead:
        dead_lettered = len(await dead_letter_locked(tx, ctx, dead))
        report.dead_lettered += dead_lettered
        applied += dead_lettered
    return _Batch(len(rows), applied)


async def _reap_ttl_in(
    tx: Executor, *, ctx: EngineContext, report: ReapReport, now: datetime | None
) -> _Batch:
    rows = await tx.fetch(
        Q.job_lock_expired_ttl, namespace=ctx.namespace, limit=ctx.config.reaper_batch, now=now
    )
    applied = 0
    if rows:
        done = await dead_letter_locked(
            tx,
            ctx,
            [
                DeadLetter.of_row(
                    row,
                    "pending",
                    "ttl_expired",
                    "the job's TTL passed before it was processed",
                    None,
                    0,
                )
                for row in rows
            ],
        )
        applied = len(done)
        report.ttl_expired += applied
    return _Batch(len(rows), applied)


async def reap_once(ctx: EngineContext, now: datetime | None = None) -> ReapReport:
    """Sweep until no expired lease or TTL is left (each batch its own transaction).

    ``now`` is the instant leases and TTLs are judged against: ``None`` (every
    production sweep) is the database clock; a test passes a later instant to
    move time instead of rewriting rows.  The writes stay on the database clock.

    A full batch of which nothing could be written (the writes check this
    broker's session: a fenced one, whose row was purged, applies nothing)
    ends the sweep: the same rows would be locked again and again.
    """
    report = ReapReport()
    batch = ctx.config.reaper_batch
    for sweep in (_reap_leases_in, _reap_ttl_in):
        while True:
            done = await in_transaction(
                ctx.db, functools.partial(sweep, ctx=ctx, report=report, now=now)
            )
            if done.locked < batch or done.applied == 0:
                break
    return report


class Reaper(Periodic[ReapReport]):
    """Runs :func:`reap_once` every ``reaper_interval_ms`` while this broker's
    session is live; the leader also purges stale session rows (once a minute)."""

    name = "reaper"
    leader_only = False
    what = "reaper sweep"
    log = log

    def __init__(self, ctx: EngineContext, elector: LeaderElector) -> None:
        super().__init__(ctx, elector, ctx.config.reaper_interval_ms, ReapReport())

    async def pass_once(self) -> ReapReport:
        report = await reap_once(self._ctx)
        if self.leaders_minute():
            await self._ctx.db.execute(
                Q.session_purge_stale,
                namespace=self._ctx.namespace,
                stale_ms=self._ctx.config.session_stale_ms * 2,
            )
        return report
