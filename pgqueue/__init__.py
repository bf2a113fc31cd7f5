"""pgqueue: a PostgreSQL-backed, multi-broker job queue speaking bunqueue's protocol."""

from __future__ import annotations

from pgqueue.client import FlowProducer, Job, Queue, QueueEvents, Worker
from pgqueue.config import Config
from pgqueue.errors import (
    AlreadyFinalized,
    BrokerFenced,
    DuplicateJob,
    JobFailed,
    JobNotFound,
    LeaseLost,
    PgQueueError,
    UnrecoverableError,
    ValidationError,
)
from pgqueue.manager import PostgresQueueManager
from pgqueue.manager.models import AckItem, ClaimedJob, ItemOutcome, JobCounts

__all__ = [
    "AckItem",
    "AlreadyFinalized",
    "BrokerFenced",
    "ClaimedJob",
    "Config",
    "DuplicateJob",
    "FlowProducer",
    "ItemOutcome",
    "Job",
    "JobCounts",
    "JobFailed",
    "JobNotFound",
    "LeaseLost",
    "PgQueueError",
    "PostgresQueueManager",
    "Queue",
    "QueueEvents",
    "UnrecoverableError",
    "ValidationError",
    "Worker",
]

__version__ = "0.1.0"
