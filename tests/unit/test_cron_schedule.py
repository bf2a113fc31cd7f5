"""When ticks fall (pure policy): patterns in a zone, intervals, missed ticks, limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from pgqueue.errors import ValidationError
from pgqueue.manager.cron.schedule import (
    Timing,
    check_pattern,
    check_timezone,
    first_run,
    next_tick,
    plan_ticks,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
S = timedelta(seconds=1)


def test_a_pattern_is_read_in_its_time_zone() -> None:
    rome = Timing(pattern="0 9 * * *", timezone="Europe/Rome")
    tick = next_tick(rome, T0)
    assert tick == datetime(2026, 1, 1, 8, tzinfo=UTC)  # 09:00 CET
    summer = next_tick(rome, datetime(2026, 7, 1, tzinfo=UTC))
    assert summer == datetime(2026, 7, 1, 7, tzinfo=UTC)  # 09:00 CEST
    assert summer is not None and summer.astimezone(ZoneInfo("Europe/Rome")).hour == 9


def test_six_fields_have_a_leading_seconds_field_and_shortcuts_expand() -> None:
    assert next_tick(Timing(pattern="*/15 * * * * *"), T0) == T0 + 15 * S
    assert next_tick(Timing(pattern="@hourly"), T0) == T0 + timedelta(hours=1)


def test_next_tick_is_strictly_after_and_bounded_by_start_and_end() -> None:
    every = Timing(every_ms=1_000)
    assert next_tick(every, T0, anchor=T0) == T0 + S
    assert next_tick(every, T0 + 2.5 * S, anchor=T0) == T0 + 3 * S
    starting = Timing(every_ms=1_000, start_at=T0 + 10 * S)
    assert first_run(starting, T0, immediately=True) == T0 + 10 * S
    ended = Timing(pattern="* * * * *", end_at=T0 + 30 * S)
    assert next_tick(ended, T0) is None
    assert first_run(Timing(every_ms=500), T0, immediately=True) == T0


def test_missed_ticks_collapse_or_catch_up() -> None:
    every = Timing(every_ms=1_000)
    skip = plan_ticks(every, T0, T0 + 5.5 * S, skip_missed=True, remaining=None, catch_up_max=9)
    assert (skip.fire, skip.dropped, skip.next_run) == ([T0 + 5 * S], True, T0 + 6 * S)
    catch = plan_ticks(every, T0, T0 + 5.5 * S, skip_missed=False, remaining=None, catch_up_max=9)
    assert catch.fire == [T0 + k * S for k in range(6)] and not catch.dropped
    bounded = plan_ticks(every, T0, T0 + 5.5 * S, skip_missed=False, remaining=None, catch_up_max=2)
    assert bounded.fire == [T0 + 4 * S, T0 + 5 * S] and bounded.dropped
    pattern = Timing(pattern="*/2 * * * * *")
    caught = plan_ticks(pattern, T0, T0 + 7 * S, skip_missed=False, remaining=None, catch_up_max=9)
    assert caught.fire == [T0, T0 + 2 * S, T0 + 4 * S, T0 + 6 * S]
    assert caught.next_run == T0 + 8 * S


def test_a_limit_spends_the_scheduler() -> None:
    plan = plan_ticks(
        Timing(every_ms=1_000), T0, T0 + 9 * S, skip_missed=False, remaining=2, catch_up_max=20
    )
    assert plan.fire == [T0, T0 + S] and plan.next_run is None


@pytest.mark.parametrize("pattern", ["61 * * * *", "* * *", "", "* * * * * * *", "0 0 30 2 *"])
def test_bad_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(ValidationError, match="cron"):
        check_pattern(pattern, UTC)


def test_bad_time_zones_are_refused() -> None:
    for zone in ("Mars/Olympus", "../etc/passwd", "", 5):
        with pytest.raises(ValidationError):
            check_timezone(zone)
    assert check_timezone(None) is UTC
