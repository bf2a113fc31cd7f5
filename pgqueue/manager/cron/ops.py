"""The engine's scheduler operations (see :mod:`pgqueue.manager.cron.schedulers`)."""

from __future__ import annotations

from pgqueue.manager.base import ManagerBase
from pgqueue.manager.cron import schedulers
from pgqueue.manager.forwarding import forward

__all__ = ["CronOps"]


class CronOps(ManagerBase):
    """Create or replace, read, list and remove cron schedulers."""

    upsert_scheduler = forward(schedulers.upsert_scheduler)
    get_scheduler = forward(schedulers.get_scheduler)
    list_schedulers = forward(schedulers.list_schedulers)
    remove_scheduler = forward(schedulers.remove_scheduler)
