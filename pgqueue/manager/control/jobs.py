"""Job control: cancel, update data, re-prioritise, promote, discard.

Each write is one compare-and-set statement with its outbox event and NOTIFY
hint; when it changes nothing, a probe says why (bunqueue's error strings).

**Cancel of an active job** ends it at once (see :func:`remove`); its worker
learns at its next heartbeat (``ItemOutcome.reason == "cancelled"``).

**Cancel and dependencies.**  A job that live jobs still wait on (a flow
child whose parent waits, a ``dependsOn`` target, a failed job whose
dependents wait for a redrive) is *not* removed: the call fails with
:class:`InvalidState` saying how many jobs wait on it.  Removing it would
strand them (they would wait for a completion that can never come), and
counting it as resolved would run them without what they waited for.  Remove
the dependents first.  A removed dependent drops its own edges; the jobs it
waited on are untouched.  The check runs in the transaction that locked the
job, as a second statement with a fresh snapshot, so an admission adding a
dependency concurrently is either seen or finds the job gone.
"""

from __future__ import annotations

from typing import Any

from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.errors import InvalidState, JobNotFound, LeaseLost
from pgqueue.manager import reads
from pgqueue.manager.arguments import check_bool, check_int, check_token
from pgqueue.manager.completion import DeadLetter, dead_letter_locked
from pgqueue.manager.context import EngineContext
from pgqueue.manager.control.probe import fenced, not_active, probe
from pgqueue.manager.lost_dependencies import drop_dangling_edges
from pgqueue.manager.options import encode_json
from pgqueue.vocabulary.names import validate_job_id, validate_queue_name

__all__ = [
    "CANCEL_ERROR",
    "PRIORITY_ERROR",
    "PROMOTE_ERROR",
    "UPDATE_ERROR",
    "change_priority",
    "discard",
    "promote",
    "promote_jobs",
    "remove",
    "update_data",
]

CANCEL_ERROR = "Job not found or cannot be cancelled"
UPDATE_ERROR = "Job not found or cannot be updated"
PRIORITY_ERROR = "Job not found or not in queue"
PROMOTE_ERROR = "Job not found or not delayed"
PRIORITY_LIMIT = 1_000_000
PROMOTE_BATCH = 1_000
MAX_PROMOTE_COUNT = 10_000_000


def _blocked(job_id: str, blockers: int) -> InvalidState:
    return InvalidState(
        f"{CANCEL_ERROR}: {blockers} live job(s) depend on job {job_id}; remove them first",
        field="id",
    )


async def _missed(ctx: EngineContext, job_id: str, message: str) -> None:
    """Raise for a compare-and-set on ``job_id`` that changed nothing."""
    if await reads.get_state(ctx, job_id) == "unknown":
        raise JobNotFound(job_id, message)
    raise InvalidState(message, field="id")


async def remove(ctx: EngineContext, job_id: str) -> None:
    """Cancel a job: waiting, delayed, waiting for children, active, or finished.

    A completed job is hidden (its completion proof stays for later
    ``dependsOn``); a failed one is deleted with its DLQ entry.  An active
    job ends at once (whoever holds its lease): it leaves a hidden finished
    row (failed, reason ``cancelled``) by which its worker's next heartbeat
    learns it was cancelled, and its late ACK or FAIL is already-finalized.
    Logs go too.
    """
    validate_job_id(job_id, "id")
    ctx.session.check()

    async def body(tx: Executor) -> list[Row] | None:
        db = ctx.scope(tx)
        locked = await db.fetchrow(Q.job_lock_one, job_id=job_id, token=None)
        if locked is None:
            return None
        if locked["stored_state"] == "active":
            return await db.fetch(Q.job_cancel_active, id=job_id, fence=locked["fence"])
        return await db.fetch(
            Q.job_delete_many,
            ids=[job_id],
            fences=[locked["fence"]],
            expected_states=[locked["stored_state"]],
            reason="cancel",
        )

    rows = await in_transaction(ctx.db, body)
    if rows is None:
        await _remove_finished(ctx, job_id)
        return
    for row in rows:
        if row["outcome"] == "blocked":
            raise _blocked(job_id, row["blockers"])
    if not rows:  # pragma: no cover - the row was locked, so the delete cannot miss
        raise InvalidState(CANCEL_ERROR, field="id")


