"""Command handlers, one module per group of bunqueue's catalogue (§1.6)."""

from __future__ import annotations

from pgqueue.server.commands import (
    cluster,
    consuming,
    control,
    dlq,
    jobs_info,
    monitoring,
    producing,
    queries,
    session,
    webhooks,
    workers,
)

__all__ = [
    "cluster",
    "consuming",
    "control",
    "dlq",
    "jobs_info",
    "monitoring",
    "producing",
    "queries",
    "session",
    "webhooks",
    "workers",
]
