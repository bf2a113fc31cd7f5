"""Leases: heartbeats extend them, releases give jobs back without a penalty.

Every write is a compare-and-set on the job's token with the lease still
valid on the database clock (G3): a heartbeat from a claim that is no
longer current renews nothing and is reported as lost, or as ``cancelled``
when the job was cancelled while that claim held it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pgqueue.db.executor import Executor
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.errors import ValidationError
from pgqueue.manager.completion import RequeueRow, parse_fence, requeue
from pgqueue.manager.context import EngineContext
from pgqueue.manager.models import ItemOutcome
from pgqueue.vocabulary.checks import integer_fault

__all__ = ["extend_leases", "release_jobs", "release_session_leases"]

MAX_LEASE_MS = 86_400_000


async def extend_leases(
    ctx: EngineContext, items: Sequence[tuple[str, str]], duration_ms: int | Sequence[int]
) -> list[ItemOutcome]:
    """Renew the leases of ``(job_id, token)`` pairs; one outcome per item."""
    if not items:
        return []
    ctx.session.check()
    durations = [duration_ms] * len(items) if isinstance(duration_ms, int) else list(duration_ms)
    if len(durations) != len(items):
        raise ValidationError("durations length must match ids length", field="durations")
    for value in durations:
        if integer_fault(value, 1, MAX_LEASE_MS, floats=False) is not None:
            raise ValidationError(
                f"duration must be an integer between 1 and {MAX_LEASE_MS}", field="duration"
            )
    rows = await ctx.db.fetch(
        Q.job_extend_leases,
        namespace=ctx.namespace,
        ids=[job_id for job_id, _ in items],
        tokens=[token for _, token in items],
        durations_ms=durations,
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
    )
    renewed = {row["ord"] - 1 for row in rows}
    missed = [i for i in range(len(items)) if i not in renewed]
    cancelled = await _cancelled(ctx, items, missed, all_missed=not rows) if missed else set()
    return [
        ItemOutcome(job_id, True)
        if i in renewed
        else ItemOutcome(job_id, False, "cancelled" if i in cancelled else "lease-lost")
        for i, (job_id, _) in enumerate(items)
    ]


async def _cancelled(
    ctx: EngineContext, items: Sequence[tuple[str, str]], missed: list[int], *, all_missed: bool
) -> set[int]:
    """Which missed renewals are of jobs cancelled while active (by a token issued
    for them); a batch that renewed nothing also checks this broker's session."""
    probe = await ctx.db.fetch(
        Q.job_outcome_probe,
        namespace=ctx.namespace,
        ids=[items[i][0] for i in missed],
        tokens=[items[i][1] for i in missed],
        broker_id=ctx.broker_id,
        session_id=ctx.session_id,
    )
    if all_missed and probe:
        ctx.session.confirm_live(probe[0]["session_live"])
    return {
        missed[row["ord"] - 1]
        for row in probe
        if row["cancelled"] and row["token_issued"] and row["live_state"] is None
    }


async def release_jobs(
    ctx: EngineContext, items: Sequence[tuple[str, str]], *, reason: str = "released"
) -> list[ItemOutcome]:
    """Give claimed jobs back to waiting at once (no attempt consumed).

    Used when a client connection closes with jobs it pulled, and by workers
    that shut down before running what they pulled.
    """
    if not items:
        return []
    payload = {"reason": reason, "prev": "active"}
    rows = [
        RequeueRow(job_id, parse_fence(token), "active", "retried", payload, token=token)
        for job_id, token in items
    ]
    done = await requeue(ctx.db, ctx, rows)
    released = {row["ord"] - 1 for row in done}
    return [
        ItemOutcome(job_id, i in released, None if i in released else "lease-lost")
        for i, (job_id, _) in enumerate(items)
    ]


async def release_session_leases(ctx: EngineContext, *, batch: int = 1000) -> int:
    """Release every lease held through this broker session (graceful shutdown)."""
    total = 0
    while True:
        released = await in_transaction(
            ctx.db, lambda tx: _release_session_batch_in(tx, ctx, batch)
        )
        total += released
        if released < batch:
            return total


async def _release_session_batch_in(tx: Executor, ctx: EngineContext, batch: int) -> int:
    """Give back up to ``batch`` of the jobs leased through this session."""
    locked = await tx.fetch(
        Q.job_lock_session_leases, namespace=ctx.namespace, session_id=ctx.session_id, limit=batch
    )
    payload = {"reason": "broker_shutdown", "prev": "active"}
    rows = [RequeueRow(row["id"], row["fence"], "active", "retried", payload) for row in locked]
    return len(await requeue(tx, ctx, rows)) if rows else 0
