"""Job options: validate what a producer asked for, before anything is written.

Pure policy, no I/O.  :func:`build_job_spec` turns ``(queue, name, data,
options)`` into a :class:`JobSpec` or raises :class:`ValidationError` naming
the field.  Messages follow bunqueue's wording (``priority must be at most
1000000``) so that the broker can pass them through; ``labels`` renders the
field names the caller used (the broker's camelCase wire names).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pgqueue import jsontext
from pgqueue.errors import ValidationError
from pgqueue.manager.arguments import MAX_INSTANT_MS

__all__ = [
    "DEFAULT_BACKOFF_MAX_MS",
    "DEFAULT_BACKOFF_MS",
    "DEFAULT_MAX_ATTEMPTS",
    "JOB_OPTIONS",
    "MAX_NAME_LENGTH",
    "Backoff",
    "DedupMode",
    "JobSpec",
    "build_job_spec",
    "encode_json",
    "validate_job_id",
    "validate_job_name",
    "validate_queue_name",
]

MAX_NAME_LENGTH = 256
DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_BACKOFF_MS = 1_000
DEFAULT_BACKOFF_MAX_MS = 3_600_000
_DAY_MS = 86_400_000
_PRIORITY_LIMIT = 1_000_000
_QUEUE_NAME = re.compile(r"^[a-zA-Z0-9_\-.:]+$")

DedupMode = str  # 'reject' | 'extend' | 'replace'


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry delay policy: ``exponential`` (base * 2^(attempt-1)) or ``fixed``, capped."""

    type: str = "exponential"
    delay_ms: int = DEFAULT_BACKOFF_MS
    max_delay_ms: int = DEFAULT_BACKOFF_MAX_MS


DEFAULT_BACKOFF = Backoff()


@dataclass(frozen=True, slots=True)
class JobSpec:
    """One validated job, ready for admission."""

    queue: str
    name: str
    data_json: str
    id: str | None = None
    custom_id: str | None = None
    priority: int = 0
    lifo: bool = False
    delay_ms: int = 0
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff: Backoff = DEFAULT_BACKOFF
    timeout_ms: int | None = None
    ttl_ms: int | None = None
    stall_timeout_ms: int | None = None
    remove_on_complete: bool = False
    remove_on_fail: bool = False
    unique_key: str | None = None
    dedup_mode: DedupMode = "reject"
    unique_ttl_ms: int | None = None
    group_id: str | None = None
    parent_id: str | None = None
    parent_queue: str | None = None
    depends_on: tuple[str, ...] = ()
    created_at_ms: float | None = None
    opts_json: str = "{}"


def validate_queue_name(queue: object, label: str = "queue") -> str:
    """Check a queue name with bunqueue's rules and messages."""
    if queue is None or queue == "":
        raise ValidationError("Queue name is required", field=label)
    if not isinstance(queue, str):
        raise ValidationError(f"{label} must be a string", field=label)
    if len(queue) > MAX_NAME_LENGTH:
        raise ValidationError("Queue name too long (max 256 characters)", field=label)
    if not _QUEUE_NAME.match(queue):
        raise ValidationError("Queue name contains invalid characters", field=label)
    return queue


def validate_job_name(name: object, label: str = "name") -> str:
    """A job name: a non-empty printable string of at most 256 characters."""
    if (
        not isinstance(name, str)
        or not name
        or len(name) > MAX_NAME_LENGTH
        or not name.isprintable()
    ):
        raise ValidationError(
            "Job name must be a non-empty string of at most 256 characters "
            "without control characters",
            field=label,
        )
    return name


def validate_job_id(job_id: object, label: str = "jobId") -> str:
    """A job id or custom id: a non-empty printable string of at most 256 characters."""
    if not isinstance(job_id, str):
        raise ValidationError(f"{label} must be a string", field=label)
    if not job_id or len(job_id) > MAX_NAME_LENGTH or not job_id.isprintable():
        raise ValidationError(
            f"{label} must be a non-empty string of at most 256 printable characters",
            field=label,
        )
    return job_id


def encode_json(
    value: Any, *, label: str, limit: int, what: str = "Job data", wide_ints: bool = True
) -> str:
    """The JSON text of ``value``, stored as it is (see :mod:`pgqueue.jsontext`).

    Refuses, naming ``label``, what JSON cannot hold exactly: non-JSON values
    (``datetime``, ``UUID``, ``Decimal``, Enum members, dataclasses), NaN and
    infinities, NUL characters, nesting deeper than
    :data:`~pgqueue.jsontext.JSON_MAX_DEPTH`, text over ``limit`` bytes and,
    unless ``wide_ints`` (the TCP transport carries 64 bits), integers beyond
    64 bits.  The same rules and messages on every transport.
    """
    if value is None:
        return "null"
    problem = jsontext.value_error(value, wide_ints=wide_ints)
    if problem == jsontext.NUL_PROBLEM:
        raise ValidationError(f"{what} must not contain NUL characters", field=label)
    if problem is not None:
        raise ValidationError(f"{what} must be JSON serializable: {problem}", field=label)
    try:
        text = jsontext.dumps(value)
    except UnicodeEncodeError as exc:
        raise ValidationError(f"{what} must be valid Unicode", field=label) from exc
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValidationError(f"{what} must be JSON serializable: {exc}", field=label) from exc
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if size > limit:
        raise ValidationError(f"{what} too large ({size} bytes, max {limit})", field=label)
    return text


