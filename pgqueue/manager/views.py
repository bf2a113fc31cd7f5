"""Jobs in bunqueue's wire shape: what clients of every transport see.

A plain, JSON-able dict (camelCase, float millisecond timestamps), used by the
broker's TCP and HTTP answers and by the SDK's embedded transport, so a job
looks the same however it is reached.
"""

from __future__ import annotations

from typing import Any

from pgqueue.manager.models import Job

__all__ = ["job_view"]


def _ms(value: float | None) -> float | None:
    return None if value is None else float(value)


def job_view(job: Job, *, with_state: bool = False) -> dict[str, Any]:
    """The bunqueue Job object for ``job`` (plus state/returnvalue/failedReason)."""
    options = job.options
    children = options.get("children_ids") or []
    wire: dict[str, Any] = {
        "id": job.id,
        "queue": job.queue,
        "name": job.name,
        "data": job.data,
        "createdAt": job.created_at,
        "runAt": job.run_at if job.finished_at is None else job.created_at,
        "startedAt": _ms(job.started_at),
        "completedAt": _ms(job.finished_at),
        "attempts": job.attempts,
        "backoff": job.backoff["delay"],
        "backoffConfig": dict(job.backoff),
        "dependsOn": list(options.get("depends_on") or []),
        "childrenIds": list(children),
        "childrenCompleted": max(0, len(children) - job.pending_dependencies),
        "tags": list(options.get("tags") or []),
        "progress": job.progress if job.progress is not None else 0,
        "progressMessage": job.progress_message,
        "stacktrace": job.stacktrace,
        "repeat": None,
        "durable": False,
        "lastHeartbeat": _ms(job.lease_until),
        "stallCount": job.stall_count,
        "priority": job.priority,
        "lifo": job.lifo,
        "maxAttempts": job.max_attempts,
        "removeOnComplete": job.remove_on_complete,
        "removeOnFail": job.remove_on_fail,
        "ttl": job.ttl_ms,
        "timeout": job.timeout_ms,
        "uniqueKey": job.unique_key,
        "customId": job.custom_id,
        "parentId": job.parent_id,
        "groupId": job.group_id,
        "stallTimeout": None,
        "stackTraceLimit": options.get("stack_trace_limit", 10),
        "keepLogs": options.get("keep_logs"),
        "sizeLimit": None,
        "failParentOnFailure": bool(options.get("fail_parent_on_failure")),
        "removeDependencyOnFailure": bool(options.get("remove_dependency_on_failure")),
        "continueParentOnFailure": bool(options.get("continue_parent_on_failure")),
        "ignoreDependencyOnFailure": bool(options.get("ignore_dependency_on_failure")),
        "timeline": [],
        "attemptLog": list(job.attempt_log),
    }
    if with_state:
        wire["state"] = job.state
        if job.state == "completed":
            wire["returnvalue"] = job.result
        if job.failed_reason is not None or job.state == "failed":
            wire["failedReason"] = job.error or job.failed_reason
    return wire
