"""Jobs in bunqueue's wire shape: what clients of every transport see.

A plain, JSON-able dict (camelCase, float millisecond timestamps), used by the
broker's TCP and HTTP answers and by the SDK's embedded transport, so a job
looks the same however it is reached.  It is part of the protocol, not of the
engine: it reads the job record of the vocabulary
(:class:`~pgqueue.vocabulary.job_record.Job`), which the engine builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pgqueue.vocabulary.job_options import opts_options
from pgqueue.vocabulary.job_record import Job

__all__ = ["empty_opts_view", "job_view", "last_heartbeat"]


def _ms(value: float | None) -> float | None:
    return None if value is None else float(value)


def last_heartbeat(beat: float | None, started: float | None, created: float) -> float:
    """When the job's lease was last renewed (``lastHeartbeat``): its last
    heartbeat, else its claim (bunqueue sets it at the claim too), else its creation."""
    if beat is None:
        return float(created if started is None else started)
    return float(beat if started is None else max(beat, started))


def empty_opts_view() -> dict[str, Any]:
    """The view's keys of an empty ``opts`` document: every option at its default."""
    shown = dict(_EMPTY)
    for key in _EMPTY_LISTS:
        shown[key] = list(_EMPTY[key])  # each view owns its lists
    return shown


def _from_opts(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options kept in the job's ``opts`` document, as their declarations show them."""
    if not options:  # the common case (a no-option job)
        return empty_opts_view()
    shown = {}
    for name, key, kind, default in _SHOWN:
        value = options.get(name, default)
        if kind == "list":
            value = list(value or [])
        elif kind == "boolean":
            value = bool(value)
        shown[key] = value
    return shown


# (stored name, wire name, how it is shown, default): read once per process
_SHOWN: tuple[tuple[str, str, str, Any], ...] = tuple(
    (
        option.name,
        option.wire or option.name,
        "list" if option.kind in ("ids", "texts") else option.kind,
        option.view_default,
    )
    for option in opts_options()
    if option.view
)
_EMPTY: dict[str, Any] = {}
_EMPTY = _from_opts({"": None})  # the view of an empty ``opts`` (no option is named "")
_EMPTY_LISTS = tuple(key for _, key, kind, _ in _SHOWN if kind == "list")


TIMELINE_LIMIT = 20  # bunqueue keeps the last 20 entries


def _timeline(job: Job) -> list[dict[str, Any]]:
    """bunqueue's ``timeline`` (``[{state, timestamp, attempt?, error?}]``, the last
    20) from what the job row keeps: its creation, each failed attempt of the
    attempt log, the current claim and how it finished."""
    created = float(job.created_at)
    if not job.attempt_log and job.finished_at is None:  # a first claim, or a waiting job
        if job.started_at is None:
            return [{"state": "waiting", "timestamp": created}]
        started = float(job.started_at)
        if started == created:
            return [{"state": "waiting", "timestamp": created}]
        active = {"state": "active", "timestamp": started, "attempt": 1}
        if started < created:
            return [active, {"state": "waiting", "timestamp": created}]
        return [{"state": "waiting", "timestamp": created}, active]
    entries: list[dict[str, Any]] = [{"state": "waiting", "timestamp": created}]
    for attempt in job.attempt_log:
        number = attempt.get("attempt")
        if attempt.get("startedAt") is not None:
            entries.append(
                {"state": "active", "timestamp": float(attempt["startedAt"]), "attempt": number}
            )
        if attempt.get("failedAt") is not None:
            failed: dict[str, Any] = {
                "state": "failed",
                "timestamp": float(attempt["failedAt"]),
                "attempt": number,
            }
            if attempt.get("error"):
                failed["error"] = str(attempt["error"])
            entries.append(failed)
    current = len(job.attempt_log) + 1
    if job.started_at is not None and all(e["timestamp"] != float(job.started_at) for e in entries):
        entries.append({"state": "active", "timestamp": float(job.started_at), "attempt": current})
    if job.finished_at is not None and job.state == "completed":
        entries.append(
            {"state": "completed", "timestamp": float(job.finished_at), "attempt": current}
        )
    elif job.finished_at is not None and job.state == "failed" and not job.attempt_log:
        failed = {"state": "failed", "timestamp": float(job.finished_at), "attempt": current}
        if job.error:
            failed["error"] = job.error
        entries.append(failed)  # else the last attempt entry is the failure
    entries.sort(key=lambda e: float(e["timestamp"]))
    return entries[-TIMELINE_LIMIT:]


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
        "childrenCompleted": max(0, len(children) - job.pending_dependencies),
        "progress": job.progress if job.progress is not None else 0,
        "progressMessage": job.progress_message,
        "stacktrace": job.stacktrace,
        "repeat": None,
        "durable": False,
        "lastHeartbeat": last_heartbeat(job.last_heartbeat_at, job.started_at, job.created_at),
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
        "stallTimeout": job.stall_timeout_ms,
        "sizeLimit": None,
        "timeline": _timeline(job),
        "attemptLog": list(job.attempt_log),
    }
    wire.update(_from_opts(options))
    if with_state:
        wire["state"] = job.state
        if job.state == "completed":
            wire["returnvalue"] = job.result
        if job.failed_reason is not None or job.state == "failed":
            wire["failedReason"] = job.error or job.failed_reason
    return wire
