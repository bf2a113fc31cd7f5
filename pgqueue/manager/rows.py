"""Database rows to engine objects (one place that knows the column names)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pgqueue import jsontext
from pgqueue.db.executor import Row
from pgqueue.manager.models import ClaimedJob, Job

__all__ = ["claimed_from_row", "job_from_row", "json_or_none", "ms", "reported_state"]


def ms(value: datetime | None) -> float | None:
    """A timestamp as milliseconds since the epoch (what the wire carries)."""
    return None if value is None else value.timestamp() * 1000.0


def json_or_none(text: str | None) -> Any:
    return None if text is None else jsontext.loads(text)


def reported_state(stored: str, run_at: datetime, priority: int, now: datetime) -> str:
    """The state a client sees: pending splits into delayed / prioritized / waiting."""
    if stored != "pending":
        return stored
    if run_at > now:
        return "delayed"
    return "prioritized" if priority > 0 else "waiting"


def job_from_row(row: Row, *, state: str | None = None) -> Job:
    stored = row["state"]
    now = row.get("now")
    if state is None:
        state = reported_state(stored, row["run_at"], row["priority"], now) if now else stored
    return Job(
        id=row["id"],
        queue=row["queue"],
        name=row["name"],
        data=json_or_none(row["data"]),
        state=state,
        priority=row["priority"],
        lifo=row["lifo"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        created_at=row["created_at"].timestamp() * 1000.0,
        run_at=row["run_at"].timestamp() * 1000.0,
        started_at=ms(row["started_at"]),
        finished_at=ms(row.get("finished_at")),
        progress=json_or_none(row["progress"]),
        progress_message=row["progress_message"],
        result=json_or_none(row.get("result")),
        failed_reason=row.get("failed_reason"),
        error=row.get("error", row.get("last_error")),
        stacktrace=json_or_none(row["stacktrace"]),
        custom_id=row["custom_id"],
        unique_key=row["unique_key"],
        parent_id=row["parent_id"],
        parent_queue=row["parent_queue"],
        group_id=row["group_id"],
        fence=row["fence"],
        stall_count=row["stall_count"],
        timeout_ms=row["timeout_ms"],
        ttl_ms=row["ttl_ms"],
        remove_on_complete=row["remove_on_complete"],
        remove_on_fail=row["remove_on_fail"],
        backoff={
            "type": row["backoff_type"],
            "delay": row["backoff_ms"],
            "maxDelay": row["backoff_max_ms"],
        },
        attempt_log=json_or_none(row["attempt_log"]) or [],
        options=json_or_none(row["opts"]) or {},
        pending_dependencies=row.get("pending_deps") or 0,
        lease_until=ms(row.get("lease_until")),
        lease_owner=row.get("lease_owner"),
        stall_timeout_ms=row.get("stall_timeout_ms"),
        last_heartbeat_at=ms(row.get("last_heartbeat_at")),
    )


def claimed_from_row(row: Row) -> ClaimedJob:
    job = job_from_row(row, state="active")
    return ClaimedJob(
        job=job,
        token=row["lease_token"],
        fence=row["fence"],
        lease_until=row["lease_until"].timestamp() * 1000.0,
    )
