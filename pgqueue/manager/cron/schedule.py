"""When a scheduler's ticks fall: cron patterns in a timezone, or fixed intervals.

Pure policy, no I/O: every instant comes in from the database clock.

* A **pattern** is a cron expression of 5 fields, or 6 with a leading seconds
  field (bunqueue's six-field form), or a shortcut (``@hourly``, ``@daily``,
  ...), read by ``cronsim`` in the scheduler's IANA ``timezone`` (UTC when
  none); its ticks are the instants it matches.
* **Every** ``every_ms``: the ticks are ``next_run + k * every_ms``, a grid
  anchored at the scheduler's next run (set when it was created or updated).

:func:`plan_ticks` decides what one pass of the ticker fires for a due
scheduler: the latest due tick only (``skip_missed``: missed ticks collapse
into one), or every missed tick oldest first (the newest ``catch_up_max`` of
them), never more than ``remaining`` executions, never past ``end_at``; and
the scheduler's next run after that (``None``: spent).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from pgqueue.errors import ValidationError

__all__ = [
    "SHORTCUTS",
    "TickPlan",
    "Timing",
    "check_pattern",
    "check_timezone",
    "first_run",
    "next_tick",
    "plan_ticks",
]

SHORTCUTS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MAX_PATTERN_LENGTH = 256
_MICRO = timedelta(microseconds=1)


def _expand(pattern: str) -> str:
    return SHORTCUTS.get(pattern.strip().lower(), pattern.strip())


def check_timezone(value: Any, field: str = "timezone") -> tzinfo:
    """The zone of an IANA name (``Europe/Rome``), UTC for None; else ValidationError."""
    if value is None:
        return UTC
    if not isinstance(value, str) or not value or len(value) > 64:
        raise ValidationError(f"{field} must be an IANA time zone name", field=field)
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValidationError(f"Invalid timezone: {value}", field=field) from exc


def check_pattern(value: Any, zone: tzinfo, field: str = "schedule") -> str:
    """A cron pattern that has a next occurrence; else ValidationError (bunqueue's words)."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_PATTERN_LENGTH:
        raise ValidationError(
            f"{field} must be a cron pattern of at most {MAX_PATTERN_LENGTH} characters",
            field=field,
        )
    expr = _expand(value)
    if len(expr.split()) not in (5, 6):
        raise ValidationError(
            "Invalid cron expression: Cron expression must have 5 fields, "
            "or 6 fields with leading seconds",
            field=field,
        )
    try:
        next(CronSim(expr, datetime.now(zone)))
    except (CronSimError, StopIteration, ValueError) as exc:
        detail = str(exc) or "no future occurrences"
        raise ValidationError(f"Invalid cron expression: {detail}", field=field) from exc
    return value.strip()


@dataclass(frozen=True, slots=True)
class Timing:
    """When a scheduler fires (its pattern or interval, zone and date bounds)."""

    pattern: str | None = None
    every_ms: int | None = None
    timezone: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None

    @property
    def zone(self) -> tzinfo:
        return UTC if self.timezone is None else ZoneInfo(self.timezone)

    @property
    def every(self) -> timedelta:
        assert self.every_ms is not None
        return timedelta(milliseconds=self.every_ms)


def _pattern_after(timing: Timing, after: datetime) -> datetime | None:
    assert timing.pattern is not None
    local = after.astimezone(timing.zone)
    for tick in CronSim(_expand(timing.pattern), local):
        if tick > after:
            return tick.astimezone(UTC)
    return None  # pragma: no cover - cronsim iterates without end


def _within_end(timing: Timing, tick: datetime | None) -> datetime | None:
    if tick is None or (timing.end_at is not None and tick > timing.end_at):
        return None
    return tick


def next_tick(timing: Timing, after: datetime, anchor: datetime | None = None) -> datetime | None:
    """The first tick strictly after ``after`` (and not before ``start_at``), or None
    past ``end_at``.  ``anchor`` is a tick of an interval's grid."""
    floor = after
    if timing.start_at is not None and timing.start_at - _MICRO > floor:
        floor = timing.start_at - _MICRO
    if timing.pattern is not None:
        return _within_end(timing, _pattern_after(timing, floor))
    every = timing.every
    if anchor is None or anchor > floor:
        return _within_end(timing, anchor if anchor is not None else floor + every)
    steps = (floor - anchor) // every + 1
    return _within_end(timing, anchor + steps * every)


def first_run(timing: Timing, now: datetime, *, immediately: bool) -> datetime | None:
    """A new scheduler's first tick: now when ``immediately`` (and started), else the
    first tick after now (an interval: ``start_at``, or now + every)."""
    if timing.start_at is not None and timing.start_at > now:
        if timing.pattern is None:
            return _within_end(timing, timing.start_at)
        return next_tick(timing, now)
    if immediately:
        return _within_end(timing, now)
    return next_tick(timing, now)


@dataclass(frozen=True, slots=True)
class TickPlan:
    """What one pass fires for one scheduler, and its next run after that.

    ``dropped``: older missed ticks were left out (``skip_missed``, or beyond
    the newest ``catch_up_max``)."""

    fire: list[datetime]
    dropped: bool
    next_run: datetime | None


def _due(
    timing: Timing, next_run: datetime, now: datetime, newest: int
) -> tuple[list[datetime], bool]:
    """The newest ``newest`` ticks in ``[next_run, now]``, oldest first, and whether
    older ones were left out."""
    if timing.pattern is None:
        count = (now - next_run) // timing.every + 1
        keep = min(count, newest)
        return [next_run + k * timing.every for k in range(count - keep, count)], keep < count
    later: list[datetime] = []
    local = (now + _MICRO).astimezone(timing.zone)
    for tick in CronSim(_expand(timing.pattern), local, reverse=True):
        instant = tick.astimezone(UTC)
        if instant <= next_run or len(later) >= newest:
            break
        if instant <= now:
            later.append(instant)
    later.reverse()
    if len(later) < newest:
        return [next_run, *later], False
    return later, True


def plan_ticks(
    timing: Timing,
    next_run: datetime,
    now: datetime,
    *,
    skip_missed: bool,
    remaining: int | None,
    catch_up_max: int,
) -> TickPlan:
    """The ticks to fire now for a scheduler due at ``next_run`` (``<= now``)."""
    ticks, dropped = _due(timing, next_run, now, 1 if skip_missed else catch_up_max)
    ticks = [t for t in ticks if timing.end_at is None or t <= timing.end_at]
    if remaining is not None:
        ticks = ticks[: max(0, remaining)]
    spent = remaining is not None and len(ticks) >= remaining
    anchor = next_run if timing.pattern is None else None
    following = None if spent else next_tick(timing, now, anchor)
    return TickPlan(ticks, dropped, following)
