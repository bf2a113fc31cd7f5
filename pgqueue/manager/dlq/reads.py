"""DLQ reads: entries (paged, filtered), statistics by reason, the audit trail.

Listing walks ``pgqueue_dlq`` in entry order through its ``(namespace, queue,
entered_at, job_id)`` index (or the reason index when a reason is given) and
joins each entry's failed row in ``pgqueue_finished``.  Schedules and
expiries derive from the queue's *current* DLQ config, on the database clock.
"""

from __future__ import annotations

from typing import Any

import orjson

from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext
from pgqueue.manager.dlq.models import DlqAuditRecord, DlqEntry, DlqStats
from pgqueue.manager.dlq.policy import DEFAULT_DLQ_CONFIG, DLQ_REASONS, DlqFilter
from pgqueue.manager.rows import job_from_row, json_or_none, ms

__all__ = [
    "DEFAULT_DLQ_CONFIG_JSON",
    "audit_records",
    "count_entries",
    "entry_blockers",
    "list_entries",
    "selection_params",
    "stats",
]

DEFAULT_DLQ_CONFIG_JSON = orjson.dumps(DEFAULT_DLQ_CONFIG).decode()


SELECTION_PARAMS = (
    "job_ids",
    "reason",
    "older_than_ms",
    "newer_than_ms",
    "retriable",
    "expired",
    "limit",
    "now",
)
"""The names of the DLQ queries' selection parameters, in :meth:`DlqFilter.args` order."""


def selection_params(selection: DlqFilter) -> dict[str, Any]:
    """A selection as the named parameters of ``dlq_list`` / ``dlq_redrive`` / ``dlq_delete``."""
    return dict(zip(SELECTION_PARAMS, selection.args(), strict=True))


async def list_entries(
    ctx: EngineContext, queue: str, selection: DlqFilter, offset: int = 0
) -> list[DlqEntry]:
    """One page of a queue's DLQ, oldest entry first."""
    rows = await ctx.scoped.fetch(
        Q.dlq_list,
        queue=queue,
        **selection_params(selection),
        default_config=DEFAULT_DLQ_CONFIG_JSON,
        offset=offset,
    )
    return [
        DlqEntry(
            job=job_from_row(row, state="failed"),
            entered_at=row["entered_at"].timestamp() * 1000.0,
            reason=row["reason"],
            error=row["dlq_error"],
            attempts=orjson.loads(row["dlq_attempts"]),
            retry_count=row["retry_count"],
            last_retry_at=ms(row["last_retry_at"]),
            next_retry_at=ms(row["next_retry_at"]),
            expires_at=ms(row["expires_at"]),
        )
        for row in rows
    ]


async def count_entries(ctx: EngineContext, queue: str, selection: DlqFilter) -> int:
    """How many entries of a queue's DLQ the selection holds (paging aside)."""
    params = selection_params(selection)
    del params["limit"]
    total = await ctx.scoped.fetchval(
        Q.dlq_count, queue=queue, **params, default_config=DEFAULT_DLQ_CONFIG_JSON
    )
    return int(total or 0)


async def stats(ctx: EngineContext, queue: str | None) -> DlqStats:
    """Counts of one queue's DLQ (or the namespace's, ``queue`` None)."""
    rows = await ctx.scoped.fetch(Q.dlq_stats, queue=queue, defaults=DEFAULT_DLQ_CONFIG_JSON)
    by_reason: dict[str, int] = dict.fromkeys(DLQ_REASONS, 0)
    by_queue: dict[str, int] = {queue: 0} if queue is not None else {}
    pending = expired = 0
    oldest: float | None = None
    newest: float | None = None
    for row in rows:
        reason = row["reason"] if row["reason"] in by_reason else "unknown"
        by_reason[reason] += row["total"]
        by_queue[row["queue"]] = by_queue.get(row["queue"], 0) + row["total"]
        pending += row["pending_retry"]
        expired += row["expired"]
        oldest = row["oldest"] if oldest is None else min(oldest, row["oldest"])
        newest = row["newest"] if newest is None else max(newest, row["newest"])
    return DlqStats(
        total=sum(by_reason.values()),
        by_reason=by_reason,
        by_queue=by_queue,
        pending_retry=pending,
        expired=expired,
        oldest_entry=oldest,
        newest_entry=newest,
    )


async def audit_records(ctx: EngineContext, queue: str | None, limit: int) -> list[DlqAuditRecord]:
    """The newest audited DLQ operations first."""
    rows = await ctx.scoped.fetch(Q.dlq_audit_list, queue=queue, limit=limit)
    return [
        DlqAuditRecord(
            id=row["id"],
            at=row["at"].timestamp() * 1000.0,
            actor=row["actor"],
            action=row["action"],
            queue=row["queue"],
            job_ids=list(row["job_ids"]),
            filter=json_or_none(row["filter"]),
            reason=row["reason"],
            count=row["count"],
        )
        for row in rows
    ]


async def entry_blockers(ctx: EngineContext, queue: str, job_id: str) -> int | None:
    """How many live jobs wait on dead-lettered ``job_id`` of ``queue`` (None: no entry)."""
    value = await ctx.scoped.fetchrow(Q.dlq_entry_blockers, queue=queue, job_id=job_id)
    return None if value is None else int(value["blockers"])
