"""Job groups (bunqueue §1.6 "Rate, concurrency, and job groups"): the 14 commands.

Every command takes ``queue`` and (but ``GetGroupsJobsCount``) ``groupId``.
Counts answer ``D{count}``; ``GetGroupRateLimit`` ``D{limit:{max, duration}|null}``,
``GetGroupRateLimitTtl`` ``D{ttl}`` (-2: nothing holds the group back),
``GetGroupConcurrency`` ``D{concurrency|null}``, the removals ``D{removed: 0|1}``,
``PauseGroup`` / ``ResumeGroup`` ``D{changed}``, ``IsGroupPaused`` ``D{paused}``;
the setters and ``RateLimitGroup{duration}`` (a manual deadline) answer ok.
"""

from __future__ import annotations

from typing import Any

from pgqueue.manager.limits.groups import MAX_DEADLINE_MS
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.vocabulary.checks import INT4_MAX
from pgqueue.vocabulary.names import MAX_NAME_LENGTH

group = CommandGroup()
command = group.command


def _target(req: Request) -> tuple[str, str]:
    f = req.fields
    return f.queue(), f.str_("groupId", max_len=MAX_NAME_LENGTH, non_empty=True)


def _data(**values: Any) -> dict[str, Any]:
    return {"data": values}


@command("GetGroupJobsCount")
async def get_group_jobs_count(req: Request) -> dict[str, Any]:
    return _data(count=await req.manager.get_group_jobs_count(*_target(req)))


@command("GetGroupActiveCount")
async def get_group_active_count(req: Request) -> dict[str, Any]:
    return _data(count=await req.manager.get_group_active_count(*_target(req)))


@command("GetGroupsJobsCount")
async def get_groups_jobs_count(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    f.opt_int("maxCount", minimum=0)  # accepted as bunqueue does; the count is exact
    return _data(count=await req.manager.get_groups_jobs_count(queue))


@command("SetGroupRateLimit")
async def set_group_rate_limit(req: Request) -> None:
    queue, group_id = _target(req)
    f = req.fields
    max_jobs = f.int_("max", minimum=1, maximum=INT4_MAX)
    duration = f.int_("duration", minimum=1, maximum=INT4_MAX)
    await req.manager.set_group_rate_limit(queue, group_id, max_jobs, duration)


@command("GetGroupRateLimit")
async def get_group_rate_limit(req: Request) -> dict[str, Any]:
    limit = await req.manager.get_group_rate_limit(*_target(req))
    return _data(limit=None if limit is None else {"max": limit[0], "duration": limit[1]})


@command("RemoveGroupRateLimit")
async def remove_group_rate_limit(req: Request) -> dict[str, Any]:
    return _data(removed=await req.manager.remove_group_rate_limit(*_target(req)))


@command("GetGroupRateLimitTtl")
async def get_group_rate_limit_ttl(req: Request) -> dict[str, Any]:
    queue, group_id = _target(req)
    max_jobs = req.fields.opt_int("maxJobs", minimum=1, maximum=INT4_MAX)
    return _data(ttl=await req.manager.get_group_rate_limit_ttl(queue, group_id, max_jobs))


@command("SetGroupConcurrency")
async def set_group_concurrency(req: Request) -> None:
    queue, group_id = _target(req)
    concurrency = req.fields.int_("concurrency", minimum=1, maximum=INT4_MAX)
    await req.manager.set_group_concurrency(queue, group_id, concurrency)


@command("GetGroupConcurrency")
async def get_group_concurrency(req: Request) -> dict[str, Any]:
    return _data(concurrency=await req.manager.get_group_concurrency(*_target(req)))


@command("RemoveGroupConcurrency")
async def remove_group_concurrency(req: Request) -> dict[str, Any]:
    return _data(removed=await req.manager.remove_group_concurrency(*_target(req)))


@command("PauseGroup")
async def pause_group(req: Request) -> dict[str, Any]:
    return _data(changed=await req.manager.pause_group(*_target(req)))


@command("ResumeGroup")
async def resume_group(req: Request) -> dict[str, Any]:
    return _data(changed=await req.manager.resume_group(*_target(req)))


@command("IsGroupPaused")
async def is_group_paused(req: Request) -> dict[str, Any]:
    return _data(paused=await req.manager.is_group_paused(*_target(req)))


@command("RateLimitGroup")
async def rate_limit_group(req: Request) -> None:
    queue, group_id = _target(req)
    duration = req.fields.int_("duration", minimum=1, maximum=MAX_DEADLINE_MS)
    await req.manager.rate_limit_group(queue, group_id, duration)
