"""Editing a flow after admission: detach a child, drop a parent's unstarted children.

A parent waits for its children through dependency edges ("parent waits for
child") counted in its ``pending_deps``.  Both operations here drop edges with
:data:`~pgqueue.db.queries.Q` ``dependency_detach``, which counts them off the
parent and releases it (``waiting-children`` -> waiting, with its event) when
nothing is left to wait for, so a parent is never stranded.

Locks go child before parent, the order a completing child takes them, so the
two never deadlock; only children that have not started are locked, and a
claim that races the lock wins (the child is active by the time the lock is
granted, so it is left alone).
"""

from __future__ import annotations

from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q
from pgqueue.db.retry import in_transaction
from pgqueue.errors import JobNotFound
from pgqueue.manager import reads
from pgqueue.manager.context import EngineContext, InNamespace
from pgqueue.vocabulary.names import validate_job_id

__all__ = ["remove_child_dependency", "remove_unprocessed_children"]

REMOVED_REASON = "parent_cleared"


async def remove_child_dependency(ctx: EngineContext, child_id: str) -> bool:
    """The child stops being a dependency of its parent; True when it was one.

    The child keeps its place in its queue and runs as an ordinary job; its
    result no longer counts among the parent's children values.  The parent is
    released if this was the last child it waited for.  False when the job has
    no parent or its parent no longer waits on it (the child has finished).
    """
    validate_job_id(child_id, "id")
    ctx.session.check()

    async def body(tx: Executor) -> bool | None:
        db = ctx.scope(tx)
        child = await db.fetchrow(Q.flow_child_lock, child_id=child_id)
        if child is None:
            return None
        parent_id = child["parent_id"]
        if parent_id is None:
            return False
        row = await db.fetchrow(Q.dependency_detach, job_ids=[parent_id], depends_on=[child_id])
        if row is None or row["detached"] == 0:
            return False
        await db.fetch(Q.flow_children_detach, ids=[child_id])
        return True

    removed = await in_transaction(ctx.db, body)
    if removed is None:
        if await reads.get_state(ctx, child_id) == "unknown":
            raise JobNotFound(child_id)
        return False
    return removed


async def remove_unprocessed_children(ctx: EngineContext, parent_id: str) -> int:
    """Remove the parent's children that have not started, and theirs in turn.

    Children waiting, delayed, prioritized or waiting for children of their
    own are removed (a ``removed`` event each, reason ``parent_cleared``); a
    child that a live job outside the removed ones waits on (``dependsOn``) is
    detached from the parent instead and stays queued.  Children already
    running or finished are left alone (a running child of a removed child
    loses its parent link).  The parent is released if it waited only for
    removed children.  Returns how many children were removed or detached.
    """
    validate_job_id(parent_id, "id")
    ctx.session.check()

    async def body(tx: Executor) -> int:
        db = ctx.scope(tx)
        total = 0
        removed_all: list[str] = []
        frontier = [parent_id]
        while frontier:
            children = await db.fetch(Q.flow_children_lock_unprocessed, frontier=frontier)
            if not children:
                break
            await db.fetchrow(
                Q.dependency_detach,
                job_ids=[c["parent_id"] for c in children],
                depends_on=[c["id"] for c in children],
            )
            removed, kept = await _remove(db, children)
            if kept:
                await db.fetch(Q.flow_children_detach, ids=kept)
            total += len(children)
            removed_all.extend(removed)
            frontier = removed
        if removed_all:
            await db.fetch(Q.flow_children_orphan, removed_all=removed_all)
        return total

    total = await in_transaction(ctx.db, body)
    if total == 0 and await reads.get_state(ctx, parent_id) == "unknown":
        raise JobNotFound(parent_id)
    return total


async def _remove(db: InNamespace, children: list[Row]) -> tuple[list[str], list[str]]:
    """Delete the locked ``children``; returns (removed ids, kept ids).

    A child that live jobs wait on is refused by ``job_delete_many``.  When
    those jobs are siblings removed in the same round, the next round (a new
    statement, which sees them gone) removes it; a child still waited on when a
    round removes nothing is kept.
    """
    removed: list[str] = []
    pending = children
    while pending:
        rows = await db.fetch(
            Q.job_delete_many,
            ids=[c["id"] for c in pending],
            fences=[c["fence"] for c in pending],
            expected_states=[c["state"] for c in pending],
            reason=REMOVED_REASON,
        )
        done = [r["id"] for r in rows if r["outcome"] == "removed"]
        if not done:
            break
        removed.extend(done)
        blocked = {r["id"] for r in rows if r["outcome"] == "blocked"}
        pending = [c for c in pending if c["id"] in blocked]
    return removed, [c["id"] for c in pending]
