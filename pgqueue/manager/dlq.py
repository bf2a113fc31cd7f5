"""Dead-letter queue management: list, stats, audited redrive and purge, settings."""

from __future__ import annotations

from pgqueue.manager.base import ManagerBase

__all__ = ["DlqOps"]


class DlqOps(ManagerBase):
    """Operations on dead-lettered jobs and per-queue DLQ and stall settings."""
