"""Queue limits and job groups in the SDK: one table for both transports.

Each operation is named after the engine's method (``set_rate_limit``,
``pause_group``, ...); :data:`LIMIT_OPS` gives its bunqueue command, the wire
names of its arguments (after ``queue``) and the member of the answer that holds
its value.  The TCP transport sends the command; the embedded one calls the
engine method with the same arguments; :func:`answer_of` makes both answers one
shape (the wire's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LIMIT_OPS", "LimitOp", "answer_of"]


@dataclass(frozen=True, slots=True)
class LimitOp:
    command: str
    args: tuple[str, ...]  # wire names, in the engine method's order after queue
    answer: str | None  # the member of D{...} (or of GetQueueLimits' limits); None: ok


LIMIT_OPS: dict[str, LimitOp] = {
    "set_rate_limit": LimitOp("RateLimit", ("limit", "duration", "ttl"), None),
    "clear_rate_limit": LimitOp("RateLimitClear", (), None),
    "set_concurrency": LimitOp("SetConcurrency", ("limit",), None),
    "clear_concurrency": LimitOp("ClearConcurrency", (), None),
    "get_queue_limits": LimitOp("GetQueueLimits", ("maxJobs",), "limits"),
    "get_group_jobs_count": LimitOp("GetGroupJobsCount", ("groupId",), "count"),
    "get_groups_jobs_count": LimitOp("GetGroupsJobsCount", (), "count"),
    "get_group_active_count": LimitOp("GetGroupActiveCount", ("groupId",), "count"),
    "set_group_rate_limit": LimitOp("SetGroupRateLimit", ("groupId", "max", "duration"), None),
    "get_group_rate_limit": LimitOp("GetGroupRateLimit", ("groupId",), "limit"),
    "remove_group_rate_limit": LimitOp("RemoveGroupRateLimit", ("groupId",), "removed"),
    "get_group_rate_limit_ttl": LimitOp("GetGroupRateLimitTtl", ("groupId", "maxJobs"), "ttl"),
    "set_group_concurrency": LimitOp("SetGroupConcurrency", ("groupId", "concurrency"), None),
    "get_group_concurrency": LimitOp("GetGroupConcurrency", ("groupId",), "concurrency"),
    "remove_group_concurrency": LimitOp("RemoveGroupConcurrency", ("groupId",), "removed"),
    "pause_group": LimitOp("PauseGroup", ("groupId",), "changed"),
    "resume_group": LimitOp("ResumeGroup", ("groupId",), "changed"),
    "is_group_paused": LimitOp("IsGroupPaused", ("groupId",), "paused"),
    "rate_limit_group": LimitOp("RateLimitGroup", ("groupId", "duration"), None),
}


def wire_fields(op: LimitOp, queue: str, args: Sequence[Any]) -> dict[str, Any]:
    """The command's fields (arguments left as None are not sent)."""
    fields: dict[str, Any] = {"queue": queue}
    fields.update(
        (name, value) for name, value in zip(op.args, args, strict=True) if value is not None
    )
    return fields


def answer_of(value: Any) -> Any:
    """An engine result in the wire's shape (rate limits as ``{max, duration}``)."""
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if isinstance(value, tuple):
        return {"max": value[0], "duration": value[1]}
    return value