class _Reader:
    """Typed access to one job's options, with field-named errors."""

    __slots__ = ("labels", "opts", "prefix")

    def __init__(self, opts: Mapping[str, Any], labels: Mapping[str, str], prefix: str) -> None:
        self.opts = opts
        self.labels = labels
        self.prefix = prefix

    def label(self, key: str) -> str:
        return self.labels.get(key, key)

    def fail(self, key: str, message: str) -> ValidationError:
        return ValidationError(f"{self.prefix}{self.label(key)} {message}", field=key)

    def integer(self, key: str, lo: int, hi: int, default: int | None = None) -> int | None:
        value = self.opts.get(key)
        if value is None:
            return default
        return self.check_int(key, value, lo, hi)

    def check_int(self, key: str, value: Any, lo: int, hi: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, "must be a number")
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail(key, "must be a finite number")
            if not value.is_integer():
                raise self.fail(key, "must be an integer")
        number = int(value)
        if number < lo:
            raise self.fail(key, f"must be at least {lo}")
        if number > hi:
            raise self.fail(key, f"must be at most {hi}")
        return number

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self.opts.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "must be a boolean")
        return value

    def string(self, key: str) -> str | None:
        value = self.opts.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(key, "must be a string")
        if not value or len(value) > MAX_NAME_LENGTH or not value.isprintable():
            raise self.fail(key, "must be a non-empty string of at most 256 printable characters")
        return value

    def string_list(self, key: str, limit: int = 1000) -> tuple[str, ...]:
        value = self.opts.get(key)
        if value is None:
            return ()
        if not isinstance(value, list | tuple) or len(value) > limit:
            raise self.fail(key, f"must be a list of at most {limit} strings")
        out = []
        for item in value:
            if not isinstance(item, str) or not item or len(item) > MAX_NAME_LENGTH:
                raise self.fail(key, "must be a list of non-empty strings")
            out.append(item)
        return tuple(out)


def _backoff(reader: _Reader) -> Backoff:
    value = reader.opts.get("backoff")
    if value is None:
        return DEFAULT_BACKOFF
    if isinstance(value, int | float) and not isinstance(value, bool):
        delay = reader.check_int("backoff", value, 0, _DAY_MS)
        return Backoff("exponential", delay, DEFAULT_BACKOFF_MAX_MS)
    if not isinstance(value, Mapping):
        raise reader.fail("backoff", "must be a number or {type, delay}")
    unknown = set(value) - {"type", "delay", "max_delay", "maxDelay"}
    if unknown:
        raise reader.fail("backoff", f"has unknown keys: {', '.join(sorted(unknown))}")
    kind = value.get("type", "exponential")
    if kind not in ("exponential", "fixed"):
        raise ValidationError(
            f"{reader.prefix}{reader.label('backoff')}.type must be 'exponential' or 'fixed'",
            field="backoff",
        )
    delay = reader.check_int("backoff", value.get("delay", DEFAULT_BACKOFF_MS), 0, _DAY_MS)
    cap_value = value.get("max_delay", value.get("maxDelay", DEFAULT_BACKOFF_MAX_MS))
    cap = reader.check_int("backoff", cap_value, 0, _DAY_MS)
    return Backoff(kind, delay, cap)


def _dedup(reader: _Reader) -> tuple[DedupMode, int | None]:
    value = reader.opts.get("dedup")
    if value is None:
        return "reject", None
    if not isinstance(value, Mapping):
        raise reader.fail("dedup", "must be a map {ttl?, extend?, replace?}")
    unknown = set(value) - {"ttl", "extend", "replace"}
    if unknown:
        raise reader.fail("dedup", f"has unknown keys: {', '.join(sorted(unknown))}")
    sub = _Reader(value, {k: f"{reader.label('dedup')}.{k}" for k in value}, reader.prefix)
    ttl = sub.integer("ttl", 1, 365 * _DAY_MS)
    if sub.boolean("replace"):
        return "replace", ttl
    if sub.boolean("extend"):
        if ttl is None:
            raise reader.fail("dedup", "extend needs a ttl")
        return "extend", ttl
    return "reject", ttl


