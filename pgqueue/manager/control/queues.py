"""Queue control: pause and resume, drain, clean, obliterate, retry completed jobs.

Pause is a row in ``pgqueue_queues`` that every broker's claim statement
reads (G7): a paused queue yields no claims anywhere until resumed.

Bulk deletions run in batches, each its own transaction: lock a page in
listing order (``SKIP LOCKED``), then delete it with a compare-and-set per
job and a ``removed`` event per job; the last batch also writes the
summary event (``drained`` / ``cleaned`` with the total ``count``).  Like
:func:`pgqueue.manager.control.jobs.remove`, a drain or clean keeps jobs that
live jobs still depend on, rather than strand those, and a clean of finished
jobs keeps a flow child whose parent is live or dead-lettered (the parent
reads its result when it runs, also after a redrive; once the parent has
finished for good, the child goes like any other).  Obliterate is the
exception: it removes everything of the queue (jobs, DLQ entries, logs,
edges, settings) with one ``obliterated`` event.  Dependents in *other*
queues of an obliterated job are settled in the transaction of each page,
by their failure policy (:mod:`pgqueue.manager.lost_dependencies`): released
when the policy lets them go on, dead-lettered (``dependency_failed``)
otherwise.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

import orjson

from pgqueue.db.executor import Executor
from pgqueue.db.queries import Q, Query
from pgqueue.db.retry import in_transaction
from pgqueue.errors import InvalidState, ValidationError
from pgqueue.manager.arguments import DAY_MS, check_bool, check_int
from pgqueue.manager.context import EngineContext
from pgqueue.manager.lost_dependencies import drop_dangling_edges, settle_lost_dependencies
from pgqueue.manager.registry import forget_registered
from pgqueue.vocabulary.checks import MAX_EPOCH_MS, number_fault
from pgqueue.vocabulary.names import validate_job_id, validate_queue_name

__all__ = [
    "BATCH_SIZE",
    "CLEAN_STATES",
    "clean",
    "drain",
    "is_paused",
    "obliterate",
    "pause",
    "resume",
    "retry_completed",
]

BATCH_SIZE = 1_000
MAX_BULK = 10_000_000
MAX_GRACE_MS = 100 * 365 * DAY_MS
PENDING_STATES = ("waiting", "prioritized", "delayed")
CLEAN_STATES: dict[str, tuple[str, ...]] = {
    "completed": ("completed",),
    "failed": ("failed",),
    "waiting": ("waiting",),
    "wait": ("waiting",),
    "prioritized": ("prioritized",),
    "delayed": ("delayed",),
}

_Cursor = tuple[datetime | None, str | None]


async def _set_paused(ctx: EngineContext, queue: str, paused: bool) -> None:
    validate_queue_name(queue)
    ctx.session.check()
    await ctx.scoped.fetchrow(Q.queue_set_paused, queue=queue, paused=paused)


async def pause(ctx: EngineContext, queue: str) -> None:
    """Stop claims of ``queue`` on every broker (jobs already active keep running)."""
    await _set_paused(ctx, queue, True)


async def resume(ctx: EngineContext, queue: str) -> None:
    await _set_paused(ctx, queue, False)


async def is_paused(ctx: EngineContext, queue: str) -> bool:
    validate_queue_name(queue)
    return bool(await ctx.scoped.fetchval(Q.queue_is_paused, queue=queue))


async def _summary(tx: Executor, ctx: EngineContext, bulk: _Bulk, count: int) -> None:
    payload = orjson.dumps({"count": count, **bulk.extra}).decode()
    await ctx.scope(tx).fetch(
        Q.queue_event_insert, queue=bulk.queue, summary=bulk.summary, payload=payload
    )


@dataclass(frozen=True, slots=True)
class _Bulk:
    """One bulk deletion: where, why, how many at most, and its summary event."""

    queue: str
    reason: str
    limit: int
    summary: str
    extra: dict[str, Any]


class _Page(NamedTuple):
    """What one page of a bulk deletion did: the ids it deleted, whether it came
    back full (more may follow), and where the next page starts."""

    deleted: list[str]
    full: bool
    cursor: _Cursor


# Deletes one page of at most ``size`` jobs after ``cursor``, in the transaction given.
_DeletePage = Callable[[Executor, _Cursor, int], Awaitable[_Page]]


async def _page_in(
    tx: Executor,
    ctx: EngineContext,
    bulk: _Bulk,
    delete_page: _DeletePage,
    cursor: _Cursor,
    size: int,
    done_before: int,
) -> _Page:
    """One page of ``bulk``; the last page also writes the summary event."""
    page = await delete_page(tx, cursor, size)
    done = done_before + len(page.deleted)
    if not page.full or done >= bulk.limit:
        await _summary(tx, ctx, bulk, done)
    return page


async def _delete_in_pages(ctx: EngineContext, bulk: _Bulk, delete_page: _DeletePage) -> list[str]:
    """Run ``delete_page`` page by page, each page its own transaction, until a page
    comes back short or ``bulk.limit`` jobs went; the ids deleted."""
    removed: list[str] = []
    cursor: _Cursor = (None, None)
    while True:
        size = min(BATCH_SIZE, bulk.limit - len(removed))
        one_page = partial(
            _page_in,
            ctx=ctx,
            bulk=bulk,
            delete_page=delete_page,
            cursor=cursor,
            size=size,
            done_before=len(removed),
        )
        page = await in_transaction(ctx.db, one_page)
        removed.extend(page.deleted)
        if not page.full or len(removed) >= bulk.limit:
            return removed
        cursor = page.cursor


async def _pending_page(
    tx: Executor,
    cursor: _Cursor,
    size: int,
    *,
    ctx: EngineContext,
    bulk: _Bulk,
    states: list[str],
    grace_ms: int | None,
) -> _Page:
    """Lock one page of pending jobs in listing order, then delete it."""
    db = ctx.scope(tx)
    locked = await db.fetch(
        Q.job_lock_pending_page,
        queue=bulk.queue,
        states=states,
        grace_ms=grace_ms,
        after_created_at=cursor[0],
        after_id=cursor[1],
        limit=size,
    )
    if not locked:
        return _Page([], False, cursor)
    rows = await db.fetch(
        Q.job_delete_many,
        ids=[row["id"] for row in locked],
        fences=[row["fence"] for row in locked],
        expected_states=["pending"] * len(locked),
        reason=bulk.reason,
    )
    deleted = [str(row["id"]) for row in rows if row["outcome"] == "removed"]
    return _Page(deleted, len(locked) >= size, (locked[-1]["created_at"], locked[-1]["id"]))


async def _delete_pending(
    ctx: EngineContext, bulk: _Bulk, states: Sequence[str], grace_ms: int | None
) -> list[str]:
    """Delete pending jobs page by page, each page its own transaction."""
    delete_page = partial(_pending_page, ctx=ctx, bulk=bulk, states=list(states), grace_ms=grace_ms)
    return await _delete_in_pages(ctx, bulk, delete_page)


async def drain(ctx: EngineContext, queue: str, include_delayed: bool = True) -> int:
    """Delete the queue's waiting and prioritized jobs (and delayed ones); return how many."""
    validate_queue_name(queue)
    check_bool(include_delayed, "delayed")
    ctx.session.check()
    states = PENDING_STATES if include_delayed else PENDING_STATES[:2]
    bulk = _Bulk(queue, "drain", MAX_BULK, "drained", {})
    return len(await _delete_pending(ctx, bulk, states, None))


