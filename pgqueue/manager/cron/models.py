"""A scheduler as the engine returns it, and its bunqueue wire shape."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from pgqueue.db.executor import Row
from pgqueue.db.records import record_from_row
from pgqueue.manager.rows import json_or_none, ms

__all__ = ["Scheduler"]


@dataclass(frozen=True, slots=True)
class Scheduler:
    """One cron / job scheduler (times on the database clock)."""

    name: str
    queue: str
    job_name: str
    data: Any
    pattern: str | None
    every_ms: int | None
    timezone: str | None
    immediately: bool
    max_limit: int | None
    start_at: datetime | None
    end_at: datetime | None
    prevent_overlap: bool
    skip_missed_on_restart: bool
    skip_if_no_worker: bool
    priority: int
    unique_key: str | None
    dedup: dict[str, Any] | None
    job_options: dict[str, Any]
    source: str
    executions: int
    next_run_at: datetime | None
    last_run_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Row) -> Scheduler:
        dedup = row["dedup"]
        return record_from_row(
            cls,
            row,
            data=json_or_none(row["data"]),
            dedup=None if dedup is None else orjson.loads(dedup),
            job_options=orjson.loads(row["job_options"]),
        )

    def as_wire(self) -> dict[str, Any]:
        """bunqueue's cron shape (``name, jobName, queue, schedule, repeatEvery, nextRun,
        executions, maxLimit, timezone, priority``) and pgqueue's extra fields.
        ``nextRun`` is null once the scheduler is spent (limit reached, end passed)."""
        return {
            "name": self.name,
            "jobName": self.job_name,
            "queue": self.queue,
            "schedule": self.pattern,
            "repeatEvery": self.every_ms,
            "nextRun": ms(self.next_run_at),
            "executions": self.executions,
            "maxLimit": self.max_limit,
            "timezone": self.timezone,
            "priority": self.priority,
            "data": self.data,
            "immediately": self.immediately,
            "preventOverlap": self.prevent_overlap,
            "skipMissedOnRestart": self.skip_missed_on_restart,
            "skipIfNoWorker": self.skip_if_no_worker,
            "uniqueKey": self.unique_key,
            "startDate": ms(self.start_at),
            "endDate": ms(self.end_at),
            "lastRun": ms(self.last_run_at),
            "source": self.source,
            "createdAt": ms(self.created_at),
            "updatedAt": ms(self.updated_at),
        }
