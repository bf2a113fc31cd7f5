"""bunqueue's wire shapes: job options in, Job objects and event frames out.

Requests use bunqueue's camelCase names; the engine uses snake_case options.
:func:`job_options_from_wire` reads every option with strict types (via
:class:`~pgqueue.protocol.fields.Fields`): those of a plain kind as their
declaration in :mod:`pgqueue.vocabulary.job_options` says, the others with a
rule of their own here.  :data:`WIRE_LABELS` (from the declarations) makes the
engine's own validation speak the wire names.  :func:`job_to_wire` renders the
Job object the official clients parse (bunqueue §1.7); timestamps are float
milliseconds, unset values are omitted (``undefined`` to a JS client).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pgqueue.errors import DatabaseUnavailable, IndeterminateCommit, PgQueueError, StorageError
from pgqueue.manager.claim import GroupDefaults
from pgqueue.manager.outbox import Event
from pgqueue.protocol import Fields
from pgqueue.protocol.job_view import job_view as job_to_wire
from pgqueue.vocabulary.checks import INT4_MAX
from pgqueue.vocabulary.job_options import PLAIN_KINDS, WIRE_LABELS, JobOption, wire_options

__all__ = [
    "LEGACY_PENDING_PARENT",
    "WIRE_LABELS",
    "check_pull_group",
    "client_message",
    "event_to_wire",
    "job_input_from_wire",
    "job_options_from_wire",
    "job_to_wire",
    "removal_value",
]

LEGACY_PENDING_PARENT = "pending"


def client_message(exc: PgQueueError) -> str:
    """The text a client gets for ``exc``: infrastructure details never leak
    (``Internal server error``), except an indeterminate commit, whose message
    tells the client what to do."""
    if isinstance(exc, IndeterminateCommit):
        return exc.message
    if isinstance(exc, DatabaseUnavailable):
        return "Database unavailable, retry later"
    if isinstance(exc, StorageError):
        return "Internal server error"
    return exc.message


_WIRE_MAX_IDS = 10_000
"""Most ids a list option may carry on the wire (the engine applies each option's own cap)."""


def _read_declared(fields: Fields, option: JobOption, wire: str) -> Any:
    """One option of a plain kind, read by its declaration (bounds: the engine's)."""
    if option.kind == "boolean":
        return fields.opt_bool(wire)
    if option.kind == "ids":
        return fields.opt_job_id_list(wire, max_items=_WIRE_MAX_IDS)
    if option.kind == "texts":
        return fields.opt_str_list(wire, max_items=int(option.hi), max_len=256)
    if option.kind == "text":
        return fields.opt_str(wire, max_len=int(option.hi))
    minimum = -math.inf if option.python is not None else option.lo
    if option.kind == "integer" and option.python is None:
        return fields.opt_int(wire, minimum=int(minimum))
    return fields.opt_number(wire, minimum=minimum)


_DECLARED = tuple(
    option
    for option in wire_options()
    if option.kind in PLAIN_KINDS or (option.python is None and option.kind != "object")
)
"""The options read by :func:`_read_declared`: plain kinds, and bunqueue's options the
engine does not act on (type-checked all the same: ``durable`` only matters to
bunqueue's SQLite mode; ``groupMaxSize`` and ``sizeLimit`` are not built)."""

_DECLARED_WIRES = tuple(
    (option, wire or "") for option in _DECLARED for wire in (option.wire, *option.wire_aliases)
)
"""Each of :data:`_DECLARED` with each of its wire names, in reading order (a job names
few of them: the absent ones are skipped)."""


def removal_value(fields: Fields, name: str) -> Any:
    """removeOnComplete/removeOnFail: a boolean, or BullMQ's count / {age, count}
    (type-checked here; the engine's ``removal_policy`` gives their meaning)."""
    value = fields.get(name)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return fields.number(name, minimum=0)
    if isinstance(value, Mapping):
        keep = fields.nested(name)
        spec: dict[str, Any] = {}
        for key in ("age", "count"):
            number = keep.opt_number(key, minimum=0)
            if number is not None:
                spec[key] = number
        return spec
    raise fields.error(name, "must be a boolean, a count or {age, count}")


def check_pull_group(fields: Fields) -> GroupDefaults | None:
    """PULL's ``group{concurrency?, limit?{max, duration}}``: the worker's limits for
    job groups that have none of their own (the claim applies them)."""
    group = fields.opt_nested("group")
    if group is None:
        return None
    concurrency = group.opt_int("concurrency", minimum=1, maximum=INT4_MAX)
    limit = group.opt_nested("limit")
    if limit is None:
        return GroupDefaults(concurrency=concurrency)
    return GroupDefaults(
        concurrency=concurrency,
        max=limit.int_("max", minimum=1, maximum=INT4_MAX),
        duration_ms=limit.int_("duration", minimum=1, maximum=INT4_MAX),
    )


_NOT_OPTIONS = frozenset({"name", "data"})
"""The keys of a job input that name no option (the common PUSHB entry has no other)."""
assert _NOT_OPTIONS.isdisjoint(wire for _, wire in _DECLARED_WIRES)


def job_options_from_wire(fields: Fields, *, custom_id_key: str) -> dict[str, Any]:
    """The engine options of one job input (PUSH body, PUSHB entry, PUSHF input)."""
    opts: dict[str, Any] = {}
    message = fields.message
    if _NOT_OPTIONS.issuperset(message):
        return opts  # every option below is absent: reading each would give nothing
    for option, wire in _DECLARED_WIRES:
        if wire not in message:
            continue  # what reading it would give: nothing
        value = _read_declared(fields, option, wire)
        if value is not None and value != [] and option.python is not None:
            opts[option.python] = value
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
    dedup = fields.opt_nested("dedup")
    if dedup is not None:
        dedup.opt_number("ttl")
        for key in ("extend", "replace"):
            dedup.opt_bool(key)
    if unique is not None:
        opts["unique_key"] = unique
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
    debounce = fields.opt_str("debounceId", max_len=256, non_empty=True)
    if debounce is not None:
        opts["debounce_id"] = debounce
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
    for flag_name, engine in (
        ("removeOnComplete", "remove_on_complete"),
        ("removeOnFail", "remove_on_fail"),
    ):
        removal = removal_value(fields, flag_name)
        if removal is not None:
            opts[engine] = removal
    repeat = _repeat(fields)
    if repeat is not None:
        opts["repeat"] = repeat
    return opts


def _repeat(fields: Fields) -> dict[str, Any] | None:
    """``repeat{pattern | every, tz?, limit?, count?, startDate?, endDate?, immediately?,
    offset?, prevMillis?, jobId?}``, type-checked (the cron flow checks the values)."""
    sub = fields.opt_nested("repeat")
    if sub is None:
        return None
    out: dict[str, Any] = {}
    for key in ("pattern", "tz", "jobId"):
        text = sub.opt_str(key, max_len=256)
        if text is not None:
            out[key] = text
    for key in ("every", "limit", "count", "offset", "prevMillis"):
        number = sub.opt_number(key)
        if number is not None:
            out[key] = int(number) if float(number).is_integer() else number
    for key in ("startDate", "endDate"):
        value = sub.get(key)
        if value is None:
            continue
        out[key] = value if isinstance(value, str) else sub.number(key, minimum=0)
    for key in ("immediately", "utc"):
        flag = sub.opt_bool(key)
        if flag is not None:
            out[key] = flag
    if "pattern" not in out and "every" not in out:
        raise fields.error("repeat", "needs a pattern or every")
    return out


def job_input_from_wire(fields: Fields, *, custom_id_key: str) -> tuple[str, Any, dict[str, Any]]:
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


# Engine event type -> bunqueue eventType (QueueEvents: pushed→waiting, pulled→active,
# retried→retried).  A redrive out of the DLQ is bunqueue's "retried" (prev "failed").
_EVENT_TYPES = {"active": "pulled", "redriven": "retried"}
# Not forwarded: "dlq" repeats the terminal "failed" of the same job; "dlq_audit"
# describes an operation (no job id).
_SKIPPED = frozenset({"dlq", "dlq_audit"})
_PREV_DEFAULTS = {"redriven": "failed"}


def event_to_wire(event: Event) -> dict[str, Any] | None:
    """The ``{type: "event", event}`` frame bunqueue clients expect, or None to skip.

    Every frame carries a string ``eventType``, ``queue`` and ``jobId`` and a
    finite number ``timestamp`` (the TS client rejects everything in flight and
    reconnects on anything else).  Queue-level events (``paused``, ``resumed``,
    ``drained``, ``cleaned``, ``obliterated``) have ``jobId: ""``, as bunqueue
    sends them.  Types beyond bunqueue's (``waiting``, which bunqueue also sends,
    ``updated``, ``priority``, ``cleaned``, ``obliterated``) pass through; the
    official clients ignore types they do not know.  A ``gap`` (events retention
    deleted before this subscriber reached them) carries ``from`` and ``to``, the
    resume tokens before and after the lost range.
    """
    if event.type in _SKIPPED:
        return None
    payload = event.payload
    timestamp = float(event.timestamp)
    if not math.isfinite(timestamp):  # pragma: no cover - the database clock is finite
        return None
    body: dict[str, Any] = {
        "eventType": _EVENT_TYPES.get(event.type, event.type),
        "queue": event.queue,
        "jobId": event.job_id or "",
        "timestamp": timestamp,
        "eventId": event.resume,
        "seq": event.id,
    }
    if event.type == "completed":
        body["data"] = payload.get("returnvalue")
    elif event.type == "failed":
        body["error"] = payload.get("failedReason") or "Job failed"
        body["terminal"] = bool(payload.get("terminal"))
        body["attemptsMade"] = payload.get("attemptsMade")
        if "data" in payload:  # the job's data, when the engine records it
            body["data"] = payload["data"]
    elif event.type == "progress":
        body["progress"] = payload.get("progress")
        body["data"] = payload.get("data") or {"progress": payload.get("progress")}
    elif event.type == "gap":  # events lost to retention: from one resume token to another
        body["from"] = payload.get("from")
        body["to"] = payload.get("to")
    elif event.type in ("retried", "redriven", "removed", "waiting"):
        prev = payload.get("prev", _PREV_DEFAULTS.get(event.type))
        if isinstance(prev, str):
            body["prev"] = prev
    if event.type in ("delayed", "failed") or (event.type == "pushed" and payload.get("delay")):
        delay = payload.get("delay")
        if isinstance(delay, int | float) and not isinstance(delay, bool):
            body["delay"] = delay
    for key in ("count", "reason", "stallCount"):
        if key in payload and key not in body:
            body[key] = payload[key]
    return {"type": "event", "event": {k: v for k, v in body.items() if v is not None}}