async def clean(
    ctx: EngineContext, queue: str, grace_ms: int, state: str = "completed", limit: int = 1000
) -> tuple[int, list[str]]:
    """Delete up to ``limit`` jobs (0: no limit) in ``state`` older than ``grace_ms``.

    Finished states (completed, failed) count age from when the job
    finished, pending ones (waiting, prioritized, delayed) from its creation.
    Returns ``(count, ids)``.
    """
    validate_queue_name(queue)
    grace = check_int(grace_ms, "grace", 0, MAX_GRACE_MS)
    states = CLEAN_STATES.get(state) if isinstance(state, str) else None
    if states is None:
        raise ValidationError(
            f"state must be one of {', '.join(CLEAN_STATES)} (got {state!r})", field="state"
        )
    most = check_int(limit, "limit", 0, MAX_BULK) or MAX_BULK
    ctx.session.check()
    bulk = _Bulk(queue, "clean", most, "cleaned", {"state": states[0]})
    if states[0] in ("completed", "failed"):
        ids = await _clean_finished(ctx, bulk, states[0], grace)
    else:
        ids = await _delete_pending(ctx, bulk, states, grace)
    return len(ids), ids


async def _finished_page(
    tx: Executor,
    cursor: _Cursor,
    size: int,
    *,
    ctx: EngineContext,
    bulk: _Bulk,
    state: str,
    grace_ms: int,
) -> _Page:
    """Delete one page of the oldest finished jobs (the statement picks them: no cursor)."""
    rows = await ctx.scope(tx).fetch(
        Q.job_finished_delete_page,
        queue=bulk.queue,
        state=state,
        grace_ms=grace_ms,
        limit=size,
        reason=bulk.reason,
    )
    deleted = [str(row["id"]) for row in rows]
    await drop_dangling_edges(tx, ctx, deleted)
    return _Page(deleted, len(deleted) >= size, cursor)


