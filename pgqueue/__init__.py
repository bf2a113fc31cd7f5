"""pgqueue: a PostgreSQL-backed, multi-broker job queue speaking bunqueue's protocol.

The names below load on first use (PEP 562): ``import pgqueue.protocol`` or
``import pgqueue.errors`` loads no driver and no engine, and
``from pgqueue import Queue`` loads only what the SDK needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from pgqueue._version import __version__ as __version__

if TYPE_CHECKING:
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
    from pgqueue.manager.models import AckItem, ClaimedJob, ItemOutcome, JobCounts
    from pgqueue.runtime import PostgresQueueManager

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

# name -> the module that defines it
_HOMES = {
    "AckItem": "pgqueue.manager.models",
    "AlreadyFinalized": "pgqueue.errors",
    "BrokerFenced": "pgqueue.errors",
    "ClaimedJob": "pgqueue.manager.models",
    "Config": "pgqueue.config",
    "DuplicateJob": "pgqueue.errors",
    "FlowProducer": "pgqueue.client",
    "ItemOutcome": "pgqueue.manager.models",
    "Job": "pgqueue.client",
    "JobCounts": "pgqueue.manager.models",
    "JobFailed": "pgqueue.errors",
    "JobNotFound": "pgqueue.errors",
    "LeaseLost": "pgqueue.errors",
    "PgQueueError": "pgqueue.errors",
    "PostgresQueueManager": "pgqueue.runtime",
    "Queue": "pgqueue.client",
    "QueueEvents": "pgqueue.client",
    "UnrecoverableError": "pgqueue.errors",
    "ValidationError": "pgqueue.errors",
    "Worker": "pgqueue.client",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
