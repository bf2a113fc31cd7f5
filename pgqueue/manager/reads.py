"""Read-your-writes queries, answered by PostgreSQL: job, state, result, counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pgqueue import jsontext
from pgqueue.db.queries import Q
from pgqueue.manager.context import EngineContext
from pgqueue.manager.models import Job, JobCounts
from pgqueue.manager.rows import job_from_row
from pgqueue.vocabulary.names import validate_queue_name

__all__ = [
    "NO_RESULT",
    "get_children_values",
    "get_counts",
    "get_job",
    "get_jobs_by_ids",
    "get_result",
    "get_state",
]


class _NoResult:
    """The job has no stored result (unknown, not finished, or failed)."""

    def __repr__(self) -> str:
        return "NO_RESULT"

    def __bool__(self) -> bool:
        return False


NO_RESULT: Any = _NoResult()


async def get_job(ctx: EngineContext, job_id: str) -> Job | None:
    row = await ctx.db.fetchrow(Q.job_get, namespace=ctx.namespace, job_id=job_id)
    return None if row is None else job_from_row(row)


async def get_state(ctx: EngineContext, job_id: str) -> str:
    """The reported state, or ``"unknown"`` for an id with no job."""
    state = await ctx.db.fetchval(Q.job_state_get, namespace=ctx.namespace, job_id=job_id)
    return str(state) if state is not None else "unknown"


async def get_result(ctx: EngineContext, job_id: str) -> Any:
    """The result of a completed job (``None`` is a valid result); else :data:`NO_RESULT`."""
    row = await ctx.db.fetchrow(Q.job_result_get, namespace=ctx.namespace, job_id=job_id)
    if row is None or row["state"] != "completed" or row["result"] is None:
        return NO_RESULT
    return jsontext.loads(row["result"])


async def get_counts(ctx: EngineContext, queue: str) -> JobCounts:
    """Jobs of ``queue`` per state, and whether it is paused."""
    validate_queue_name(queue)
    rows = await ctx.db.fetch(Q.job_counts_by_state, namespace=ctx.namespace, queue=queue)
    counts = {row["state"]: int(row["n"]) for row in rows}
    return JobCounts(
        waiting=counts.get("waiting", 0),
        prioritized=counts.get("prioritized", 0),
        delayed=counts.get("delayed", 0),
        active=counts.get("active", 0),
        waiting_children=counts.get("waiting-children", 0),
        completed=counts.get("completed", 0),
        failed=counts.get("failed", 0),
        paused=bool(counts.get("paused", 0)),
    )


async def get_children_values(ctx: EngineContext, parent_id: str) -> dict[str, Any]:
    """Results of a parent's completed children, keyed ``"<queue>:<id>"``."""
    rows = await ctx.db.fetch(Q.job_children_values, namespace=ctx.namespace, parent_id=parent_id)
    return {
        f"{row['queue']}:{row['id']}": None
        if row["result"] is None
        else jsontext.loads(row["result"])
        for row in rows
    }


async def get_children_failures(
    ctx: EngineContext, parent_id: str, *, ignored: bool
) -> dict[str, str]:
    """Errors of a parent's children that failed for good, keyed ``"<queue>:<id>"``
    (bunqueue's key): with ``ignored``, those that failed with
    ``ignore_dependency_on_failure`` (``GetIgnoredChildrenFailures``); without,
    those that released the parent with ``continue_parent_on_failure``
    (``GetFailedChildrenValues``).  Other policies record nothing
    (:mod:`pgqueue.manager.flow_policy`)."""
    wanted = "ignore" if ignored else "continue"
    rows = await ctx.db.fetch(Q.job_children_failures, namespace=ctx.namespace, parent_id=parent_id)
    return {
        f"{row['queue']}:{row['id']}": str(row["reason"]) for row in rows if row["mode"] == wanted
    }


async def get_jobs_by_ids(ctx: EngineContext, job_ids: Sequence[str]) -> dict[str, Job]:
    """Jobs by id (missing ids are absent from the map)."""
    rows = await ctx.db.fetch(Q.job_get_by_ids, namespace=ctx.namespace, job_ids=list(job_ids))
    return {row["id"]: job_from_row(row) for row in rows}
