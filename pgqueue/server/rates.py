"""Events per second over a sliding window, for ``Stats``' pushPerSec and pullPerSec.

A ring of one-second buckets: marking is O(1), reading sums the last ``window`` whole
seconds (the current, still-filling second is left out so the rate does not dip at the
start of every second).
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["RateMeter"]


class RateMeter:
    def __init__(self, window_s: int = 10, clock: Callable[[], float] = time.monotonic) -> None:
        if window_s < 1:
            raise ValueError("window_s must be at least 1")
        self.window_s = window_s
        self._clock = clock
        self._seconds = [-1] * (window_s + 1)
        self._counts = [0] * (window_s + 1)

    def mark(self, n: int = 1) -> None:
        second = int(self._clock())
        slot = second % len(self._seconds)
        if self._seconds[slot] != second:
            self._seconds[slot] = second
            self._counts[slot] = 0
        self._counts[slot] += n

    def rate(self) -> float:
        """Mean events per second over the last ``window_s`` whole seconds."""
        now = int(self._clock())
        oldest = now - self.window_s
        total = sum(
            count
            for second, count in zip(self._seconds, self._counts, strict=True)
            if oldest <= second < now
        )
        return total / self.window_s
