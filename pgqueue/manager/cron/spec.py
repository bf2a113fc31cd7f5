"""A scheduler as asked for, validated before anything is written (pure, no I/O).

:func:`build_scheduler_spec` checks every field and builds the job template
once (:func:`~pgqueue.manager.options.build_job_spec`), so that a bad pattern,
timezone, interval or job option is refused naming the field, and a tick
never meets an invalid template later.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

from pgqueue.errors import ValidationError
from pgqueue.manager.arguments import check_bool, check_int, check_text
from pgqueue.manager.cron.models import Scheduler
from pgqueue.manager.cron.schedule import Timing, check_pattern, check_timezone
from pgqueue.manager.options import JobSpec, build_job_spec, encode_json
from pgqueue.vocabulary.checks import INT4_MAX, MAX_EPOCH_MS
from pgqueue.vocabulary.job_options import WIRE_LABELS
from pgqueue.vocabulary.names import MAX_NAME_LENGTH

__all__ = [
    "MAX_EVERY_MS",
    "SchedulerSpec",
    "Source",
    "build_scheduler_spec",
    "check_scheduler_name",
    "job_template",
    "template_spec",
    "tick_unique_key",
]

Source = Literal["cron", "repeat"]
MAX_EVERY_MS = 2**53 - 1
_TEMPLATE_REFUSED = ("job_id", "custom_id", "repeat", "parent_id", "depends_on", "children_ids")


def check_scheduler_name(value: Any, field: str = "name") -> str:
    return check_text(value, field, MAX_NAME_LENGTH, allow_empty=False)


@dataclass(frozen=True, slots=True)
class SchedulerSpec:
    """One validated scheduler (see the migration 0010 columns).

    Only :func:`build_scheduler_spec` builds one, and it gives every field: the
    defaults of a request are those of its arguments, not repeated here.
    """

    name: str
    queue: str
    job_name: str
    data_json: str
    timing: Timing
    immediately: bool
    max_limit: int | None
    prevent_overlap: bool
    skip_missed_on_restart: bool
    skip_if_no_worker: bool
    priority: int
    unique_key: str | None
    dedup: Mapping[str, Any] | None
    job_options: Mapping[str, Any] | None
    source: Source
    executions_from: int

    @property
    def job_options_json(self) -> str:
        return json.dumps(dict(self.job_options or {}), separators=(",", ":"))

    @property
    def dedup_json(self) -> str | None:
        return None if self.dedup is None else json.dumps(dict(self.dedup))


def _instant(value: Any, field: str) -> datetime | None:
    """A date: ms since the epoch, an ISO 8601 text, or an aware datetime."""
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValidationError(f"{field} must carry a time zone", field=field)
        return value.astimezone(UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValidationError(f"{field} must be a date (ISO 8601 or ms)", field=field) from exc
        return _instant(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC), field)
    if isinstance(value, float) and value.is_integer() is False and 0 <= value <= MAX_EPOCH_MS:
        return datetime.fromtimestamp(value / 1000, UTC)
    ms = check_int(value, field, 0, MAX_EPOCH_MS)
    return datetime.fromtimestamp(ms / 1000, UTC)


def tick_unique_key(name: str, unique_key: str | None, prevent_overlap: bool) -> str | None:
    """The unique key of a tick's job: the scheduler's own, else ``cron:<name>`` with
    ``preventOverlap`` (bunqueue's key: no new tick job while the last one is live)."""
    if unique_key is not None:
        return unique_key
    return f"cron:{name}" if prevent_overlap else None


def template_spec(
    spec: SchedulerSpec | Scheduler, *, data_json: str, max_payload_bytes: int
) -> JobSpec:
    """The job every tick of ``spec`` (a request, or a stored scheduler) admits."""
    return job_template(
        spec.queue,
        spec.job_name,
        spec.job_options,
        priority=spec.priority,
        unique_key=tick_unique_key(spec.name, spec.unique_key, spec.prevent_overlap),
        dedup=spec.dedup,
        data_json=data_json,
        max_payload_bytes=max_payload_bytes,
    )


def job_template(
    queue: str,
    job_name: str,
    job_options: Mapping[str, Any] | None,
    *,
    priority: int,
    unique_key: str | None,
    dedup: Mapping[str, Any] | None,
    data_json: str,
    max_payload_bytes: int,
) -> JobSpec:
    options: dict[str, Any] = dict(job_options or {})
    refused = sorted(set(options) & set(_TEMPLATE_REFUSED))
    if refused:
        raise ValidationError(
            f"jobOptions.{refused[0]} is not allowed in a scheduler's job template",
            field="jobOptions",
        )
    if priority:
        options["priority"] = priority
    if unique_key is not None:
        options["unique_key"] = unique_key
        if dedup:
            options["dedup"] = dict(dedup)
    spec = build_job_spec(
        queue,
        job_name,
        None,
        options,
        max_payload_bytes=max_payload_bytes,
        labels=WIRE_LABELS,
        prefix="jobOptions.",
    )
    return replace(spec, data_json=data_json)


def build_scheduler_spec(
    name: Any,
    queue: Any,
    *,
    data: Any = None,
    data_json: str | None = None,
    job_name: Any = "default",
    pattern: Any = None,
    every_ms: Any = None,
    timezone: Any = None,
    immediately: Any = False,
    limit: Any = None,
    start_date: Any = None,
    end_date: Any = None,
    prevent_overlap: Any = True,
    skip_missed_on_restart: Any = True,
    skip_if_no_worker: Any = False,
    priority: Any = 0,
    unique_key: Any = None,
    dedup: Any = None,
    job_options: Mapping[str, Any] | None = None,
    source: Source = "cron",
    count: Any = None,
    max_payload_bytes: int,
) -> SchedulerSpec:
    """Validate a scheduler; raise :class:`ValidationError` naming the field.

    ``pattern`` wins over ``every_ms`` when both are set (bunqueue's rule);
    ``limit`` of 0 or less means unlimited.  ``count`` (BullMQ's repeat
    counter) starts the executions of a new scheduler.
    """
    name = check_scheduler_name(name)
    zone = check_timezone(timezone)
    if pattern is not None:
        pattern = check_pattern(pattern, zone)
        every_ms = None
    elif every_ms is not None:
        every_ms = check_int(every_ms, "repeatEvery", 1, MAX_EVERY_MS, floats=True)
    else:
        raise ValidationError("Cron job must have either schedule or repeatEvery", field="schedule")
    max_limit = None
    if limit is not None:
        number = check_int(limit, "maxLimit", -INT4_MAX, INT4_MAX)
        max_limit = number if number > 0 else None
    start_at = _instant(start_date, "startDate")
    end_at = _instant(end_date, "endDate")
    if start_at is not None and end_at is not None and end_at < start_at:
        raise ValidationError("endDate must not be before startDate", field="endDate")
    priority = check_int(priority if priority is not None else 0, "priority", -1_000_000, 1_000_000)
    if unique_key is not None:
        unique_key = check_text(unique_key, "uniqueKey", 256, allow_empty=False)
    if dedup is not None and not isinstance(dedup, Mapping):
        raise ValidationError("dedup must be a map {ttl?, extend?, replace?}", field="dedup")
    if job_options is not None and not isinstance(job_options, Mapping):
        raise ValidationError("jobOptions must be a map", field="jobOptions")
    executions_from = 0 if count is None else check_int(count, "count", 0, INT4_MAX)
    if data_json is None:
        data_json = encode_json(data, label="data", limit=max_payload_bytes)
    spec = SchedulerSpec(
        name=name,
        queue=queue,
        job_name=job_name if job_name is not None else "default",
        data_json=data_json,
        timing=Timing(
            pattern=pattern,
            every_ms=every_ms,
            timezone=None if timezone is None else str(timezone),
            start_at=start_at,
            end_at=end_at,
        ),
        immediately=check_bool(False if immediately is None else immediately, "immediately"),
        max_limit=max_limit,
        prevent_overlap=check_bool(prevent_overlap, "preventOverlap"),
        skip_missed_on_restart=check_bool(skip_missed_on_restart, "skipMissedOnRestart"),
        skip_if_no_worker=check_bool(skip_if_no_worker, "skipIfNoWorker"),
        priority=priority,
        unique_key=unique_key,
        dedup=None if dedup is None else dict(dedup),
        job_options=None if not job_options else dict(job_options),
        source=source,
        executions_from=executions_from,
    )
    # the template is valid
    template_spec(spec, data_json=spec.data_json, max_payload_bytes=max_payload_bytes)
    return spec
