"""The DLQ operations as a caller asks for them: checked, then read, redriven or purged.

Each function validates its arguments (queue, job ids, actor, reason, the
selection) and calls the flow that owns the work: :mod:`~pgqueue.manager.dlq.reads`,
:mod:`~pgqueue.manager.dlq.redrive` or :mod:`~pgqueue.manager.dlq.settings`.
:class:`~pgqueue.manager.dlq.ops.DlqOps` forwards to them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from pgqueue.errors import DuplicateJob, InvalidState, ValidationError
from pgqueue.manager.context import EngineContext
from pgqueue.manager.dlq import reads as dlq_reads
from pgqueue.manager.dlq import redrive as redrive_flows
from pgqueue.manager.dlq import settings as queue_settings
from pgqueue.manager.dlq.models import DlqAuditRecord, DlqEntry, DlqStats
from pgqueue.manager.dlq.policy import (
    MAX_LIST_LIMIT,
    DlqConfig,
    DlqSelection,
    StallConfig,
    build_filter,
    validate_actor,
    validate_dlq_config_patch,
    validate_stall_config_patch,
    validate_why,
)
from pgqueue.manager.dlq.redrive import Audit
from pgqueue.vocabulary.names import validate_job_id, validate_queue_name

__all__ = [
    "dlq_audit",
    "dlq_stats",
    "get_dlq_config",
    "get_stall_config",
    "list_dlq",
    "purge_dlq",
    "redrive",
    "remove_dlq_job",
    "retry_job",
    "set_dlq_config",
    "set_stall_config",
]


async def list_dlq(
    ctx: EngineContext,
    queue: str,
    *,
    limit: int = 100,
    offset: int = 0,
    **selection: Unpack[DlqSelection],
) -> list[DlqEntry]:
    """One page of ``queue``'s dead-letter entries (of the :class:`DlqSelection`),
    oldest first."""
    validate_queue_name(queue)
    chosen = build_filter(limit=limit, max_limit=MAX_LIST_LIMIT, **selection)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValidationError("offset must be a non-negative integer", field="offset")
    return await dlq_reads.list_entries(ctx, queue, chosen, offset)


async def count_dlq(ctx: EngineContext, queue: str, **selection: Unpack[DlqSelection]) -> int:
    """How many of ``queue``'s dead-letter entries :func:`list_dlq` selects, paging aside."""
    validate_queue_name(queue)
    return await dlq_reads.count_entries(ctx, queue, build_filter(**selection))


async def dlq_stats(ctx: EngineContext, queue: str | None = None) -> DlqStats:
    """Entry counts by reason (every reason, zeros too), pending auto-retries,
    expired entries, oldest and newest entry; of one queue or (None) all."""
    if queue is not None:
        validate_queue_name(queue)
    return await dlq_reads.stats(ctx, queue)


async def redrive(
    ctx: EngineContext,
    queue: str,
    *,
    actor: str,
    job_id: str | None = None,
    job_ids: Sequence[str] | None = None,
    limit: int | None = None,
    why: str | None = None,
    **selection: Unpack[DlqSelection],
) -> int:
    """Send dead-lettered jobs of ``queue`` (those of ``job_ids`` and the
    :class:`DlqSelection`) back to waiting; return how many moved.

    No selection at all redrives every entry of the queue.  One statement
    (set-based), one audit row, one ``redriven`` event per job.
    """
    validate_queue_name(queue)
    actor = validate_actor(actor)
    why = validate_why(why)
    if job_id is not None:
        job_ids = [validate_job_id(job_id, "jobId"), *(job_ids or ())]
    chosen = build_filter(job_ids=job_ids, limit=limit, **selection)
    audit = Audit("redrive", actor, why)
    result = await redrive_flows.redrive_entries(ctx, queue, chosen, audit)
    return result.count


