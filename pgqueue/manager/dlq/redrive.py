"""DLQ writes: redrive (manual or auto-retry) and delete (purge, remove, expire).

Each operation is ONE statement (``dlq_redrive`` / ``dlq_delete``): it picks
the entries with ``FOR UPDATE SKIP LOCKED`` in entry order, moves or deletes
them together with their failed rows, writes one outbox event per job, ONE
audit row and one ``dlq_audit`` event, and sends the NOTIFY hint.  Two
operations racing for an entry never both act on it: the second skips the
locked row, or finds it gone.  A delete is followed, in its transaction, by
:func:`~pgqueue.manager.lost_dependencies.drop_dangling_edges`: dead
dependents of a deleted job no longer wait for it.

A redriven job is pending and due now: attempts and stall count start from
zero, its fence is kept (the next claim increments it, so tokens of its dead
claims stay stale), its attempt log is kept, its TTL window starts again and
its unique key is cleared.  Clearing the key is deliberate: dedup guards
admission, and while the job sat in the DLQ another job may have taken the
key; a redrive is an operator's decision about one known job, never a
duplicate admission.  A job whose dependencies are still unresolved goes
back to ``waiting-children``.  An entry whose id a live job holds (a custom
id re-admitted beside it, e.g. by an older version) is skipped and stays in
the DLQ: the others move, and the result names the skipped ones.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

import orjson

from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q, Query
from pgqueue.db.retry import in_transaction
from pgqueue.manager.context import EngineContext
from pgqueue.manager.dlq.models import RedriveResult
from pgqueue.manager.dlq.policy import DlqFilter
from pgqueue.manager.dlq.reads import DEFAULT_DLQ_CONFIG_JSON, selection_params
from pgqueue.manager.lost_dependencies import drop_dangling_edges

__all__ = [
    "REDRIVE_ACTIONS",
    "REMOVE_ACTIONS",
    "Audit",
    "delete_entries",
    "entry_queue",
    "redrive_entries",
]

log = logging.getLogger("pgqueue.dlq")

REDRIVE_ACTIONS = ("redrive", "auto_retry")
REMOVE_ACTIONS = ("purge", "remove", "expire")


class Audit(NamedTuple):
    """Who acts and why, as the one audit row of an operation records it:
    ``action`` (one of :data:`REDRIVE_ACTIONS` or :data:`REMOVE_ACTIONS`),
    ``actor``, ``why``; ``audit_when_empty``: a row also when nothing was
    selected; ``recorded``: the selection as recorded (``None``: the filter's
    own :meth:`~pgqueue.manager.dlq.policy.DlqFilter.record`)."""

    action: str
    actor: str
    why: str | None = None
    audit_when_empty: bool = True
    recorded: dict[str, Any] | None = None


async def _run(
    ex: Executor,
    ctx: EngineContext,
    query: Query,
    queue: str,
    selection: DlqFilter,
    audit: Audit,
) -> RedriveResult:
    ctx.session.check()
    action = audit.action
    record = selection.record() if audit.recorded is None else audit.recorded
    row: Row | None = await ex.fetchrow(
        query,
        namespace=ctx.namespace,
        queue=queue,
        **selection_params(selection),
        default_config=DEFAULT_DLQ_CONFIG_JSON,
        action=action,
        actor=audit.actor,
        why=audit.why,
        recorded=orjson.dumps(record).decode(),
        audit_when_empty=audit.audit_when_empty,
    )
    assert row is not None
    skipped = list(row.get("skipped") or ())
    if skipped:
        log.warning(
            "%s of queue %s left %d DLQ entries whose id a live job holds: %s",
            action,
            queue,
            len(skipped),
            ", ".join(skipped[:20]),
        )
    return RedriveResult(job_ids=list(row["ids"]), audit_id=row["audit_id"], skipped=skipped)


async def redrive_entries(
    ctx: EngineContext, queue: str, selection: DlqFilter, audit: Audit
) -> RedriveResult:
    """Move the selected entries' jobs back to waiting (see the module docstring)."""
    if audit.action not in REDRIVE_ACTIONS:
        raise ValueError(f"not a redrive action: {audit.action!r}")
    return await _run(ctx.db, ctx, Q.dlq_redrive, queue, selection, audit)


async def delete_entries(
    ctx: EngineContext, queue: str, selection: DlqFilter, audit: Audit
) -> RedriveResult:
    """Delete the selected entries and their failed jobs."""
    if audit.action not in REMOVE_ACTIONS:
        raise ValueError(f"not a delete action: {audit.action!r}")

    async def delete_in(tx: Executor) -> RedriveResult:
        result = await _run(tx, ctx, Q.dlq_delete, queue, selection, audit)
        await drop_dangling_edges(tx, ctx, result.job_ids)
        return result

    return await in_transaction(ctx.db, delete_in)


async def entry_queue(ctx: EngineContext, job_id: str) -> str | None:
    """The queue whose DLQ holds ``job_id``, or None."""
    value = await ctx.db.fetchval(Q.dlq_entry_queue, namespace=ctx.namespace, job_id=job_id)
    return None if value is None else str(value)
