"""What ``pgqueue top`` shows of one queue, kept up to date by its events.

Pure bookkeeping, no I/O: a snapshot of the counts (:meth:`QueueTop.reset`),
then every event moves them (``pushed`` adds a waiting job, ``active`` moves
one to active, ``completed`` / ``failed`` out of it, ...).  Rates count
events in a sliding window; latencies pair each job's events on the database
clock: *wait* is ``active - pushed``, *run* is ``completed - active`` (a job
pushed before ``top`` started has no wait sample).  Events that change counts
in bulk (``drained``, ``cleaned``, ``obliterated``, ``removed``, ``gap``) ask
for a new snapshot (:attr:`QueueTop.stale`).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["QueueTop", "percentile"]

MAX_TRACKED_JOBS = 20_000
MAX_SAMPLES = 2_000
RESNAPSHOT_EVENTS = frozenset({"drained", "cleaned", "obliterated", "removed", "gap"})


def percentile(samples: deque[float] | list[float], fraction: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


@dataclass
class QueueTop:
    """One queue's row in ``pgqueue top``."""

    name: str
    window_s: float = 10.0
    paused: bool = False
    waiting: int = 0
    delayed: int = 0
    active: int = 0
    completed: int = 0
    failed: int = 0
    stale: bool = False
    _pushed_at: OrderedDict[str, float] = field(default_factory=OrderedDict)
    _active_at: OrderedDict[str, float] = field(default_factory=OrderedDict)
    _waits: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_SAMPLES))
    _runs: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_SAMPLES))
    _seen: dict[str, deque[float]] = field(default_factory=dict)

    def reset(self, counts: dict[str, int], paused: bool) -> None:
        """A fresh snapshot of the counts (``Queue.get_counts``)."""
        self.waiting = counts.get("waiting", 0) + counts.get("prioritized", 0)
        self.delayed = counts.get("delayed", 0)
        self.active = counts.get("active", 0)
        self.completed = counts.get("completed", 0)
        self.failed = counts.get("failed", 0)
        self.paused = paused
        self.stale = False

    def apply(
        self, event: str, job_id: str, at_ms: float, data: dict[str, Any], now: float
    ) -> None:
        """One event (``QueueEvent.event``, its job, its timestamp) seen at ``now`` (s)."""
        if event in RESNAPSHOT_EVENTS:
            self.stale = True
        elif event == "paused":
            self.paused = True
        elif event == "resumed":
            self.paused = False
        elif event == "pushed":
            self._count("in", now)
            if data.get("delay"):
                self.delayed += 1
            else:
                self.waiting += 1
            _remember(self._pushed_at, job_id, at_ms)
        elif event == "active":
            self._take_one_pending()
            self.active += 1
            _remember(self._active_at, job_id, at_ms)
            pushed = self._pushed_at.pop(job_id, None)
            if pushed is not None:
                self._waits.append(max(0.0, at_ms - pushed))
        elif event == "completed":
            self._count("done", now)
            self.active = max(0, self.active - 1)
            self.completed += 1
            self._run_sample(job_id, at_ms)
        elif event == "failed":
            self._count("fail", now)
            self.active = max(0, self.active - 1)
            self._run_sample(job_id, at_ms)
            if data.get("terminal", True):
                self.failed += 1
            elif data.get("delay"):
                self.delayed += 1
            else:
                self.waiting += 1
        elif event == "stalled":
            self.active = max(0, self.active - 1)
            self.waiting += 1
            self._active_at.pop(job_id, None)
        elif event in ("retried", "redriven"):
            if data.get("prev", "failed") == "failed":
                self.failed = max(0, self.failed - 1)
            self.waiting += 1
            _remember(self._pushed_at, job_id, at_ms)

    def rate(self, kind: str, now: float) -> float:
        """Events of ``kind`` (``in``, ``done``, ``fail``) per second over the window."""
        seen = self._seen.get(kind)
        if not seen:
            return 0.0
        while seen and seen[0] < now - self.window_s:
            seen.popleft()
        return len(seen) / self.window_s

    def latency(self, which: str, fraction: float) -> float | None:
        """``wait`` or ``run`` time (ms) at ``fraction`` (0.5: median) of recent jobs."""
        return percentile(self._waits if which == "wait" else self._runs, fraction)

    def row(self, now: float) -> dict[str, Any]:
        return {
            "queue": self.name,
            "paused": self.paused,
            "waiting": self.waiting,
            "delayed": self.delayed,
            "active": self.active,
            "completed": self.completed,
            "failed": self.failed,
            "inPerSec": round(self.rate("in", now), 2),
            "donePerSec": round(self.rate("done", now), 2),
            "failPerSec": round(self.rate("fail", now), 2),
            "waitP50Ms": self.latency("wait", 0.5),
            "waitP95Ms": self.latency("wait", 0.95),
            "runP50Ms": self.latency("run", 0.5),
            "runP95Ms": self.latency("run", 0.95),
        }

    def _count(self, kind: str, now: float) -> None:
        self._seen.setdefault(kind, deque(maxlen=100_000)).append(now)

    def _take_one_pending(self) -> None:
        if self.waiting > 0:
            self.waiting -= 1
        elif self.delayed > 0:
            self.delayed -= 1

    def _run_sample(self, job_id: str, at_ms: float) -> None:
        started = self._active_at.pop(job_id, None)
        if started is not None:
            self._runs.append(max(0.0, at_ms - started))


def _remember(book: OrderedDict[str, float], job_id: str, at_ms: float) -> None:
    book[job_id] = at_ms
    book.move_to_end(job_id)
    while len(book) > MAX_TRACKED_JOBS:
        book.popitem(last=False)