_OPTS_BOOLEANS = (
    "fail_parent_on_failure",
    "ignore_dependency_on_failure",
    "remove_dependency_on_failure",
    "continue_parent_on_failure",
)

JOB_OPTIONS = frozenset(
    {
        "priority",
        "lifo",
        "delay",
        "attempts",
        "max_attempts",
        "backoff",
        "timeout",
        "ttl",
        "stall_timeout",
        "job_id",
        "custom_id",
        "remove_on_complete",
        "remove_on_fail",
        "unique_key",
        "dedup",
        "depends_on",
        "parent_id",
        "parent_queue",
        "group_id",
        "tags",
        "children_ids",
        "stack_trace_limit",
        "keep_logs",
        "timestamp",
        *_OPTS_BOOLEANS,
    }
)


def build_job_spec(
    queue: str,
    name: object,
    data: Any,
    options: Mapping[str, Any] | None = None,
    *,
    max_payload_bytes: int,
    labels: Mapping[str, str] | None = None,
    prefix: str = "",
    queue_checked: bool = False,
) -> JobSpec:
    """Validate one job.  Unknown option names are refused (they are typos)."""
    if not queue_checked:
        validate_queue_name(queue)
    labels = labels or {}
    try:
        validate_job_name(name, labels.get("name", "name"))
        data_json = encode_json(data, label=labels.get("data", "data"), limit=max_payload_bytes)
    except ValidationError as exc:
        if not prefix:
            raise
        raise ValidationError(prefix + exc.message, field=exc.field) from exc
    if not options:
        return JobSpec(queue=queue, name=str(name), data_json=data_json)
    unknown = set(options) - JOB_OPTIONS
    if unknown:
        raise ValidationError(
            f"{prefix}unknown job option: {', '.join(sorted(unknown))}", field=min(unknown)
        )
    reader = _Reader(options, labels, prefix)
    attempts_key = "max_attempts" if options.get("max_attempts") is not None else "attempts"
    custom_id = reader.string("job_id") or reader.string("custom_id")
    has_group = options.get("group_id") is not None
    priority_lo, priority_hi = (0, 2_097_151) if has_group else (-_PRIORITY_LIMIT, _PRIORITY_LIMIT)
    dedup_mode, unique_ttl = _dedup(reader)
    unique_key = reader.string("unique_key")
    depends_on = reader.string_list("depends_on")
    extras: dict[str, Any] = {}
    tags = reader.string_list("tags", limit=100)
    if tags:
        extras["tags"] = list(tags)
    if depends_on:
        extras["depends_on"] = list(depends_on)
    children = reader.string_list("children_ids", limit=10_000)
    if children:
        extras["children_ids"] = list(children)
    for key in ("stack_trace_limit", "keep_logs"):
        value = reader.integer(key, 0, 1_000_000)
        if value is not None:
            extras[key] = value
    for key in _OPTS_BOOLEANS:
        if reader.boolean(key):
            extras[key] = True
    timestamp = options.get("timestamp")
    if timestamp is not None:
        timestamp = float(reader.check_int("timestamp", timestamp, 0, MAX_INSTANT_MS))
    return JobSpec(
        queue=queue,
        name=str(name),
        data_json=data_json,
        custom_id=custom_id,
        id=custom_id,
        priority=reader.integer("priority", priority_lo, priority_hi, 0) or 0,
        lifo=reader.boolean("lifo"),
        delay_ms=reader.integer("delay", 0, 365 * _DAY_MS, 0) or 0,
        max_attempts=reader.integer(attempts_key, 1, 1000, DEFAULT_MAX_ATTEMPTS)
        or DEFAULT_MAX_ATTEMPTS,
        backoff=_backoff(reader),
        timeout_ms=reader.integer("timeout", 0, _DAY_MS) or None,
        ttl_ms=reader.integer("ttl", 0, 365 * _DAY_MS) or None,
        stall_timeout_ms=reader.integer("stall_timeout", 0, _DAY_MS) or None,
        remove_on_complete=reader.boolean("remove_on_complete"),
        remove_on_fail=reader.boolean("remove_on_fail"),
        unique_key=unique_key,
        dedup_mode=dedup_mode if unique_key else "reject",
        unique_ttl_ms=unique_ttl if unique_key else None,
        group_id=reader.string("group_id"),
        parent_id=reader.string("parent_id"),
        parent_queue=reader.string("parent_queue"),
        depends_on=depends_on,
        created_at_ms=timestamp,
        opts_json=json.dumps(extras, separators=(",", ":")) if extras else "{}",
    )


def spec_ids_unique(specs: Sequence[JobSpec]) -> bool:
    """Whether no two specs of a batch carry the same explicit id."""
    seen: set[str] = set()
    for spec in specs:
        if spec.id is not None:
            if spec.id in seen:
                return False
            seen.add(spec.id)
    return True