async def retry_job(ctx: EngineContext, job_id: str, *, actor: str, why: str | None = None) -> bool:
    """Redrive one dead-lettered job by id (whatever its queue); False if not in the DLQ.

    Raises :class:`DuplicateJob` when a live job holds the id (the entry stays).
    """
    validate_job_id(job_id, "jobId")
    actor = validate_actor(actor)
    why = validate_why(why)
    queue = await redrive_flows.entry_queue(ctx, job_id)
    if queue is None:
        return False
    result = await redrive_flows.redrive_entries(
        ctx, queue, build_filter(job_ids=[job_id]), Audit("redrive", actor, why)
    )
    if result.skipped:
        raise DuplicateJob(
            f"Job {job_id} stays in the DLQ: a live job holds its id", existing_id=job_id
        )
    return result.count == 1


async def purge_dlq(
    ctx: EngineContext, queue: str, *, actor: str, why: str | None = None, reason: str | None = None
) -> int:
    """Delete ``queue``'s dead-letter entries (of one ``reason``, if given) and their
    failed jobs, except those live jobs wait on; return how many."""
    validate_queue_name(queue)
    actor = validate_actor(actor)
    why = validate_why(why)
    result = await redrive_flows.delete_entries(
        ctx, queue, build_filter(reason=reason), Audit("purge", actor, why)
    )
    return result.count


async def remove_dlq_job(
    ctx: EngineContext, queue: str, job_id: str, *, actor: str, why: str | None = None
) -> bool:
    """Delete one dead-letter entry and its failed job; False when there was none.

    Refused (:class:`~pgqueue.errors.InvalidState`, nothing written) while
    live jobs wait on the job."""
    validate_queue_name(queue)
    validate_job_id(job_id, "jobId")
    actor = validate_actor(actor)
    why = validate_why(why)
    blockers = await dlq_reads.entry_blockers(ctx, queue, job_id)
    if blockers:
        raise InvalidState(
            f"Cannot remove DLQ entry: {blockers} live job(s) depend on job {job_id};"
            " redrive it or remove them first",
            field="jobId",
        )
    result = await redrive_flows.delete_entries(
        ctx, queue, build_filter(job_ids=[job_id]), Audit("remove", actor, why)
    )
    return result.count == 1


async def dlq_audit(
    ctx: EngineContext, queue: str | None = None, limit: int = 100
) -> list[DlqAuditRecord]:
    """The newest audited DLQ operations (of one queue, or all), newest first."""
    if queue is not None:
        validate_queue_name(queue)
    limit_checked = build_filter(limit=limit, max_limit=MAX_LIST_LIMIT).limit
    assert limit_checked is not None
    return await dlq_reads.audit_records(ctx, queue, limit_checked)


async def get_dlq_config(ctx: EngineContext, queue: str) -> DlqConfig:
    """``queue``'s DLQ settings, defaults filled in (wire names)."""
    return await queue_settings.get_dlq_config(ctx, validate_queue_name(queue))


async def set_dlq_config(ctx: EngineContext, queue: str, config: Mapping[str, Any]) -> DlqConfig:
    """Change some of ``queue``'s DLQ settings (``autoRetry``, ``autoRetryInterval``,
    ``maxAutoRetries``, ``maxAge`` (ms or None), ``maxEntries``); others keep their
    value.  Returns the settings now in force."""
    validate_queue_name(queue)
    patch = validate_dlq_config_patch(config)
    return await queue_settings.set_dlq_config(ctx, queue, patch)


async def get_stall_config(ctx: EngineContext, queue: str) -> StallConfig:
    """``queue``'s stall-detection settings, defaults filled in (wire names)."""
    return await queue_settings.get_stall_config(ctx, validate_queue_name(queue))


async def set_stall_config(
    ctx: EngineContext, queue: str, config: Mapping[str, Any]
) -> StallConfig:
    """Change some of ``queue``'s stall settings (``enabled``, ``stallInterval``,
    ``maxStalls``, ``gracePeriod``); others keep their value."""
    validate_queue_name(queue)
    patch = validate_stall_config_patch(config)
    return await queue_settings.set_stall_config(ctx, queue, patch)
