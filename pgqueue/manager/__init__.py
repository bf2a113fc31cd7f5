"""The application layer: admissions, claims, completions, leases, sessions.

Importing the package loads nothing: ``from pgqueue.manager import QueueEngine``
loads the engine (and its driver) on first use.  The engine wired with its
maintenance is :class:`pgqueue.runtime.PostgresQueueManager`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pgqueue.manager.engine import QueueEngine

__all__ = ["QueueEngine"]


def __getattr__(name: str) -> Any:
    if name == "QueueEngine":
        from pgqueue.manager.engine import QueueEngine

        return QueueEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
