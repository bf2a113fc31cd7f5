"""Dependencies deleted without completing: release or dead-letter their dependents.

Obliterating a queue deletes every job of it, also jobs that live jobs in
other queues wait on (a flow parent, a ``dependsOn`` job).  Such a
dependency can never complete any more, so its dependents are settled in the
transaction that deleted it, by the failure policy that applies when the
dependency dead-letters (:func:`pgqueue.manager.completion.dead_letter_locked`):

* a dependency that had completed counts as resolved;
* ``ignore_dependency_on_failure``, ``remove_dependency_on_failure`` or
  ``continue_parent_on_failure`` (without ``fail_parent_on_failure`` for its
  parent) count it as resolved: the dependent goes on without it;
* otherwise (``fail_parent_on_failure``, or no policy: a failed dependency's
  dependents wait for a redrive, which is no longer possible) the dependent
  is dead-lettered, reason ``dependency_failed``, where an operator sees it
  and may redrive it.  Its own failure policy then applies in turn.

An active dependent only loses the edge (its worker decides what to do), and
so do dependents already finished and those in the queue being deleted.
Every edge to a deleted job goes, so that no redrive ever waits for it.

The other deletions of failed jobs (remove, clean, retention, DLQ purge,
remove and expiry) keep a job that live jobs wait on, so only dead
dependents (dead-lettered themselves) may still point at what they delete:
:func:`drop_dangling_edges` drops those edges in the same transaction, so
that a later redrive of such a dependent does not wait for a job that is gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from pgqueue.db.executor import Executor, Row
from pgqueue.db.queries import Q
from pgqueue.manager.completion import DeadLetter, dead_letter_locked
from pgqueue.manager.context import EngineContext
from pgqueue.manager.flow_policy import flow_failure_mode, lets_dependents_go_on

__all__ = ["drop_dangling_edges", "releases_dependents", "settle_lost_dependencies"]


def releases_dependents(state: str, parent_id: str | None, opts: Mapping[str, Any]) -> bool:
    """Whether a deleted job in ``state`` counts as resolved for its dependents."""
    if state == "completed":
        return True
    return lets_dependents_go_on(flow_failure_mode(opts, parent_id))


async def settle_lost_dependencies(
    tx: Executor, ctx: EngineContext, gone: Sequence[Row], *, queue: str, why: str
) -> None:
    """Jobs ``gone`` (rows with id, state, parent_id, opts) of ``queue`` were
    deleted in transaction ``tx``: settle what waited on them (module docstring).
    ``why`` ends the dead-lettered dependents' error (``"was obliterated"``)."""
    if not gone:
        return
    ns = ctx.namespace
    release = {
        str(row["id"]): releases_dependents(
            row["state"], row["parent_id"], orjson.loads(row["opts"] or "{}")
        )
        for row in gone
    }
    edges = await tx.fetch(Q.dependency_edges_into, namespace=ns, release=list(release))
    if not edges:
        return
    failing: dict[str, str] = {}
    for edge in edges:
        waits = edge["dependent_state"] in ("pending", "waiting-children")
        if waits and edge["dependent_queue"] != queue and not release[edge["depends_on"]]:
            failing.setdefault(edge["job_id"], edge["depends_on"])
    if failing:
        locked = await tx.fetch(Q.job_lock_waiting_parents, namespace=ns, failing=list(failing))
        await dead_letter_locked(
            tx,
            ctx,
            [
                DeadLetter.of_row(
                    row,
                    row["state"],
                    "dependency_failed",
                    f"dependency {failing[row['id']]} of queue {queue} {why}",
                    None,
                    0,
                )
                for row in locked
            ],
        )
    await tx.fetch(
        Q.dependency_detach,
        namespace=ns,
        job_ids=[edge["job_id"] for edge in edges],
        depends_on=[edge["depends_on"] for edge in edges],
    )


async def drop_dangling_edges(tx: Executor, ctx: EngineContext, job_ids: Sequence[str]) -> None:
    """Jobs ``job_ids`` may have been deleted in transaction ``tx``: drop the
    edges that dead dependents kept towards those that exist no more."""
    if job_ids:
        await tx.fetchval(
            Q.dependency_edges_drop_dangling, namespace=ctx.namespace, job_ids=list(job_ids)
        )
