"""DLQ upkeep on the leader: auto-retries, ``maxAge`` and ``maxEntries``.

Every pass reads, per queue with dead-letter entries, its DLQ config and how
many entries it has, how many are expired and how many are due; then

1. deletes the entries older than ``maxAge`` (action ``expire``),
2. deletes the oldest entries beyond ``maxEntries`` (action ``expire``),
3. redrives the entries due for an auto-retry (action ``auto_retry``): the
   first is due ``autoRetryInterval`` after the entry, the next ones
   ``autoRetryInterval * 2^(n-1)`` after retry *n*, at most ``maxAutoRetries``
   per chain.  An auto-retried job that fails again re-enters the DLQ with
   its chain (the retry count travels on the live job).

Each batch is one audited statement (:mod:`pgqueue.manager.dlq.redrive`), with
actor :data:`UPKEEP_ACTOR`.  Everything is measured on the database clock
(a test moves time with ``now``: the instant ages and due-ness are judged at).
``maxEntries`` is enforced by the upkeep, so a queue may briefly hold more
entries between two passes.

Neither ``maxAge`` nor ``maxEntries`` deletes an entry whose job live jobs
still wait on (a flow parent, a ``dependsOn`` job): deleting it would leave
them waiting for a job that can no longer be redriven.  Such an entry stays,
past its age and beyond the cap, until it is redriven or its dependents are
gone; the trim takes the oldest entries nobody waits for instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from pgqueue.db.queries import Q
from pgqueue.maintenance.leader import LeaderElector
from pgqueue.maintenance.periodic import Periodic
from pgqueue.manager.context import EngineContext
from pgqueue.manager.dlq.models import RedriveResult
from pgqueue.manager.dlq.policy import DlqConfig, DlqFilter, complete_dlq_config
from pgqueue.manager.dlq.reads import DEFAULT_DLQ_CONFIG_JSON
from pgqueue.manager.dlq.redrive import Audit, delete_entries, redrive_entries

__all__ = [
    "DLQ_UPKEEP_INTERVAL_MS_DEFAULT",
    "UPKEEP_ACTOR",
    "DlqUpkeep",
    "DlqUpkeepReport",
    "dlq_upkeep_once",
]

log = logging.getLogger("pgqueue.dlq")

DLQ_UPKEEP_INTERVAL_MS_DEFAULT = 10_000
UPKEEP_ACTOR = "pgqueue:dlq-upkeep"


@dataclass(slots=True)
class DlqUpkeepReport:
    """What one pass did."""

    auto_retried: int = 0
    expired: int = 0
    trimmed: int = 0

    @property
    def total(self) -> int:
        return self.auto_retried + self.expired + self.trimmed


def _audit(action: str, why: str, recorded: dict[str, Any]) -> Audit:
    """The audit of an upkeep batch: by :data:`UPKEEP_ACTOR`, none when it did nothing."""
    return Audit(action, UPKEEP_ACTOR, why, audit_when_empty=False, recorded=recorded)


async def _in_batches(
    step: Callable[[int], Awaitable[RedriveResult]], batch: int, most: int | None = None
) -> int:
    """Run ``step(limit)`` batch after batch until one comes back short (or
    ``most`` entries are done); return how many entries it acted on."""
    done = 0
    while most is None or done < most:
        limit = batch if most is None else min(batch, most - done)
        count = (await step(limit)).count
        done += count
        if count < limit:
            break
    return done


async def _expire(
    ctx: EngineContext, queue: str, config: DlqConfig, batch: int, now: datetime | None
) -> int:
    def step(limit: int) -> Awaitable[RedriveResult]:
        return delete_entries(
            ctx,
            queue,
            DlqFilter(expired=True, limit=limit, now=now),
            _audit("expire", "maxAge", {"expired": True, "maxAge": config["maxAge"]}),
        )

    return await _in_batches(step, batch)


async def _trim(ctx: EngineContext, queue: str, config: DlqConfig, excess: int, batch: int) -> int:
    def step(limit: int) -> Awaitable[RedriveResult]:
        return delete_entries(
            ctx,
            queue,
            DlqFilter(limit=limit),
            _audit("expire", "maxEntries", {"maxEntries": config["maxEntries"], "limit": limit}),
        )

    return await _in_batches(step, batch, most=excess)


async def _auto_retry(
    ctx: EngineContext, queue: str, config: DlqConfig, batch: int, now: datetime | None
) -> int:
    recorded = {
        "retriable": True,
        "autoRetryInterval": config["autoRetryInterval"],
        "maxAutoRetries": config["maxAutoRetries"],
    }

    def step(limit: int) -> Awaitable[RedriveResult]:
        return redrive_entries(
            ctx,
            queue,
            DlqFilter(retriable=True, limit=limit, now=now),
            _audit("auto_retry", "autoRetry", recorded),
        )

    return await _in_batches(step, batch)


async def dlq_upkeep_once(
    ctx: EngineContext, *, batch: int | None = None, now: datetime | None = None
) -> DlqUpkeepReport:
    """One pass over every queue's DLQ (see the module docstring); ``now``:
    the instant entries' ages and due-ness are judged at (``None``: the
    database clock)."""
    batch = batch or ctx.config.reaper_batch
    report = DlqUpkeepReport()
    rows = await ctx.db.fetch(
        Q.dlq_upkeep_queues, namespace=ctx.namespace, defaults=DEFAULT_DLQ_CONFIG_JSON, now=now
    )
    for row in rows:
        queue = row["queue"]
        config = complete_dlq_config(orjson.loads(row["config"]))
        total = int(row["total"])
        if row["expired"] and config["maxAge"] is not None:
            expired = await _expire(ctx, queue, config, batch, now)
            report.expired += expired
            total -= expired
        if total > config["maxEntries"]:
            report.trimmed += await _trim(ctx, queue, config, total - config["maxEntries"], batch)
        if row["due"] and config["autoRetry"]:
            report.auto_retried += await _auto_retry(ctx, queue, config, batch, now)
    return report


class DlqUpkeep(Periodic[DlqUpkeepReport]):
    """Runs :func:`dlq_upkeep_once` every ``interval_ms`` while this broker leads."""

    name = "dlq-upkeep"
    what = "DLQ upkeep pass"
    log = log

    def __init__(
        self,
        ctx: EngineContext,
        elector: LeaderElector,
        *,
        interval_ms: int = DLQ_UPKEEP_INTERVAL_MS_DEFAULT,
    ) -> None:
        if interval_ms < 10:
            raise ValueError("interval_ms must be at least 10")
        super().__init__(ctx, elector, interval_ms, DlqUpkeepReport())

    async def pass_once(self) -> DlqUpkeepReport:
        report = await dlq_upkeep_once(self._ctx)
        if report.total:
            log.info("DLQ upkeep: %s", report)
        return report