async def _clean_finished(ctx: EngineContext, bulk: _Bulk, state: str, grace_ms: int) -> list[str]:
    delete_page = partial(_finished_page, ctx=ctx, bulk=bulk, state=state, grace_ms=grace_ms)
    return await _delete_in_pages(ctx, bulk, delete_page)


async def obliterate(ctx: EngineContext, queue: str, force: bool = False) -> int:
    """Delete everything of ``queue``: jobs live and finished, DLQ entries, logs,
    dependency edges and its settings.  Refused while jobs are active unless
    ``force`` (their workers' acks are then rejected).  Returns how many jobs went.
    Jobs of other queues that waited on them are released or dead-lettered by
    their failure policy (:mod:`pgqueue.manager.lost_dependencies`).

    The queue is paused first, so no broker claims from it meanwhile; jobs
    pushed while it runs may survive it.
    """
    validate_queue_name(queue)
    check_bool(force, "force")
    ctx.session.check()

    async def begin(tx: Executor) -> None:
        row = await ctx.scope(tx).fetchrow(Q.queue_obliterate_begin, queue=queue)
        active = int(row["active"]) if row is not None else 0
        if active and not force:
            raise InvalidState(
                f"Cannot obliterate queue with active jobs ({active} active; use force)",
                field="queue",
            )

    await in_transaction(ctx.db, begin)

    async def page(tx: Executor, query: Query, params: dict[str, Any]) -> int:
        rows = await ctx.scope(tx).fetch(query, queue=queue, limit=BATCH_SIZE, **params)
        await settle_lost_dependencies(tx, ctx, rows, queue=queue, why="was obliterated")
        return len(rows)

    total = 0
    for query, params in (
        (Q.job_obliterate_live_page, {"with_active": force}),
        (Q.job_obliterate_finished_page, {}),
    ):
        while True:
            deleted = await in_transaction(ctx.db, partial(page, query=query, params=params))
            total += deleted
            if deleted < BATCH_SIZE:
                break
    try:
        await ctx.scoped.fetch(
            Q.queue_obliterate_finish, queue=queue, payload=orjson.dumps({"count": total}).decode()
        )
    finally:
        forget_registered(ctx, queue)  # its registry row went (or may have)
    return total


def _timestamp(value: Any) -> float:
    fault = number_fault(value, 0, MAX_EPOCH_MS)
    if fault == "must be a number":
        fault = "must be a finite number"
    if fault is not None:
        raise ValidationError(f"timestamp {fault}", field="timestamp")
    return float(value)


async def retry_completed(
    ctx: EngineContext,
    queue: str,
    job_id: str | None = None,
    count: int | None = None,
    timestamp_ms: float | None = None,
) -> int:
    """Run completed jobs again as new pending generations (attempts start at 0).

    ``job_id`` picks one job; ``count`` caps how many (all when None);
    ``timestamp_ms`` keeps only jobs that finished at or before it.  Returns
    how many were re-admitted.
    """
    validate_queue_name(queue)
    if job_id is not None:
        validate_job_id(job_id, "id")
    limit = MAX_BULK if count is None else check_int(count, "count", 1, MAX_BULK)
    before = None if timestamp_ms is None else _timestamp(timestamp_ms)
    ctx.session.check()
    total = 0
    cursor: _Cursor = (None, None)
    while total < limit:
        page = min(BATCH_SIZE, limit - total)
        row = await ctx.scoped.fetchrow(
            Q.job_retry_completed,
            queue=queue,
            job_id=job_id,
            before=before,
            limit=page,
            after_finished_at=cursor[0],
            after_id=cursor[1],
        )
        if row is None:  # pragma: no cover - the statement always returns one row
            break
        total += int(row["retried"])
        if row["picked"] < page:
            break
        cursor = (row["after_finished_at"], row["after_id"])
    return total
