"""Job schedulers in the SDK (BullMQ's ``upsertJobScheduler`` and friends).

A scheduler pushes a job to its queue at every tick of a cron ``pattern`` (in
``tz``) or every ``every`` ms; each tick fires exactly once whatever brokers
run (docs/cron.md).  :func:`scheduler_input` validates a request with the
engine's own rules before anything is sent (both transports raise the same
:class:`~pgqueue.errors.ValidationError`); :class:`JobScheduler` is what the
``Queue`` methods return.

    s = await queue.upsert_job_scheduler(
        "nightly", {"pattern": "0 3 * * *", "tz": "Europe/Rome"},
        {"name": "report", "data": {"kind": "daily"}, "opts": {"attempts": 5}},
    )
    s.next_run, s.executions
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, TypedDict

from pgqueue.errors import ValidationError
from pgqueue.manager.cron.spec import build_scheduler_spec

__all__ = ["JobScheduler", "SchedulerInput", "SchedulerTemplate", "scheduler_input"]

_REPEAT_KEYS = frozenset(
    {"pattern", "every", "tz", "limit", "startDate", "endDate", "immediately", "count"}
)
_TEMPLATE_KEYS = frozenset({"name", "data", "opts"})
_OPTS_MOVED = ("priority", "unique_key", "dedup")


class SchedulerTemplate(TypedDict, total=False):
    """The job every tick pushes: its ``name``, ``data`` and ``opts`` (the SDK's
    job options: ``attempts``, ``backoff``, ``timeout``, ``priority``, ...)."""

    name: str
    data: Any
    opts: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SchedulerInput:
    """A validated scheduler request, in the engine's names (both transports send it)."""

    pattern: str | None = None
    every_ms: int | None = None
    timezone: str | None = None
    job_name: str = "default"
    data: Any = None
    immediately: bool = False
    limit: int | None = None
    start_date: float | None = None
    end_date: float | None = None
    prevent_overlap: bool = True
    skip_missed_on_restart: bool = True
    skip_if_no_worker: bool = False
    priority: int = 0
    unique_key: str | None = None
    dedup: Mapping[str, Any] | None = None
    job_options: Mapping[str, Any] = field(default_factory=dict)

    def engine_fields(self) -> dict[str, Any]:
        """The keyword arguments of the engine's ``upsert_scheduler``: the fields by
        name (no job options: None)."""
        engine = {f.name: getattr(self, f.name) for f in fields(self)}
        engine["job_options"] = dict(self.job_options) or None
        return engine


def _ms(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp() * 1000
    return value  # type: ignore[no-any-return]


def scheduler_input(
    name: str,
    queue: str,
    repeat: Mapping[str, Any],
    template: Mapping[str, Any] | None,
    *,
    prevent_overlap: bool,
    skip_missed_on_restart: bool,
    skip_if_no_worker: bool,
    max_payload_bytes: int,
) -> SchedulerInput:
    """Check ``repeat`` (BullMQ's repeat options) and ``template``; the request."""
    if not isinstance(repeat, Mapping):
        raise ValidationError("repeat must be a map {pattern | every, ...}", field="repeat")
    unknown = sorted(set(repeat) - _REPEAT_KEYS)
    if unknown:
        raise ValidationError(f"repeat has unknown keys: {', '.join(unknown)}", field="repeat")
    template = template or {}
    if not isinstance(template, Mapping) or set(template) - _TEMPLATE_KEYS:
        raise ValidationError("template must be a map {name?, data?, opts?}", field="template")
    opts = dict(template.get("opts") or {})
    moved = {key: opts.pop(key) for key in _OPTS_MOVED if key in opts}
    request = SchedulerInput(
        pattern=repeat.get("pattern"),
        every_ms=repeat.get("every"),
        timezone=repeat.get("tz"),
        job_name=template.get("name", name),
        data=template.get("data"),
        immediately=repeat.get("immediately", False),
        limit=repeat.get("limit"),
        start_date=_ms(repeat.get("startDate")),
        end_date=_ms(repeat.get("endDate")),
        prevent_overlap=prevent_overlap,
        skip_missed_on_restart=skip_missed_on_restart,
        skip_if_no_worker=skip_if_no_worker,
        priority=moved.get("priority", 0),
        unique_key=moved.get("unique_key"),
        dedup=moved.get("dedup"),
        job_options=opts,
    )
    build_scheduler_spec(
        name, queue, max_payload_bytes=max_payload_bytes, **request.engine_fields()
    )
    return request


@dataclass(frozen=True, slots=True)
class JobScheduler:
    """A scheduler as a broker reports it (times in ms since the epoch)."""

    id: str
    queue: str
    name: str
    pattern: str | None
    every: int | None
    timezone: str | None
    next_run: float | None
    """The next tick (None: spent, its limit reached or its end passed)."""
    executions: int
    limit: int | None
    data: Any = None
    priority: int = 0
    prevent_overlap: bool = True
    skip_missed_on_restart: bool = True
    skip_if_no_worker: bool = False
    start_date: float | None = None
    end_date: float | None = None
    last_run: float | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, cron: Mapping[str, Any]) -> JobScheduler:
        return cls(
            id=str(cron["name"]),
            queue=str(cron["queue"]),
            name=str(cron.get("jobName") or "default"),
            pattern=cron.get("schedule"),
            every=None if cron.get("repeatEvery") is None else int(cron["repeatEvery"]),
            timezone=cron.get("timezone"),
            next_run=cron.get("nextRun"),
            executions=int(cron.get("executions") or 0),
            limit=cron.get("maxLimit"),
            data=cron.get("data"),
            priority=int(cron.get("priority") or 0),
            prevent_overlap=bool(cron.get("preventOverlap", True)),
            skip_missed_on_restart=bool(cron.get("skipMissedOnRestart", True)),
            skip_if_no_worker=bool(cron.get("skipIfNoWorker", False)),
            start_date=cron.get("startDate"),
            end_date=cron.get("endDate"),
            last_run=cron.get("lastRun"),
            raw=dict(cron),
        )
