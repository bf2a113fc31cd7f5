"""The application layer: admissions, claims, completions, leases, sessions."""

from __future__ import annotations

from pgqueue.manager.engine import PostgresQueueManager

__all__ = ["PostgresQueueManager"]
