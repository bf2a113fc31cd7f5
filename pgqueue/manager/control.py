"""Job and queue control, progress, logs, listings and the workers registry."""

from __future__ import annotations

from pgqueue.manager.base import ManagerBase

__all__ = ["ControlOps"]


class ControlOps(ManagerBase):
    """Operations on jobs and queues beyond push, claim and completion."""
