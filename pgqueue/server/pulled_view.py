"""A pulled job's wire object (PULL/PULLB), read straight from the claim's row.

:func:`~pgqueue.protocol.job_view.job_view` renders the engine's job record,
which the claim builds from its row first (38 fields, six JSON decodes, five
timestamps): about half of a claiming broker's per-job Python during a drain.
A claimed job of the common shape (no option kept in ``opts``, no failed
attempt logged, not finished) has a view whose values are the row's columns
almost one for one: :func:`pulled_view` writes them directly, the same keys
in the same order with the same values; any other claim goes through
``job_view`` (``tests/unit/test_pulled_view.py`` holds the two equal).
"""

from __future__ import annotations

from typing import Any

from pgqueue.manager.rows import ClaimedJob, json_or_none
from pgqueue.protocol.job_view import empty_opts_view, job_view, last_heartbeat

__all__ = ["pulled_view"]

_EMPTY_DOCUMENTS = (None, "{}", "[]", "null")
"""``opts`` / ``attempt_log`` texts that hold nothing (what the record reads as ``{}`` / ``[]``)."""


def pulled_view(claim: ClaimedJob) -> dict[str, Any]:
    """``job_view(claim.job)``, without the job record when the claim allows."""
    row = claim.row
    if (
        row["opts"] not in _EMPTY_DOCUMENTS
        or row["attempt_log"] not in _EMPTY_DOCUMENTS
        or row.get("finished_at") is not None
    ):
        return job_view(claim.job)
    created = row["created_at"].timestamp() * 1000.0
    started_at = row["started_at"]
    started = None if started_at is None else started_at.timestamp() * 1000.0
    beat = row.get("last_heartbeat_at")
    progress = json_or_none(row["progress"])
    backoff_ms = row["backoff_ms"]
    if started is None or started == created:
        timeline = [{"state": "waiting", "timestamp": created}]
    elif started < created:
        timeline = [
            {"state": "active", "timestamp": started, "attempt": 1},
            {"state": "waiting", "timestamp": created},
        ]
    else:
        timeline = [
            {"state": "waiting", "timestamp": created},
            {"state": "active", "timestamp": started, "attempt": 1},
        ]
    wire: dict[str, Any] = {
        "id": row["id"],
        "queue": row["queue"],
        "name": row["name"],
        "data": claim.data,
        "createdAt": created,
        "runAt": row["run_at"].timestamp() * 1000.0,
        "startedAt": started,
        "completedAt": None,
        "attempts": row["attempts"],
        "backoff": backoff_ms,
        "backoffConfig": {
            "type": row["backoff_type"],
            "delay": backoff_ms,
            "maxDelay": row["backoff_max_ms"],
        },
        "dependsOn": [],
        "childrenCompleted": 0,  # no children kept in opts
        "progress": 0 if progress is None else progress,
        "progressMessage": row["progress_message"],
        "stacktrace": json_or_none(row["stacktrace"]),
        "repeat": None,
        "durable": False,
        "lastHeartbeat": last_heartbeat(
            None if beat is None else beat.timestamp() * 1000.0, started, created
        ),
        "stallCount": row["stall_count"],
        "priority": row["priority"],
        "lifo": row["lifo"],
        "maxAttempts": row["max_attempts"],
        "removeOnComplete": row["remove_on_complete"],
        "removeOnFail": row["remove_on_fail"],
        "ttl": row["ttl_ms"],
        "timeout": row["timeout_ms"],
        "uniqueKey": row["unique_key"],
        "customId": row["custom_id"],
        "parentId": row["parent_id"],
        "groupId": row["group_id"],
        "stallTimeout": row.get("stall_timeout_ms"),
        "sizeLimit": None,
        "timeline": timeline,
        "attemptLog": [],
    }
    wire.update(empty_opts_view())
    return wire
