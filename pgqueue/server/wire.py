"""bunqueue's wire shapes: job options in, Job objects and event frames out.

Requests use bunqueue's camelCase names; the engine uses snake_case options.
:func:`job_options_from_wire` reads every option with strict types (via
:class:`~pgqueue.protocol.fields.Fields`) and :data:`WIRE_LABELS` makes the
engine's own validation speak the wire names.  :func:`job_to_wire` renders the
Job object the official clients parse (bunqueue §1.7); timestamps are float
milliseconds, unset values are omitted (``undefined`` to a JS client).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pgqueue.manager.models import Job
from pgqueue.manager.outbox import Event
from pgqueue.protocol import Fields

__all__ = [
    "LEGACY_PENDING_PARENT",
    "WIRE_LABELS",
    "event_to_wire",
    "job_input_from_wire",
    "job_options_from_wire",
    "job_to_wire",
]

LEGACY_PENDING_PARENT = "pending"

WIRE_LABELS: Mapping[str, str] = {
    "attempts": "maxAttempts",
    "max_attempts": "maxAttempts",
    "job_id": "jobId",
    "unique_key": "uniqueKey",
    "depends_on": "dependsOn",
    "parent_id": "parentId",
    "parent_queue": "parentQueue",
    "children_ids": "childrenIds",
    "group_id": "groupId",
    "remove_on_complete": "removeOnComplete",
    "remove_on_fail": "removeOnFail",
    "stall_timeout": "stallTimeout",
    "stack_trace_limit": "stackTraceLimit",
    "keep_logs": "keepLogs",
    "fail_parent_on_failure": "failParentOnFailure",
    "ignore_dependency_on_failure": "ignoreDependencyOnFailure",
    "remove_dependency_on_failure": "removeDependencyOnFailure",
    "continue_parent_on_failure": "continueParentOnFailure",
}

_NUMBERS = {
    "priority": "priority",
    "delay": "delay",
    "ttl": "ttl",
    "timeout": "timeout",
    "stallTimeout": "stall_timeout",
    "stackTraceLimit": "stack_trace_limit",
    "keepLogs": "keep_logs",
    "timestamp": "timestamp",
}
_FLAGS = {
    "lifo": "lifo",
    "failParentOnFailure": "fail_parent_on_failure",
    "ignoreDependencyOnFailure": "ignore_dependency_on_failure",
    "removeDependencyOnFailure": "remove_dependency_on_failure",
    "continueParentOnFailure": "continue_parent_on_failure",
}


def _removal_flag(fields: Fields, name: str) -> bool | None:
    """removeOnComplete/removeOnFail: a boolean, or BullMQ's count / {age, count}
    (any of which asks for removal)."""
    value = fields.get(name)
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value >= 0:
        return value > 0
    if isinstance(value, Mapping):
        return True
    raise fields.error(name, "must be a boolean, a count or {age, count}")


def job_options_from_wire(fields: Fields, *, custom_id_key: str) -> dict[str, Any]:
    """The engine options of one job input (PUSH body, PUSHB entry, PUSHF input)."""
    opts: dict[str, Any] = {}
    for wire, engine in _NUMBERS.items():
        value = fields.opt_number(wire)
        if value is not None:
            opts[engine] = value
    for wire, engine in _FLAGS.items():
        flag = fields.opt_bool(wire)
        if flag is not None:
            opts[engine] = flag
    for wire in ("maxAttempts", "attempts"):
        value = fields.opt_number(wire)
        if value is not None:
            opts["attempts"] = value
    backoff = fields.get("backoff")
    if backoff is not None:
        if isinstance(backoff, Mapping):
            sub = fields.nested("backoff")
            kind = sub.opt_str("type")
            spec: dict[str, Any] = {"type": kind or "exponential"}
            for key in ("delay", "maxDelay"):
                number = sub.opt_number(key)
                if number is not None:
                    spec[key] = number
            opts["backoff"] = spec
        else:
            opts["backoff"] = fields.number("backoff")
    custom = fields.opt_job_id(custom_id_key)
    if custom is None and custom_id_key != "jobId":
        custom = fields.opt_job_id("jobId")
    if custom is not None:
        opts["job_id"] = custom
    unique = fields.opt_str("uniqueKey", max_len=256, non_empty=True)
    if unique is not None:
        opts["unique_key"] = unique
        dedup = fields.opt_nested("dedup")
        if dedup is not None:
            spec = {}
            ttl = dedup.opt_number("ttl")
            if ttl is not None:
                spec["ttl"] = ttl
            for key in ("extend", "replace"):
                flag = dedup.opt_bool(key)
                if flag is not None:
                    spec[key] = flag
            opts["dedup"] = spec
    depends = fields.opt_job_id_list("dependsOn", max_items=10_000)
    if depends:
        opts["depends_on"] = depends
    children = fields.opt_job_id_list("childrenIds", max_items=10_000)
    if children:
        opts["children_ids"] = children
    parent = fields.opt_job_id("parentId")
    if parent is not None and parent != LEGACY_PENDING_PARENT:
        opts["parent_id"] = parent
    group = fields.get("groupId")
    if group is not None:
        if isinstance(group, int) and not isinstance(group, bool):
            group = str(group)
        if not isinstance(group, str) or not group or len(group) > 256:
            raise fields.error("groupId", "must be a non-empty string of at most 256 characters")
        opts["group_id"] = group
    tags = fields.opt_str_list("tags", max_items=100, max_len=256)
    if tags:
        opts["tags"] = tags
    for flag_name, engine in (("removeOnComplete", "remove_on_complete"),
                              ("removeOnFail", "remove_on_fail")):
        flag = _removal_flag(fields, flag_name)
        if flag is not None:
            opts[engine] = flag
    if fields.get("repeat") is not None:
        raise fields.error("repeat", "is not supported yet (repeatable jobs come with cron)")
    return opts


def job_input_from_wire(
    fields: Fields, *, custom_id_key: str
) -> tuple[str, Any, dict[str, Any]]:
    """(name, data, engine options) of one job input.

    bunqueue's legacy envelope: with no top-level ``name``, a string ``name``
    inside a map ``data`` is the job name and is moved out of the data.
    """
    if "data" not in fields.message:
        data: Any = None
    else:
        data = fields.json_value("data")
    name = fields.opt_job_name("name")
    if name is None:
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            data = dict(data)
            name = data.pop("name")
            if not name:
                raise fields.error("name", "must be a non-empty string")
        else:
            name = "default"
    opts = job_options_from_wire(fields, custom_id_key=custom_id_key)
    if isinstance(data, dict) and "parent_queue" not in opts:
        parent_queue = data.get("__parentQueue")
        if isinstance(parent_queue, str) and "parent_id" in opts:
            opts["parent_queue"] = parent_queue
    return name, data, opts


def _ms(value: float | None) -> float | None:
    return None if value is None else float(value)


def job_to_wire(job: Job, *, with_state: bool = False) -> dict[str, Any]:
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
    }
    if with_state:
        wire["state"] = job.state
        if job.state == "completed":
            wire["returnvalue"] = job.result
        if job.failed_reason is not None or job.state == "failed":
            wire["failedReason"] = job.error or job.failed_reason
    return wire


_EVENT_TYPES = {"active": "pulled", "dlq": "failed"}


def event_to_wire(event: Event) -> dict[str, Any] | None:
    """The ``{type: "event", event}`` frame bunqueue clients expect, or None to skip.

    Every event carries a string ``eventType``, ``queue`` and ``jobId`` and a
    number ``timestamp`` (the TS client reconnects on anything else).
    """
    if event.type in ("dlq", "dlq_audit"):
        return None
    payload = event.payload
    body: dict[str, Any] = {
        "eventType": _EVENT_TYPES.get(event.type, event.type),
        "queue": event.queue,
        "jobId": event.job_id or f"__queue__:{event.queue}",
        "timestamp": event.timestamp,
        "eventId": event.resume,
    }
    if event.type == "completed":
        body["data"] = payload.get("returnvalue")
    elif event.type == "failed":
        body["error"] = payload.get("failedReason") or "Job failed"
        body["terminal"] = bool(payload.get("terminal"))
        body["attemptsMade"] = payload.get("attemptsMade")
    elif event.type == "progress":
        body["progress"] = payload.get("progress")
        body["data"] = payload.get("data") or {"progress": payload.get("progress")}
    elif event.type in ("retried", "removed", "waiting"):
        if "prev" in payload:
            body["prev"] = payload["prev"]
    elif event.type == "delayed" or (event.type == "pushed" and payload.get("delay")):
        body["delay"] = payload.get("delay")
    for key in ("count", "reason", "stallCount"):
        if key in payload and key not in body:
            body[key] = payload[key]
    return {"type": "event", "event": {k: v for k, v in body.items() if v is not None}}

