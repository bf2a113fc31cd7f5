"""pgqueue: a PostgreSQL-backed, multi-broker job queue speaking bunqueue's protocol."""

from __future__ import annotations

from pgqueue.config import Config
from pgqueue.errors import (
    AlreadyFinalized,
    BrokerFenced,
    DuplicateJob,
    JobNotFound,
    LeaseLost,
    PgQueueError,
    UnrecoverableError,
    ValidationError,
)
from pgqueue.manager import PostgresQueueManager
from pgqueue.manager.models import AckItem, ClaimedJob, ItemOutcome, Job, JobCounts

__all__ = [
    "AckItem",
    "AlreadyFinalized",
    "BrokerFenced",
    "ClaimedJob",
    "Config",
    "DuplicateJob",
    "ItemOutcome",
    "Job",
    "JobCounts",
    "JobNotFound",
    "LeaseLost",
    "PgQueueError",
    "PostgresQueueManager",
    "UnrecoverableError",
    "ValidationError",
]

__version__ = "0.1.0"
