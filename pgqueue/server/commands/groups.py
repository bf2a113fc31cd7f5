"""Job groups (bunqueue §1.6 "Rate, concurrency, and job groups"): the 14 commands.

Every command takes ``queue`` and (but ``GetGroupsJobsCount``) ``groupId``.
Counts answer ``D{count}``; ``GetGroupRateLimit`` ``D{limit:{max, duration}|null}``,
``GetGroupRateLimitTtl`` ``D{ttl}`` (-2: nothing holds the group back),
``GetGroupConcurrency`` ``D{concurrency|null}``, the removals ``D{removed: 0|1}``,
``PauseGroup`` / ``ResumeGroup`` ``D{changed}``, ``IsGroupPaused`` ``D{paused}``;
the setters and ``RateLimitGroup{duration}`` (a manual deadline) answer ok.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pgqueue.manager.limits.groups import MAX_DEADLINE_MS
from pgqueue.server.registry import CommandGroup, Handler
from pgqueue.server.request import Request
from pgqueue.vocabulary.checks import INT4_MAX
from pgqueue.vocabulary.names import MAX_NAME_LENGTH

if TYPE_CHECKING:
    from pgqueue.runtime import PostgresQueueManager

group = CommandGroup()
command = group.command


def _target(req: Request) -> tuple[str, str]:
    f = req.fields
    return f.queue(), f.str_("groupId", max_len=MAX_NAME_LENGTH, non_empty=True)


def _data(**values: Any) -> dict[str, Any]:
    return {"data": values}


_Read = Callable[["PostgresQueueManager", str, str], Awaitable[Any]]

# (command, the answer's key, the engine's call on (queue, groupId)): the commands
# that take a group and answer one value, ``D{key: value}``.
# fmt: off
_ONE_VALUE: tuple[tuple[str, str, _Read], ...] = (
    ("GetGroupJobsCount", "count", lambda m, q, g: m.get_group_jobs_count(q, g)),
    ("GetGroupActiveCount", "count", lambda m, q, g: m.get_group_active_count(q, g)),
    ("RemoveGroupRateLimit", "removed", lambda m, q, g: m.remove_group_rate_limit(q, g)),
    ("GetGroupConcurrency", "concurrency", lambda m, q, g: m.get_group_concurrency(q, g)),
    ("RemoveGroupConcurrency", "removed", lambda m, q, g: m.remove_group_concurrency(q, g)),
    ("PauseGroup", "changed", lambda m, q, g: m.pause_group(q, g)),
    ("ResumeGroup", "changed", lambda m, q, g: m.resume_group(q, g)),
    ("IsGroupPaused", "paused", lambda m, q, g: m.is_group_paused(q, g)),
)
# fmt: on


def _one_value(key: str, call: _Read) -> Handler:
    async def handler(req: Request) -> dict[str, Any]:
        return _data(**{key: await call(req.manager, *_target(req))})

    return handler


for _name, _key, _call in _ONE_VALUE:
    command(_name)(_one_value(_key, _call))


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


@command("RateLimitGroup")
async def rate_limit_group(req: Request) -> None:
    queue, group_id = _target(req)
    duration = req.fields.int_("duration", minimum=1, maximum=MAX_DEADLINE_MS)
    await req.manager.rate_limit_group(queue, group_id, duration)
