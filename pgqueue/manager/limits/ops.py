"""The engine's limits and groups operations (they only forward to the flows)."""

from __future__ import annotations

from pgqueue.manager.base import ManagerBase
from pgqueue.manager.forwarding import forward
from pgqueue.manager.limits import groups, queue_limits

__all__ = ["LimitOps"]


class LimitOps(ManagerBase):
    """Queue rate and concurrency limits; job groups."""

    # -- queue limits ----------------------------------------------------------

    set_rate_limit = forward(queue_limits.set_rate_limit)
    clear_rate_limit = forward(queue_limits.clear_rate_limit)
    set_concurrency = forward(queue_limits.set_concurrency)
    clear_concurrency = forward(queue_limits.clear_concurrency)
    get_queue_limits = forward(queue_limits.get_queue_limits)

    # -- groups ----------------------------------------------------------------

    get_group_jobs_count = forward(groups.get_group_jobs_count)
    get_groups_jobs_count = forward(groups.get_groups_jobs_count)
    get_group_active_count = forward(groups.get_group_active_count)
    set_group_rate_limit = forward(groups.set_group_rate_limit)
    get_group_rate_limit = forward(groups.get_group_rate_limit)
    remove_group_rate_limit = forward(groups.remove_group_rate_limit)
    get_group_rate_limit_ttl = forward(groups.get_group_rate_limit_ttl)
    set_group_concurrency = forward(groups.set_group_concurrency)
    get_group_concurrency = forward(groups.get_group_concurrency)
    remove_group_concurrency = forward(groups.remove_group_concurrency)
    pause_group = forward(groups.pause_group)
    resume_group = forward(groups.resume_group)
    is_group_paused = forward(groups.is_group_paused)
    rate_limit_group = forward(groups.rate_limit_group)