async def _remove_finished(ctx: EngineContext, job_id: str) -> None:
    async def remove_in(tx: Executor) -> Row | None:
        row = await ctx.scope(tx).fetchrow(Q.job_finished_remove, job_id=job_id)
        if row is not None and row["removed"]:
            await drop_dangling_edges(tx, ctx, [job_id])
        return row

    row = await in_transaction(ctx.db, remove_in)
    if row is None:
        raise JobNotFound(job_id, CANCEL_ERROR)
    if not row["removed"]:
        raise _blocked(job_id, row["blockers"])


async def update_data(ctx: EngineContext, job_id: str, data: Any) -> None:
    """Replace the data of a live job (waiting, delayed, active, waiting for children)."""
    validate_job_id(job_id, "id")
    text = encode_json(data, label="data", limit=ctx.config.max_payload_bytes)
    ctx.session.check()
    if await ctx.scoped.fetchrow(Q.job_update_data, job_id=job_id, text=text) is None:
        await _missed(ctx, job_id, UPDATE_ERROR)


async def change_priority(
    ctx: EngineContext, job_id: str, priority: int, lifo: bool | None = None
) -> None:
    """Change a pending job's priority (and LIFO flag); it keeps its place in time."""
    validate_job_id(job_id, "id")
    value = check_int(priority, "priority", -PRIORITY_LIMIT, PRIORITY_LIMIT)
    if lifo is not None:
        check_bool(lifo, "lifo")
    ctx.session.check()
    row = await ctx.scoped.fetchrow(Q.job_change_priority, job_id=job_id, priority=value, lifo=lifo)
    if row is None:
        await _missed(ctx, job_id, PRIORITY_ERROR)


async def promote(ctx: EngineContext, job_id: str) -> None:
    """A delayed job becomes due now."""
    validate_job_id(job_id, "id")
    ctx.session.check()
    if await ctx.scoped.fetchrow(Q.job_promote, job_id=job_id) is None:
        await _missed(ctx, job_id, PROMOTE_ERROR)


async def promote_jobs(ctx: EngineContext, queue: str, count: int | None = None) -> int:
    """Make up to ``count`` delayed jobs of ``queue`` due now (all when None), soonest first."""
    validate_queue_name(queue)
    limit = MAX_PROMOTE_COUNT if count is None else check_int(count, "count", 1, MAX_PROMOTE_COUNT)
    ctx.session.check()
    total = 0
    while total < limit:
        batch = min(PROMOTE_BATCH, limit - total)
        row = await ctx.scoped.fetchrow(Q.job_promote_queue, queue=queue, limit=batch)
        promoted = int(row["promoted"]) if row is not None else 0
        total += promoted
        if promoted < batch:
            break
    return total


async def discard(ctx: EngineContext, job_id: str, token: str | None = None) -> None:
    """Dead-letter a live job now (reason ``explicit_fail``), without retries.

    With ``token`` the job must be active under that lock token (the worker
    gives up on it); without, an operator discards any live job.
    """
    validate_job_id(job_id, "id")
    if token is not None:
        check_token(token)
    ctx.session.check()

    async def body(tx: Executor) -> int | None:
        locked = await ctx.scope(tx).fetchrow(Q.job_lock_one, job_id=job_id, token=token)
        if locked is None:
            return None
        if token is not None and locked["stored_state"] != "active":
            raise not_active(locked["state"])
        if token is not None and not locked["lease_valid"]:
            raise LeaseLost(job_id)
        entry = DeadLetter(
            job_id,
            locked["queue"],
            locked["fence"],
            locked["stored_state"],
            "explicit_fail",
            "Job discarded",
            None,
            0,
        )
        return len(await dead_letter_locked(tx, ctx, [entry]))

    done = await in_transaction(ctx.db, body)
    if done is None:
        found = await probe(ctx, job_id)
        if found is None:
            raise JobNotFound(job_id)
        raise InvalidState(f"Job {job_id} is already {found.state}", field="id")
    if done == 0:
        raise fenced(ctx)
