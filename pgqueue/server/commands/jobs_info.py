"""Queries over jobs and queues: listings, custom ids, progress, counts, logs, waiting.

Shapes follow bunqueue (§1.6 "Queries"): ``GetJobs`` answers ``{jobs}`` (each
Job with ``state``, ``returnvalue``, ``failedReason``; the state ``paused``
lists the ready jobs of a paused queue, as bunqueue's), ``GetJobByCustomId``
``{job}`` (the same without ``state``), ``GetProgress`` ``{progress,
message}``, ``Count`` ``{count}``, ``GetCountsPerPriority`` ``{queue,
counts}`` (priorities as string keys, as a JSON object has them), ``WaitJob``
``{completed, result?}``, ``GetLogs`` ``D{logs, count}``, ``ListQueues``
``{queues}``.

``GetProgress`` answers for any known job, finished ones too (bunqueue only
for active jobs).  ``GetFailedChildrenValues`` answers ``{values:
{"<queue>:<id>": error}}`` for the parent's children that failed for good,
``GetIgnoredChildrenFailures`` the same for those that failed with
``ignoreDependencyOnFailure`` (the failures the parent went on without).
"""

from __future__ import annotations

from typing import Any

from pgqueue.errors import JobNotFound
from pgqueue.manager.control.listings import MAX_LIST_LIMIT, MAX_LIST_OFFSET, MAX_WAIT_MS
from pgqueue.protocol import Fields
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.server.wire import job_to_wire

group = CommandGroup()
command = group.command

DEFAULT_LIST_LIMIT = 100
DEFAULT_WAIT_MS = 30_000
MAX_STATES = 16
MAX_LOG_POSITION = 1_000_000_000
STATE_ALIASES = {"wait": "waiting"}
PAUSED = "paused"
READY = ("waiting", "prioritized")


def _states(f: Fields) -> list[str] | None:
    """``state``: one state or a list of them (bunqueue's ``wait`` is ``waiting``)."""
    value = f.get("state")
    if value is None:
        return None
    if isinstance(value, str):
        states = [f.str_("state", max_len=64)]
    else:
        states = f.str_list("state", max_items=MAX_STATES, max_len=64)
    return [STATE_ALIASES.get(state, state) for state in states]


async def _paused_states(req: Request, queue: str, states: list[str]) -> list[str]:
    """bunqueue's ``paused`` state: the ready jobs (waiting, prioritized) of a paused
    queue, none of a running one."""
    rest = [state for state in states if state != PAUSED]
    if await req.manager.is_paused(queue):
        rest += [state for state in READY if state not in rest]
    return rest


@command("GetJobs")
async def get_jobs(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    states = _states(f)
    offset = f.opt_int("offset", minimum=0, maximum=MAX_LIST_OFFSET, default=0)
    limit = f.opt_int("limit", minimum=0, maximum=MAX_LIST_LIMIT, default=DEFAULT_LIST_LIMIT)
    asc = f.opt_bool("asc", default=True)
    if states is not None and PAUSED in states:
        states = await _paused_states(req, queue, states)
    if limit == 0 or states == []:
        return {"jobs": []}
    jobs = await req.manager.get_jobs(queue, states, offset, limit, asc)
    return {"jobs": [job_to_wire(job, with_state=True) for job in jobs]}


@command("GetJobByCustomId")
async def get_job_by_custom_id(req: Request) -> dict[str, Any]:
    job = await req.manager.get_job_by_custom_id(req.fields.job_id("customId"))
    if job is None:
        raise JobNotFound()
    wire = job_to_wire(job, with_state=True)
    del wire["state"]
    return {"job": wire}


@command("GetProgress")
async def get_progress(req: Request) -> dict[str, Any]:
    progress, message = await req.manager.get_progress(req.fields.job_id("id"))
    return {"progress": progress if progress is not None else 0, "message": message}


@command("Count")
async def count(req: Request) -> dict[str, Any]:
    return {"count": await req.manager.count(req.fields.queue())}


@command("GetCountsPerPriority")
async def get_counts_per_priority(req: Request) -> dict[str, Any]:
    queue = req.fields.queue()
    counts = await req.manager.get_counts_per_priority(queue)
    return {"queue": queue, "counts": {str(priority): n for priority, n in counts.items()}}


@command("WaitJob")
async def wait_job(req: Request) -> dict[str, Any]:
    """Wait until the job completes: ``{completed: true, result}``; ``{completed:
    false}`` when it failed or ``timeout`` (ms, default 30000) passed first."""
    f = req.fields
    job_id = f.job_id("id")
    timeout = f.opt_int("timeout", minimum=0, maximum=MAX_WAIT_MS, default=DEFAULT_WAIT_MS)
    completed, result = await req.manager.wait_for_job(job_id, timeout)
    return {"completed": True, "result": result} if completed else {"completed": False}


@command("GetLogs")
async def get_logs(req: Request) -> dict[str, Any]:
    f = req.fields
    job_id = f.job_id("id")
    bound = MAX_LOG_POSITION
    start = f.opt_int("start", minimum=-bound, maximum=bound, default=0)
    end = f.opt_int("end", minimum=-bound, maximum=bound, default=-1)
    logs, total = await req.manager.get_logs(job_id, start, end)
    return {"data": {"logs": logs, "count": total}}


@command("ListQueues")
async def list_queues(req: Request) -> dict[str, Any]:
    return {"queues": await req.manager.list_queues()}


@command("GetFailedChildrenValues")
async def get_failed_children_values(req: Request) -> dict[str, Any]:
    parent = req.fields.job_id("id")
    return {"values": await req.manager.get_children_failures(parent, ignored=False)}


@command("GetIgnoredChildrenFailures")
async def get_ignored_children_failures(req: Request) -> dict[str, Any]:
    parent = req.fields.job_id("id")
    return {"values": await req.manager.get_children_failures(parent, ignored=True)}
