"""Command handlers, one module per group of bunqueue's catalogue (§1.6).

The command table is built here from the list of groups, nowhere else: a new
command goes in its group's module (``@command("Name")``), a new group in
:data:`GROUPS`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pgqueue.server.commands import (
    cluster,
    consuming,
    control,
    cron,
    dashboard,
    dlq,
    groups,
    jobs_info,
    limits,
    monitoring,
    producing,
    queries,
    session,
    webhooks,
    workers,
)
from pgqueue.server.registry import CommandGroup, Handler, build_table

__all__ = ["COMMANDS", "GROUPS"]

GROUPS: tuple[CommandGroup, ...] = (
    cluster.group,
    consuming.group,
    control.group,
    cron.group,
    dashboard.group,
    dlq.group,
    groups.group,
    jobs_info.group,
    limits.group,
    monitoring.group,
    producing.group,
    queries.group,
    session.group,
    webhooks.group,
    workers.group,
)

COMMANDS: Mapping[str, Handler] = build_table(GROUPS)
