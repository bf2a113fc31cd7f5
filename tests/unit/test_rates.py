from __future__ import annotations

import pytest

from pgqueue.server.rates import RateMeter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rate_is_the_mean_over_the_last_whole_seconds() -> None:
    clock = Clock()
    meter = RateMeter(window_s=4, clock=clock)
    for _ in range(4):
        meter.mark(10)
        clock.now += 1
    assert meter.rate() == 10.0


def test_the_current_second_is_not_counted_until_it_is_over() -> None:
    clock = Clock()
    meter = RateMeter(window_s=2, clock=clock)
    meter.mark(50)
    assert meter.rate() == 0.0
    clock.now += 1
    assert meter.rate() == 25.0


def test_old_seconds_fall_out_of_the_window_and_buckets_are_reused() -> None:
    clock = Clock()
    meter = RateMeter(window_s=3, clock=clock)
    meter.mark(30)
    clock.now += 1
    assert meter.rate() == 10.0
    clock.now += 3
    assert meter.rate() == 0.0, "the marked second is now older than the window"
    meter.mark(6)  # lands in a reused bucket, which must start from zero
    clock.now += 1
    assert meter.rate() == 2.0


def test_a_window_shorter_than_a_second_is_refused() -> None:
    with pytest.raises(ValueError, match="window_s"):
        RateMeter(window_s=0)
