"""The command table: bunqueue command name -> handler.

Handlers live in :mod:`pgqueue.server.commands` modules, one per group, and
register themselves with :func:`command`.  A handler reads its fields (which
validates them), calls the engine, and returns the payload merged into
``{ok: true, reqId}``; it raises a :class:`~pgqueue.errors.PgQueueError` for
``{ok: false, error}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgqueue.server.request import Request

__all__ = ["COMMANDS", "NOT_YET", "Handler", "command"]

Handler = Callable[["Request"], Awaitable[dict[str, Any] | None]]

COMMANDS: dict[str, Handler] = {}

# Commands of features that land in later releases; they answer
# {ok: false, error: "<cmd> is not supported yet"} (listed in docs/protocol.md).
NOT_YET = frozenset(
    {
        "Cron",
        "CronGet",
        "CronList",
        "CronDelete",
        "RateLimit",
        "RateLimitClear",
        "SetConcurrency",
        "ClearConcurrency",
        "GetQueueLimits",
        "GetGroupJobsCount",
        "GetGroupActiveCount",
        "GetGroupsJobsCount",
        "SetGroupRateLimit",
        "GetGroupRateLimit",
        "RemoveGroupRateLimit",
        "GetGroupRateLimitTtl",
        "SetGroupConcurrency",
        "GetGroupConcurrency",
        "RemoveGroupConcurrency",
        "PauseGroup",
        "ResumeGroup",
        "IsGroupPaused",
        "RateLimitGroup",
        "DashboardOverview",
        "DashboardQueues",
        "DashboardQueue",
    }
)


def command(*names: str) -> Callable[[Handler], Handler]:
    """Register a handler under one or more command names."""

    def register(handler: Handler) -> Handler:
        for name in names:
            if name in COMMANDS:
                raise RuntimeError(f"command {name} registered twice")
            COMMANDS[name] = handler
        return handler

    return register
