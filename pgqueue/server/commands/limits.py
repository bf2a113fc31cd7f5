"""Queue rate and concurrency limits (bunqueue §1.6 "Rate, concurrency, and job groups").

``RateLimit{queue, limit, duration?, ttl?}``, ``RateLimitClear{queue}``,
``SetConcurrency{queue, limit}``, ``ClearConcurrency{queue}`` answer ok;
``GetQueueLimits{queue, maxJobs?}`` answers
``D{limits:{rateLimit:{max, duration}|null, rateLimitTtl, concurrencyLimit, maxed}}``.
The limits hold for every broker at once (the claim reads them in SQL).
"""

from __future__ import annotations

from typing import Any

from pgqueue.manager.limits.queue_limits import DEFAULT_RATE_DURATION_MS, MAX_TTL_MS
from pgqueue.server.registry import CommandGroup
from pgqueue.server.request import Request
from pgqueue.vocabulary.checks import INT4_MAX

group = CommandGroup()
command = group.command


@command("RateLimit")
async def rate_limit(req: Request) -> None:
    f = req.fields
    queue = f.queue()
    limit = f.int_("limit", minimum=1, maximum=INT4_MAX)
    duration = f.opt_int("duration", minimum=1, maximum=INT4_MAX, default=DEFAULT_RATE_DURATION_MS)
    ttl = f.opt_int("ttl", minimum=1, maximum=MAX_TTL_MS)
    await req.manager.set_rate_limit(queue, limit, duration, ttl)


@command("RateLimitClear")
async def rate_limit_clear(req: Request) -> None:
    await req.manager.clear_rate_limit(req.fields.queue())


@command("SetConcurrency")
async def set_concurrency(req: Request) -> None:
    f = req.fields
    queue = f.queue()
    await req.manager.set_concurrency(queue, f.int_("limit", minimum=1, maximum=INT4_MAX))


@command("ClearConcurrency")
async def clear_concurrency(req: Request) -> None:
    await req.manager.clear_concurrency(req.fields.queue())


@command("GetQueueLimits")
async def get_queue_limits(req: Request) -> dict[str, Any]:
    f = req.fields
    queue = f.queue()
    max_jobs = f.opt_int("maxJobs", minimum=1, maximum=INT4_MAX)
    limits = await req.manager.get_queue_limits(queue, max_jobs)
    return {"data": {"limits": limits.as_dict()}}
